"""make for a kernel tree in the sandbox: the command, the sandboxed runner, tinyconfig + a fragment.

Shared by the stages that compile a kernel (boot: whole images; build: the touched objects per
patch). The series' Makefiles and Kconfig run code, so make runs in the sandbox: the source
read-only, the build directory and ccache's store writable.
"""
from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from reviewer.errors import CommandError
from reviewer.kernel.arches import X86_64
from reviewer.run.sandbox import Sandbox, read_untrusted

# Fixed so that two builds of the same source are the same (and ccache hits across runs); C: plain ASCII
# messages (kbuild unexports LC_ALL, so LANG and the categories gcc reads are set instead).
# The commands a kernel build needs, and the Debian packages that bring them.
TOOLS = {"make": "make", "gcc": "gcc", "flex": "flex", "bison": "bison", "bc": "bc"}
_REPRO = {"LANG": "C", "LC_CTYPE": "C", "LC_MESSAGES": "C", "KBUILD_BUILD_TIMESTAMP": "2025-01-01", "KBUILD_BUILD_USER": "reviewer",
          "KBUILD_BUILD_HOST": "reviewer"}


def make_cmd(src: Path, out: Path, *targets: str, variables: tuple[str, ...] | None = None) -> list[str]:
    """make for the tree SRC into OUT; VARIABLES: ARCH= and the compiler (the x86_64 host's gcc by default)."""
    if variables is None:
        variables = (f"ARCH={X86_64.arch}", *(["CC=ccache gcc"] if shutil.which("ccache") else []))
    return ["make", "-C", str(src), f"O={out}", *variables, *targets]


@dataclass(frozen=True)
class Box:
    """make in the sandbox (the series' Makefiles and Kconfig run code): the source read-only, the
    build directory and ccache's writable; HIDE are git directories to keep out of its sight."""

    sandbox: Sandbox
    src: Path
    out: Path
    hide: tuple[Path, ...] = ()
    variables: tuple[str, ...] | None = None  # make_cmd's

    def make(self, timeout: float, *targets: str) -> str:
        """make's output; CommandError (with it) on a failure or at TIMEOUT."""
        argv = make_cmd(self.src, self.out, *targets, variables=self.variables)
        done = self.sandbox.run(argv, cwd=self.out, timeout=timeout, tree=self.out, writable=(ccache_dir(self.out),),
                                readable=(self.src,), hide=self.hide)
        if done.timed_out or done.returncode != 0:
            raise CommandError(tuple(argv), done.returncode, done.output, "", timeout if done.timed_out else None)
        return done.output


def configure(box: Box, lines: tuple[str, ...], timeout: float) -> tuple[str, ...]:
    """tinyconfig, the fragment on top, olddefconfig; the fragment lines that did not stick."""
    box.make(timeout, "tinyconfig")
    append(box.out / ".config", "\n".join(lines) + "\n")
    box.make(timeout, "olddefconfig")
    final = set(untrusted(box.out / ".config").splitlines())
    return tuple(f"{ln} was not kept (unmet dependency?)" for ln in lines if ln not in final)


def ccache_dir(out: Path) -> Path:
    return out.parent / "ccache"


def append(path: Path, text: str) -> None:
    """Append to a file the sandboxed make wrote: never through a symlink, never blocking on a FIFO."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise CommandError(("append", str(path)), None, "", f"{path}: {exc.strerror}", None) from exc
    with os.fdopen(fd, "w") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CommandError(("append", str(path)), None, "", f"{path}: not a regular file", None)
        f.write(text)


def untrusted(path: Path) -> str:
    try:
        return read_untrusted(path, 16 << 20).decode(errors="replace")
    except OSError:
        return ""


def sandbox_env(out: Path) -> dict[str, str]:
    return {**_REPRO, "CCACHE_DIR": str(ccache_dir(out)), "CCACHE_BASEDIR": str(out.parent)}
