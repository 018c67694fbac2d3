"""Run test programs inside a booted kernel: virtme-ng (`vng --run IMAGE --exec SCRIPT`) in the sandbox.

One boot runs a batch of jobs (each a test program, its directory, its environment and its
timeout) from a bash script that writes each job's output, exit status and the processes it left
running (then killed) into a results directory shared read-write with the guest. vng shows the guest the root file system it sees,
read-only; it runs here inside the sandbox (run/sandbox.py), so the guest sees what a sandboxed
test would: no home directory, no user repository, no /tmp but the trees given. The guest has
no network device (vng adds one only with --network). The VM is killed at the batch's timeout
and on Ctrl-C, and `timeout -s KILL` ends it if we are killed first.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import private
from reviewer.kernel import guestroot, initramfs, qemu
from reviewer.kernel.arches import X86_64, Arch
from reviewer.kernel.jobs import Job
from reviewer.run.sandbox import ENVS as SANDBOX_ENVS
from reviewer.run.sandbox import Sandbox, read_untrusted

VNG = "vng"
NATIVE = X86_64
BOOT_ALLOWANCE = {"kvm": 60.0, "tcg": 180.0}  # seconds to reach the first job, on top of the jobs' own timeouts
KILL_AFTER = 5  # seconds between `timeout`'s TERM and its KILL, per job
MEMORY = "1G"
COPY_TIMEOUT = 120.0  # seconds to copy a test directory into another architecture's guest root
_STATUS = re.compile(r"^(?P<rc>\d+) (?P<start>\d+) (?P<end>\d+)$")
MARK = "REVIEWER_JOB"  # in the environment of every process a job starts: what tells its leftovers (script())
SHOWN_LEFT = 8  # of the processes a job left, those named in the report


@dataclass(frozen=True)
class Ran:
    job: Job
    output: str
    returncode: int
    seconds: float
    timed_out: bool
    left: tuple[str, ...] = ()  # some of the processes it left running, "pid <pid>: <command line>" (the guest killed them)
    left_count: int = 0  # how many it left


@dataclass(frozen=True)
class GuestRun:
    ran: tuple[Ran | None, ...]  # per job, in order; None: the guest never finished it (it died, hung, was killed)
    console: str  # vng's output: the kernel's console and the script's
    seconds: float
    timed_out: bool
    accel: str  # kvm | tcg
    returncode: int | None
    runner: str = "vng"  # what booted it (what a fault names): vng, or QEMU itself for an initramfs guest


# The processes a job left running: every process it starts inherits MARK (a variable of its environment), so the
# script finds them after the job in /proc, lists them ("pid <pid>: <command line>", 120 bytes of it, or "[<name>]" for
# a process caught in execve(), whose command line reads empty then) and kills them, a few rounds (what they forked
# meanwhile). Bash builtins only: under TCG a fork per process would take seconds.
_LEFT = r"""reviewer_left() {
    local round p e cmd found seen=" "
    for round in 1 2 3 4 5 6 7 8 9 10; do
        found=()
        for p in /proc/[0-9]*; do
            p=${p#/proc/}
            [ "$p" = "$$" ] && continue
            while IFS= read -r -d '' e; do
                [ "$e" = "$1" ] && { found+=("$p"); break; }
            done 2>/dev/null <"/proc/$p/environ"
        done
        [ ${#found[@]} -eq 0 ] && return
        for p in "${found[@]}"; do
            case "$seen" in *" $p "*) continue;; esac
            seen+="$p "
            cmd=""
            while IFS= read -r -d '' e; do cmd+="${cmd:+ }$e"; done 2>/dev/null <"/proc/$p/cmdline"
            # No command line: caught inside execve() (or exiting). Its name, bracketed as ps shows such a process.
            [ -n "$cmd" ] || { IFS= read -r cmd <"/proc/$p/comm"; cmd="[$cmd]"; } 2>/dev/null
            printf 'pid %s: %s\n' "$p" "${cmd:0:120}"
        done
        kill -9 "${found[@]}" 2>/dev/null
        sleep 0.05
    done
}"""


def script(jobs: Sequence[Job], results: Path) -> str:
    """The guest's bash script: each job from its directory, in its namespaces, under `timeout`; its output
    to RESULTS/<n>.out, the processes it left running (killed) to RESULTS/<n>.left, then "<exit> <start ns> <end ns>"
    to RESULTS/<n>.rc; the guest then powers off."""
    lines = ["#!/bin/bash", "# Written by reviewer: the tests of one boot.", _LEFT, "echo reviewer-guest: start"]
    for n, job in enumerate(jobs):
        ns = ["unshare", "-r", *SANDBOX_ENVS[job.env], "--"] if job.env != "plain" else []
        argv = ["timeout", "-k", str(KILL_AFTER), f"{job.timeout:g}", *ns, *job.argv]
        out, rc, left = (shlex.quote(str(results / f"{n}.{x}")) for x in ("out", "rc", "left"))
        mark = shlex.quote(f"{MARK}={n}-{os.urandom(6).hex()}")
        lines += [
            f"echo reviewer-guest: job {n}",
            f"s=$(date +%s%N); (export {mark}; cd {shlex.quote(str(job.cwd))} && exec {shlex.join(argv)}) >{out} 2>&1 </dev/null; r=$?",
            f"e=$(date +%s%N); reviewer_left {mark} >{left}",
            f'echo "$r $s $e" >{rc}',
        ]
    lines.append("echo reviewer-guest: done")
    return "\n".join(lines) + "\n"


def command(image: Path, script_path: Path, shared: Sequence[Path], accel: str, arch: Arch = NATIVE,
            root: Path | None = None) -> list[str]:
    """vng booting IMAGE to run SCRIPT_PATH (its path in the guest), SHARED read-write (the trees and the
    results; inside ROOT when the guest has its own), under ACCEL; another ARCH boots ROOT (kernel/guestroot.py)."""
    vng = tool(VNG) or VNG
    kvm = ["--disable-kvm"] if accel == "tcg" else []
    foreign = ["--arch", arch.deb, "--root", str(root)] if root is not None else []
    rw = [f"--rwdir={p}" for p in dict.fromkeys(shared)]
    return [vng, "--run", str(image), *foreign, *kvm, "--force-9p", "--verbose", "--memory", MEMORY, "--cpus", "1", *rw,
            "--exec", f"bash {shlex.quote(str(script_path))}"]


def accel_for(image: Path, arch: Arch = NATIVE) -> str:
    """kvm when it really boots a guest here (boot/qemu's probe), else tcg; always tcg for another architecture."""
    return "kvm" if arch.native and qemu.kvm_works(image) else "tcg"


def run(image: Path, jobs: Sequence[Job], trees: Sequence[Path], sandbox: Sandbox, *, boot_timeout: float | None = None,
        log: Path | None = None, arch: Arch = NATIVE) -> GuestRun:
    """Boot IMAGE once and run JOBS in it (TREES shared read-write with the guest; for another ARCH, copies of
    the jobs' directories in a copy of its root); never raises for what the guest does. The wall clock is
    bounded by the jobs' timeouts plus the time a boot may take."""
    accel = accel_for(image, arch)
    limit = (boot_timeout or BOOT_ALLOWANCE[accel]) + sum(j.timeout + KILL_AFTER + 1 for j in jobs)
    if arch.initramfs:
        got, console, seconds, timed_out, rc = initramfs.run(image, jobs, sandbox, arch, limit, KILL_AFTER, log)
        ran = tuple(None if g is None else _ran(job, *g) for job, g in zip(jobs, got, strict=True))
        return GuestRun(ran, console, seconds, timed_out, accel, rc, runner=arch.qemu)
    sandbox.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="guest-", dir=sandbox.scratch) as tmp:
        results = Path(tmp) / "results"  # the path the guest writes to
        groot = None if arch.native else Path(tmp) / "root"
        seen, shared, writable = results, [*trees, results], tuple(trees)  # where the host reads, vng's rwdirs
        if groot is not None:
            copies = guestroot.prepare(arch, groot, [*dict.fromkeys(j.cwd for j in jobs), results])
            seen, shared, writable = copies[results], list(copies.values()), ()
            if failed := _copy_in(copies, results, sandbox, Path(tmp)):
                return GuestRun((None,) * len(jobs), f"reviewer: the {arch.name} guest was not started: {failed}\n", 0.0,
                                timed_out=False, accel=accel, returncode=None)
        seen.mkdir(parents=True, exist_ok=True)
        (seen / "run.sh").write_text(script(jobs, results))
        start = time.monotonic()
        argv = ["timeout", "-s", "KILL", f"{limit + qemu.GUARD_SECONDS:.0f}",
                *command(image, results / "run.sh", shared, accel, arch, groot)]
        # vng starts virtme-run, its sibling, from PATH
        vng_dir = str(Path(argv[4]).parent)
        sandbox = replace(sandbox, extra_env={**sandbox.extra_env, "PATH": f"{vng_dir}:{os.environ.get('PATH', os.defpath)}"})
        done = sandbox.run(argv, cwd=Path(tmp), timeout=limit, tree=Path(tmp), writable=writable, readable=(image.parent, *_python()))
        seconds = time.monotonic() - start
        ran = tuple(_read(seen, n, job) for n, job in enumerate(jobs))
    if log is not None:  # the console: the user's eyes only
        private.make_dir(log.parent)
        private.write_private(log, done.output.encode())
    return GuestRun(ran, done.output, seconds, done.timed_out, accel, done.returncode)


def tool(name: str) -> str | None:
    """NAME on PATH, or beside this Python (vng comes with the tool's own virtualenv)."""
    found = shutil.which(name)
    if found is None and (here := Path(sys.executable).parent / name).is_file():
        return str(here)
    return found


def _copy_in(copies: dict[Path, Path], results: Path, sandbox: Sandbox, tmp: Path) -> str:
    """Copy the jobs' directories (the series' files, built programs) to their places in the guest's root: in
    the sandbox, as cp -R copies links and FIFOs without following or opening them. What failed, or ""."""
    for src, dest in copies.items():
        if src == results:
            continue
        # Not -a: the sandbox's user cannot give the copy the owner (outside its user namespace) the original has.
        done = sandbox.run(["cp", "-R", "-P", "--preserve=mode,timestamps,links", "--", str(src), str(dest.parent)], cwd=tmp,
                           timeout=COPY_TIMEOUT, tree=tmp, readable=(src,))
        if done.returncode != 0 or done.timed_out:
            last = next((ln for ln in reversed(done.output.splitlines()) if ln.strip()), "killed" if done.timed_out else "no output")
            return f"copying {src} into its root failed: {last.strip()}"
    return ""


def _python() -> tuple[Path, ...]:
    """vng is a Python program of this virtualenv: the sandbox hides /root and /home, where both may live."""
    return tuple(dict.fromkeys(Path(p).resolve() for p in (sys.prefix, sys.base_prefix)))


def _read(results: Path, n: int, job: Job) -> Ran | None:
    """Job N's outcome as the guest wrote it (the series' code ran there: never through a symlink)."""
    try:
        status = read_untrusted(results / f"{n}.rc", 4096).decode(errors="replace").strip()
    except OSError:
        return None
    m = _STATUS.match(status)
    if m is None:
        return None
    try:
        output = read_untrusted(results / f"{n}.out", 16 << 20).decode(errors="replace")
    except OSError:
        output = ""
    try:
        left = read_untrusted(results / f"{n}.left", 1 << 20).decode(errors="replace").splitlines()
    except OSError:
        left = []
    return _ran(job, int(m["rc"]), (int(m["end"]) - int(m["start"])) / 1e9, output, tuple(left[:SHOWN_LEFT]), len(left))



def _ran(job: Job, rc: int, seconds: float, output: str, left: tuple[str, ...] = (), left_count: int = 0) -> Ran:
    # timeout(1): 124 when it sent TERM, 137 when it had to KILL; the test itself may exit 124: the clock decides.
    timed_out = rc in (124, 137) and seconds >= job.timeout - 0.5
    return Ran(job, output, rc, seconds, timed_out, left, left_count)
