"""Where the selftests run (issue 17): on the host, or in the kernels the series builds, booted as guests of kernel/.

    decide(touched, asked, tree) -> Decision        host or vm, and why
    kernels(...) -> Prepared                        the base and patched guest kernels, built or cached
    kernel/guest.run(image, jobs, trees, sandbox)   one boot running a batch of test programs
"""
from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import ktap
from reviewer.errors import ConfigError
from reviewer.kernel import arches, guestroot
from reviewer.kernel.arches import X86_64, Arch, host
from reviewer.model import Finding, Level, TestRun
from reviewer.progress import QUIET, Progress

RULE = "vm"
RUN_ON = ("auto", "host", "vm")
# What the kernel is not built from: a series changing only these is tested as it should be on the host.
NOT_KERNEL = re.compile(r"^(Documentation|tools|samples|scripts|LICENSES|usr/include)/|^[^/]+$")
# The commands a guest needs beyond a kernel build's (kernel/make.TOOLS) and QEMU,
# and the Debian package or PyPI project that brings each.
GUEST_TOOLS = {"vng": "virtme-ng (pip)", "udevadm": "udev"}


@dataclass(frozen=True)
class Decision:
    vm: bool
    why: str  # for the report: why here
    missing: str = ""  # asked for (or called for) a VM that cannot be booted here: what is missing
    arch: Arch | None = None  # the guests' architecture
    fix: str = ""  # with MISSING: the command that makes the guest possible, if one does
    root: Arch | None = None  # with MISSING: the guest's one lack is its root (which `review guest-root` makes)

    @property
    def lacking(self) -> str:
        """What is missing, and what makes it possible."""
        return f"{self.missing} ({'make it: ' if self.root else ''}{self.fix})" if self.fix else self.missing


def uncovered(touched: Iterable[str], arch: Arch) -> Finding | None:
    """What ARCH's guests cannot test of a series touching TOUCHED (its gaps in kernel/arches.py), said once: e.g. the
    32-bit powerpc vDSO, which a ppc64le kernel does not have (CONFIG_VDSO32 needs a 32-bit or a big-endian kernel),
    and arm64's compat vDSO, which the guest kernel (no COMPAT) does not build and no 64-bit test program calls."""
    paths = list(touched)
    gap = next((g for g in arch.gaps if any(re.match(g.path, p) for p in paths)), None)
    return Finding(RULE, Level.INFO, gap.message, hint=gap.hint or None) if gap else None


def kernel_paths(touched: Iterable[str]) -> list[str]:
    return [p for p in touched if not NOT_KERNEL.match(p)]


def series_arch(touched: Iterable[str]) -> str:
    """The arch/ directory the series is about: the machine's own when it touches that one or none, else
    the first it touches."""
    arches = sorted({p.split("/")[1] for p in touched if p.startswith("arch/") and p.count("/") >= 2})
    mine = host().srcarch
    return mine if not arches or mine in arches else arches[0]


def decide(touched: Sequence[str], asked: str, tree: Path, only: Sequence[str] = ()) -> Decision:
    """Where the selftests run: ASKED (--run-on) host or vm; auto: vm when the series changes what the
    kernel is built from, host otherwise; in a guest of the series' architecture, or of ONLY's first
    (--arch). A VM this machine cannot boot says what is missing."""
    kernel = kernel_paths(touched)
    if asked == "host":
        return Decision(vm=False, why="--run-on host")
    if asked == "auto" and not kernel:
        return Decision(vm=False, why="the series changes nothing the kernel is built from")
    why = "--run-on vm" if asked == "vm" else f"the series changes the kernel ({_some(kernel)})"
    name = only[0] if only else series_arch(touched)
    g = arches.guest(name)
    if g is None:
        unbootable = a.unbootable if (a := arches.find(name)) else ""
        return Decision(vm=False, why=why,
                        missing=unbootable or f"the tool boots no {name} guests yet (its guests: {', '.join(arches.GUESTS)})")
    if not (tree / "arch" / g.srcarch / "Makefile").is_file():
        return Decision(vm=False, why=why, missing=f"{tree} is not a kernel tree with arch/{g.srcarch}/ (its kernel cannot be built)")
    tools = _tools(g)
    if missing := [t for t in tools if _tool(t) is None]:
        return Decision(vm=False, why=why, missing=f"booting a {g.name} guest needs {', '.join(missing)}",
                        fix=install(tools[t] for t in missing))
    if firmware := [(f, pkg) for f, pkg in g.firmware if not Path(f).is_file()]:
        needs = ", ".join(f for f, _ in firmware)
        return Decision(vm=False, why=why, missing=f"booting a {g.name} guest needs QEMU's firmware {needs}",
                        fix=install(pkg for _, pkg in firmware))
    if not g.native and not (libc := Path("/usr") / g.toolchain.cross.rstrip("-") / "include" / "stdio.h").is_file():
        return Decision(vm=False, why=why, missing=f"building the tests for {g.name} needs {libc}",
                        fix=install([f"libc6-dev-{g.deb}-cross"]))
    if not guestroot.ready(g):
        return Decision(vm=False, why=why, missing=f"no {g.deb} guest root at {guestroot.location(g)}", fix=guestroot.command(g), root=g)
    return Decision(vm=True, why=why, arch=g)


def make_root(d: Decision, say: Callable[[str], None]) -> Decision:
    """D, a guest whose one lack is its root, with that root made from Debian's packages (asked for: --run-on vm), SAY
    hearing of each step; or what failed, and what makes it possible."""

    assert d.root is not None
    g, start = d.root, time.monotonic()
    say(f"{d.missing}: making it, once, as `{guestroot.command(g)}` does")
    try:
        made = guestroot.make(g, say)
    except ConfigError as exc:
        return replace(d, missing=f"{d.missing}, and making it failed: {exc.message}", fix=exc.hint or "", root=None)
    say(f"made the {g.deb} guest root {made} in {time.monotonic() - start:.0f}s")
    return Decision(vm=True, why=d.why, arch=g)


def install(packages: Iterable[str]) -> str:
    """The commands that install PACKAGES: Debian's with apt-get, "<name> (pip)" into this tool's own virtualenv."""
    entries = list(packages)
    pip = [p.removesuffix(" (pip)") for p in dict.fromkeys(entries) if p.endswith(" (pip)")]
    apt = list(dict.fromkeys(w for p in entries if not p.endswith(" (pip)") for w in p.split()))
    commands = [f"apt-get install {' '.join(apt)}"] if apt else []
    return "; ".join(commands + ([f"{sys.executable} -m pip install {' '.join(pip)}"] if pip else []))


def _tools(g: Arch) -> dict[str, str]:
    """Every command a G guest needs: vng (where it boots G) and QEMU first (what the message names first), then the rest."""
    from reviewer.kernel import make

    build = make.TOOLS
    if g.initramfs:  # no vng: QEMU boots it with our init (kernel/initramfs.py)
        return {g.qemu: g.qemu_package, **build, **dict.fromkeys(g.toolchain.tools(), " ".join(g.toolchain.packages))}
    if g.native:
        return {"vng": GUEST_TOOLS["vng"], g.qemu: g.qemu_package, **GUEST_TOOLS, **build}
    cross = dict.fromkeys(g.toolchain.tools(), " ".join(g.toolchain.packages))
    return {"vng": GUEST_TOOLS["vng"], g.qemu: g.qemu_package, **build, **cross}


def _tool(name: str) -> str | None:
    from reviewer.kernel import guest  # QEMU, the sandbox: loaded when a guest is asked for, not at start-up

    return guest.tool(name)


def cost(envs: Sequence[str], bench_runs: int, arch: Arch = X86_64) -> str:
    """What the tests in guests will take, roughly (2 cores; docs/design.md#measured-facts and bench/vm_cost.py)."""
    bench = (f"; a benchmark boots once per run and tree, {bench_runs} run(s) a tree, each running bench-single in "
             f"every environment ({len(envs)}), about {arch.bench_minutes} min each under TCG") if bench_runs else ""
    boot = ("about 30 s under TCG, a few seconds with KVM" if arch.native else
            "a few seconds under TCG (an initramfs; no KVM for another architecture)" if arch.initramfs else
            "about 30 s under TCG (no KVM for another architecture)")
    return (f"2 kernel builds (about {arch.build_minutes}-16 min the first time at -j2; under a minute when cached or "
            f"incremental), then a boot per tree ({boot}) and the tests{bench}")


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
            progress: Progress = QUIET, arch: Arch = X86_64) -> Prepared:
    """The guest kernel of each tree's commit (checked out from the repository GIT), built in CACHE or
    found there; what a tree's build broke, and the fragment's symbols the configuration did not keep."""
    from reviewer.kernel import guestkernel, kconfig, srctree

    images: dict[str, Path | None] = {}
    runs: list[TestRun] = []
    findings: list[Finding] = []
    dropped: list[str] = []
    progress.expect(len(commits))
    with srctree.locked(cache):
        for label, commit in commits.items():
            progress.advance(f"build the {label} kernel for the tests (vm)")
            b = guestkernel.build(git, commit, fragment, cache, timeout, arch)
            images[label] = b.image if b.ok else None
            runs.append(TestRun("vm:kernel-build", label, "-", _result(ok=b.ok), b.seconds, b.error, b.log,
                                where=f"built {commit[:12]} {arch.name}"))
            if not b.ok:
                f = kconfig.build_finding(b, label, "for the tests")
                findings.append(f if label == "patched" else Finding(RULE, Level.WARNING, f.message + ": its tests were not run",
                                                                     path=f.path, line=f.line))
            dropped += [p for p in b.problems if p not in dropped]
    if dropped:
        findings.append(Finding(RULE, Level.INFO, f"the guest kernel does not have {len(dropped)} line(s) of the fragment "
                                f"(tinyconfig + the userspace set + the tests' config files): {'; '.join(dropped[:6])}"
                                + (f" and {len(dropped) - 6} more" if len(dropped) > 6 else "")))
    return Prepared(images, tuple(runs), tuple(findings), fragment)


def _result(*, ok: bool) -> ktap.Result:
    return ktap.Result.PASS if ok else ktap.Result.ERROR
