"""Run test programs in a guest with no userspace of its own: QEMU boots the kernel with an initramfs.

For an architecture virtme-ng cannot boot and Debian has no bash or busybox for (32-bit powerpc,
riscv64; and s390x, which needs no more),
the guest's whole userspace is an initramfs (a newc cpio) holding the jobs' directories, as the
host built them (static programs: arches.Arch.test_vars), at their own paths, and our own
static /init (guest_init.c, cross-compiled per boot: it is ours, not the series'), which runs
each job as guest.script's bash would (what a job leaves running is killed, counted and named)
and powers off. The results come over the serial console,
as records /init writes into the kernel's log (/dev/kmsg, base64, one line per 57 bytes of
output, with the byte count at the end): the console prints a record whole, so the kernel's own
messages never land inside one, and `printk.devkmsg=on` lifts the log's rate limit for them.
They are taken out of the console the report quotes. QEMU runs in the sandbox, with no network
device, under a timeout of the jobs' own plus the boot's; `-no-reboot` and `panic=-1` end it at
a panic.
"""
from __future__ import annotations

import base64
import binascii
import os
import re
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path

from reviewer import private
from reviewer.kernel import qemu
from reviewer.kernel.arches import Arch
from reviewer.kernel.jobs import Job
from reviewer.run.sandbox import YEAR, Sandbox, read_untrusted

INIT_SOURCE = "guest_init.c"
MEMORY_MB = 512
MAX_ARCHIVE = 256 * 1024**2  # bytes of test directories an initramfs may hold (the guest unpacks it into its memory)
COMPILE_TIMEOUT = 120.0
# A record of /init's, after whatever the console puts before it (a timestamp with CONFIG_PRINTK_TIME).
_RESULT = re.compile(r"@reviewer (?P<n>\d+) (?:(?P<what>out|left) (?P<data>[A-Za-z0-9+/=]*)"
                     r"|rc (?P<rc>\d+) (?P<start>\d+) (?P<end>\d+) (?P<len>\d+)(?: (?P<left>\d+))?)\s*$")
_OURS = re.compile(r"@reviewer (\d+ (out|left|rc) |done\s*$)")
Result = tuple[int, float, str, tuple[str, ...], int]  # a job's exit status, seconds, output, some processes it left, how many


class TooLarge(Exception):
    pass


def command(arch: Arch, image: Path, initrd: Path) -> list[str]:
    """QEMU booting IMAGE with INITRD: the console (and the results in it) on stdout, no network."""
    return [arch.qemu, "-M", arch.machine, *arch.qemu_args, "-m", str(MEMORY_MB), "-display", "none", "-monitor", "none",
            "-nic", "none", "-no-reboot", "-serial", "stdio", "-kernel", str(image), "-initrd", str(initrd),
            "-append", f"console={arch.console} panic=-1 printk.devkmsg=on"]


def jobs_file(jobs: Sequence[Job], kill_after: int) -> tuple[str, list[int]]:
    """/reviewer/jobs (guest_init.c's format) and the indexes of the jobs it could not hold (a tab or a newline
    in a path or an argument)."""
    lines, bad = [], []
    for n, job in enumerate(jobs):
        fields = [f"{job.timeout:.0f}", str(kill_after), job.env, str(YEAR), str(job.cwd), *job.argv]
        if any(not f or "\t" in f or "\n" in f for f in fields):
            bad.append(n)
            fields = ["1", "1", "plain", "0", "/", "/reviewer/none"]  # keeps the numbering: fails at once
        lines.append("\t".join(fields))
    return "".join(f"{ln}\n" for ln in lines), bad


def compile_init(arch: Arch, out: Path) -> str:
    """guest_init.c built static for ARCH into OUT; what failed, or ""."""
    source = resources.files("reviewer.kernel").joinpath(INIT_SOURCE).read_text()
    cc = f"{arch.toolchain.cross}gcc"
    try:
        done = subprocess.run([cc, "-static", "-O2", "-o", str(out), "-x", "c", "-"], input=source, capture_output=True,
                              text=True, timeout=COMPILE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{cc} cannot build the guest's init: {exc}"
    if done.returncode != 0:
        return f"{cc} cannot build the guest's init: {(done.stderr.strip().splitlines() or ['exit ' + str(done.returncode)])[-1]}"
    return ""


class Writer:
    """A newc cpio archive (what the kernel unpacks as an initramfs), written as it goes."""

    def __init__(self, out: Path) -> None:
        self._f = out.open("wb")
        self._ino = 1
        self._dirs: set[str] = set()
        self.size = 0

    def _entry(self, name: str, mode: int, data: bytes) -> None:
        if self.size + len(data) > MAX_ARCHIVE:
            raise TooLarge(f"the test directories are larger than {MAX_ARCHIVE >> 20} MB")
        encoded = name.encode() + b"\0"
        fields = (self._ino, mode, 0, 0, 2 if stat.S_ISDIR(mode) else 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
        header = b"070701" + b"".join(b"%08X" % v for v in fields)
        self._f.write(header + encoded + b"\0" * (-(len(header) + len(encoded)) % 4))
        self._f.write(data + b"\0" * (-len(data) % 4))
        self._ino += 1
        self.size += len(data)

    def directory(self, name: str, mode: int = 0o755) -> None:
        """NAME and the directories above it, each once."""
        parts = name.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d and d not in self._dirs:
                self._dirs.add(d)
                self._entry(d, stat.S_IFDIR | (mode if i == len(parts) else 0o755), b"")

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self.directory(os.path.dirname(name.strip("/")))
        self._entry(name.strip("/"), stat.S_IFREG | (mode & 0o7777), data)

    def symlink(self, name: str, target: str) -> None:
        self.directory(os.path.dirname(name.strip("/")))
        self._entry(name.strip("/"), stat.S_IFLNK | 0o777, target.encode())

    def close(self) -> None:
        self._entry("TRAILER!!!", 0, b"")
        self._f.close()


def add_tree(w: Writer, top: Path) -> None:
    """TOP (a test directory the series' code was built in) at its own path: directories, regular files and
    symbolic links as they are, never followed; anything else (a FIFO, a socket, a device) is left out."""
    for path, st in _walk(top):
        if stat.S_ISDIR(st.st_mode):
            w.directory(str(path), stat.S_IMODE(st.st_mode) | 0o700)
        elif stat.S_ISLNK(st.st_mode):
            w.symlink(str(path), os.readlink(path))
        elif stat.S_ISREG(st.st_mode):
            w.file(str(path), read_untrusted(path, MAX_ARCHIVE), stat.S_IMODE(st.st_mode))


def _walk(top: Path) -> Iterator[tuple[Path, os.stat_result]]:
    yield top, os.lstat(top)
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        for name in sorted(dirnames) + sorted(filenames):
            path = Path(dirpath) / name
            yield path, os.lstat(path)


def read_results(text: str, count: int) -> list[Result | None]:
    """Per job: (exit status, seconds, output, processes it left running, how many) as the console carried them,
    or None when it never ended; output that did not all arrive says so."""
    chunks: dict[int, list[bytes]] = {}
    left: dict[int, list[str]] = {}
    done: dict[int, tuple[int, float, int]] = {}
    sizes: dict[int, int] = {}
    for line in text.splitlines():
        m = _RESULT.search(line)
        if m is None or int(m["n"]) >= count:
            continue
        n = int(m["n"])
        if m["rc"] is not None:
            done[n] = (int(m["rc"]), (int(m["end"]) - int(m["start"])) / 1e9, int(m["left"] or 0))
            sizes[n] = int(m["len"])
        elif m["what"] == "left":
            left.setdefault(n, []).append(_decoded(m["data"]).decode(errors="replace"))
        else:
            chunks.setdefault(n, []).append(_decoded(m["data"]))
    out: list[Result | None] = []
    for n in range(count):
        data = b"".join(chunks.get(n, []))
        if n in done and len(data) != sizes[n]:
            data += f"\n[reviewer: the guest sent {len(data)} of its {sizes[n]} bytes of output]\n".encode()
        names = tuple(left.get(n, ()))
        out.append((done[n][0], done[n][1], data.decode(errors="replace"), names, max(done[n][2], len(names))) if n in done else None)
    return out


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return b"[reviewer: a garbled line of output]\n"


def console_of(text: str) -> str:
    """The console less /init's result records (what the report quotes and the log keeps)."""
    return "".join(ln for ln in text.splitlines(keepends=True) if not _OURS.search(ln))


def run(image: Path, jobs: Sequence[Job], sandbox: Sandbox, arch: Arch, limit: float, kill_after: int,
        log: Path | None = None) -> tuple[list[Result | None], str, float, bool, int | None]:
    """Boot IMAGE once with an initramfs of JOBS (jobs.Job); per job its Result or None, the console, the seconds,
    whether it was killed at LIMIT, and QEMU's exit status (None: never started)."""
    sandbox.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="guest-", dir=sandbox.scratch) as tmp:
        work = Path(tmp)
        init, initrd = work / "init", work / "initrd.cpio"
        if failed := compile_init(arch, init):
            return [None] * len(jobs), f"reviewer: the {arch.name} guest was not started: {failed}\n", 0.0, False, None
        text, bad = jobs_file(jobs, kill_after)
        w = Writer(initrd)
        try:
            w.file("init", init.read_bytes(), 0o755)
            w.file("reviewer/jobs", text.encode())
            for d in dict.fromkeys(j.cwd for j in jobs):
                add_tree(w, d)
        except (TooLarge, OSError) as exc:
            return [None] * len(jobs), f"reviewer: the {arch.name} guest was not started: {exc}\n", 0.0, False, None
        finally:
            w.close()
        start = time.monotonic()
        argv = ["timeout", "-s", "KILL", f"{limit + qemu.GUARD_SECONDS:.0f}", *command(arch, image, initrd)]
        done = sandbox.run(argv, cwd=work, timeout=limit, tree=work, readable=(image.parent,))
        seconds = time.monotonic() - start
    got = read_results(done.output, len(jobs))
    console = console_of(done.output) + "".join(f"reviewer: job {n} was not run: a tab or a newline in its directory or arguments\n"
                                                for n in bad)
    if log is not None:
        private.make_dir(log.parent)
        private.write_private(log, console.encode())
    return got, console, seconds, done.timed_out, done.returncode
