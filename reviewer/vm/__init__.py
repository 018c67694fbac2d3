"""Selftests in the kernels the series builds (issue 17): where they run, the guest kernels, the guest.

    decide(touched, asked, tree) -> Decision        host or vm, and why
    kernels(...) -> Prepared                        the base and patched guest kernels, built or cached
    guest.run(image, jobs, trees, sandbox)          one boot running a batch of test programs
"""
from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from reviewer import ktap
from reviewer.model import Finding, Level, TestRun
from reviewer.progress import QUIET, Progress

RULE = "vm"
RUN_ON = ("auto", "host", "vm")
# What the kernel is not built from: a series changing only these is tested as it should be on the host.
NOT_KERNEL = re.compile(r"^(Documentation|tools|samples|scripts|LICENSES|usr/include)/|^[^/]+$")
GUEST_ARCHES = {"x86_64": "x86"}  # the guests this machine can boot with virtme-ng, and their arch/ directory
# The commands a guest needs beyond the boot stage's (boot/runner.TOOLS: the kernel build and QEMU),
# and the Debian package or PyPI project that brings each.
GUEST_TOOLS = {"vng": "virtme-ng (pip)", "udevadm": "udev"}


@dataclass(frozen=True)
class Decision:
    vm: bool
    why: str  # for the report: why here
    missing: str = ""  # asked for (or called for) a VM that cannot be booted here: what is missing


def kernel_paths(touched: Iterable[str]) -> list[str]:
    return [p for p in touched if not NOT_KERNEL.match(p)]


def series_arch(touched: Iterable[str]) -> str:
    """The architecture the series is about: the arch/<x>/ it touches (the first), else the machine's."""
    arches = sorted({p.split("/")[1] for p in touched if p.startswith("arch/") and p.count("/") >= 2})
    machine = os.uname().machine
    host_dir = GUEST_ARCHES.get(machine, machine)
    if not arches or host_dir in arches:
        return machine
    return arches[0]


def decide(touched: Sequence[str], asked: str, tree: Path) -> Decision:
    """Where the selftests run: ASKED (--run-on) host or vm; auto: vm when the series changes what the
    kernel is built from, host otherwise. A VM this machine cannot boot says what is missing."""
    kernel = kernel_paths(touched)
    if asked == "host":
        return Decision(False, "--run-on host")
    if asked == "auto" and not kernel:
        return Decision(False, "the series changes nothing the kernel is built from")
    why = "--run-on vm" if asked == "vm" else f"the series changes the kernel ({_some(kernel)})"
    arch = series_arch(touched)
    if arch not in GUEST_ARCHES:
        return Decision(False, why, f"no {arch} guest can be booted here yet (this machine boots {', '.join(GUEST_ARCHES)} guests)")
    if not (tree / "arch" / GUEST_ARCHES[arch] / "Makefile").is_file():
        return Decision(False, why, f"{tree} is not a kernel tree with arch/{GUEST_ARCHES[arch]}/ (its kernel cannot be built)")
    tools = _tools()
    if missing := [t for t in tools if tool(t) is None]:
        pkgs = ", ".join(dict.fromkeys(tools[t] for t in missing))
        return Decision(False, why, f"booting a guest needs {', '.join(missing)} (install {pkgs})")
    return Decision(True, why)


def _tools() -> dict[str, str]:
    """Every command a guest needs: vng and QEMU first (what the message names first), then the rest."""
    from reviewer.boot import qemu, runner

    return {"vng": GUEST_TOOLS["vng"], qemu.QEMU: runner.TOOLS[qemu.QEMU], **GUEST_TOOLS, **runner.TOOLS}


def tool(name: str) -> str | None:
    """NAME on PATH, or beside this Python (vng comes with the tool's own virtualenv)."""
    found = shutil.which(name)
    if found is None and (here := Path(sys.executable).parent / name).is_file():
        return str(here)
    return found


def cost(envs: Sequence[str], bench_runs: int) -> str:
    """What the tests in guests will take, roughly (2 cores; KERNEL-NOTES and this tool's bench/vm_cost.py)."""
    bench = (f"; a benchmark boots once per run: {bench_runs} run(s) a tree and environment ({len(envs)}), "
             "bench-single about 3 min a run under TCG") if bench_runs else ""
    return (f"2 kernel builds (about 12 min the first time at -j2; under a minute when cached or incremental), "
            f"then a boot per tree (about 30 s under TCG, a few seconds with KVM) and the tests{bench}")


def _some(paths: Sequence[str]) -> str:
    more = f" and {len(paths) - 2} more" if len(paths) > 2 else ""
    return ", ".join(paths[:2]) + more


@dataclass(frozen=True)
class Prepared:
    images: dict[str, Path | None]  # tree -> its guest kernel (None: it did not build)
    runs: tuple[TestRun, ...]  # one "vm:kernel-build" row per tree
    findings: tuple[Finding, ...]
    config: tuple[str, ...]  # the fragment on top of tinyconfig


def kernels(git: Path, commits: dict[str, str], fragment: tuple[str, ...], cache: Path, timeout: float,
            progress: Progress = QUIET) -> Prepared:
    """The guest kernel of each tree's commit (checked out from the repository GIT), built in CACHE or
    found there; what a tree's build broke, and the fragment's symbols the configuration did not keep."""
    from reviewer.boot import kconfig
    from reviewer.kbuild import srctree
    from reviewer.vm import kernel

    images: dict[str, Path | None] = {}
    runs: list[TestRun] = []
    findings: list[Finding] = []
    dropped: list[str] = []
    progress.expect(len(commits))
    with srctree.locked(cache):
        for label, commit in commits.items():
            progress.advance(f"build the {label} kernel for the tests (vm)")
            side = kernel.build(git, commit, label, fragment, cache, timeout)
            b = side.build
            images[label] = b.image if b.ok else None
            runs.append(TestRun("vm:kernel-build", label, "-", _result(b.ok), b.seconds, b.error, b.log,
                                where=f"built {commit[:12]} x86_64"))
            if not b.ok:
                f = kconfig.build_finding(b, label, "for the tests")
                findings.append(f if label == "patched" else Finding(RULE, Level.WARNING, f.message + ": its tests were not run", path=f.path, line=f.line))
            dropped += [p for p in b.problems if p not in dropped]
    if dropped:
        findings.append(Finding(RULE, Level.INFO, f"the guest kernel does not have {len(dropped)} line(s) of the fragment "
                                f"(tinyconfig + the userspace set + the tests' config files): {'; '.join(dropped[:6])}"
                                + (f" and {len(dropped) - 6} more" if len(dropped) > 6 else "")))
    return Prepared(images, tuple(runs), tuple(findings), fragment)


def _result(ok: bool) -> ktap.Result:
    return ktap.Result.PASS if ok else ktap.Result.ERROR
