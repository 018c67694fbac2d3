"""Build and boot base and patched kernels for the in-kernel tests the series calls for; compare.

The kernels come from the tree's kernel cache (kernel/images.py), one build directory per environment:
a base is built once, and a series reviewed again reuses its patched kernel.
"""
from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import hostload, model, private
from reviewer.boot import ab
from reviewer.boot.intests import InTest, relevant, symbols
from reviewer.errors import SelftestError, UsageError
from reviewer.kernel import images, kconfig, make, qemu, srctree
from reviewer.kernel.arches import X86_64
from reviewer.model import BenchResult, Finding, TestRun
from reviewer.progress import QUIET, Progress
from reviewer.tree.git import common_dir
from reviewer.verdict import BENCH_RUNS

REPEAT_UNDER = 20.0  # seconds: boots longer than this run once


@dataclass(frozen=True)
class BootResults:
    runs: tuple[TestRun, ...] = ()
    benchmarks: tuple[BenchResult, ...] = ()
    findings: tuple[Finding, ...] = ()
    tests: tuple[tuple[InTest, str], ...] = ()  # what was chosen, and why
    config: dict[str, tuple[str, ...]] = field(default_factory=dict)  # env -> the fragment on top of tinyconfig
    logs: dict[str, str] = field(default_factory=dict)  # "base/plain" -> console log path (the first boot's)
    accel: str = ""  # kvm | tcg


def run_intests(
    base_wt: Path, patched_wt: Path, touched: Sequence[str], envs: tuple[str, ...], cache_dir: Path, timeout: float,
    *, log_dir: Path | None = None, extra: Sequence[InTest] = (), slower_than: float | None = None, boots: int = BENCH_RUNS,
    build_timeout: float = kconfig.BUILD_TIMEOUT, commits: tuple[str, str] | None = None,
    progress: Progress = QUIET, chosen: Sequence[tuple[InTest, str]] | None = None,
) -> BootResults:
    """Build base and patched (the worktrees' commits, or COMMITS: the worktrees may be sparse) in each
    environment, boot each up to BOOTS times (TIMEOUT seconds of wall clock per boot), and compare.
    PROGRESS hears of each build and boot as it starts. CHOSEN: the tests the caller has listed (else
    they are listed here, in BASE_WT). Both commits are checked out from PATCHED_WT's repository: the
    patched commit may exist only there (a worktree of a shadow repository borrows the base's objects)."""
    if unknown := [e for e in envs if e not in kconfig.ENVS]:
        raise UsageError(f"unknown boot environment {unknown[0]!r}", f"choose from: {', '.join(kconfig.ENVS)}")
    chosen = list(chosen) if chosen is not None else relevant(touched, base_wt, extra)
    if not chosen:
        return BootResults()
    preflight()
    tests = [t for t, _ in chosen]
    base, patched = commits or (srctree.commit_of(base_wt), srctree.commit_of(patched_wt))
    trees = {"base": base, "patched": patched}
    logs = log_dir or cache_dir / "logs"  # created by the first boot: a failed build leaves no empty directory
    out = BootResults(tests=tuple(chosen), config={e: kconfig.fragment(symbols(tests), e) for e in envs})
    progress.expect(len(envs) * len(trees))  # the builds; each round of boots adds its own
    with srctree.locked(cache_dir):
        for env in envs:
            sides: dict[str, ab.BootedKernel] = {}
            for tree, c in trees.items():
                progress.advance(f"build the {tree} kernel ({env})")
                sides[tree] = side(common_dir(patched_wt), c, tree, env, out.config[env], cache_dir, build_timeout)
            before = hostload.read()  # a busy machine stretches boots too: dmapool_test's times are then not judged
            sides = _boot(sides, boots, timeout, logs, out.logs, progress)
            out = _merge(out, tests, sides, slower_than, hostload.since(before))
    # Each row says which kernel it ran on: the side's own commit, booted for x86_64 under kvm or tcg.
    where = {tree: f"booted {c[:12]} {X86_64.name} {out.accel or '-'}" for tree, c in trees.items()}
    both = f"booted {X86_64.name} {out.accel or '-'}: base {base[:12]}, patched {patched[:12]}"
    return replace(out, runs=tuple(replace(r, where=where.get(r.tree, "")) for r in out.runs),
                   benchmarks=tuple(replace(b, where=both) for b in out.benchmarks))


# The commands a boot needs, and the Debian packages that bring them.
TOOLS = {**make.TOOLS, qemu.QEMU: X86_64.qemu_package}


def preflight() -> None:
    """Fail before building anything when a tool is missing (else both sides "fail to build")."""
    missing = [cmd for cmd in TOOLS if shutil.which(cmd) is None]
    if missing:
        pkgs = " ".join(TOOLS[c] for c in missing)
        raise SelftestError(f"booting in-kernel tests needs {', '.join(missing)}", f"install them: apt-get install {pkgs} libelf-dev")


def side(git: Path, commit: str, tree: str, env: str, lines: tuple[str, ...], cache: Path, timeout: float) -> ab.BootedKernel:
    """TREE's side of the A/B in ENV: the kernel of COMMIT, from the kernel cache or built there (kernel/images.py)."""
    return ab.BootedKernel(tree, env, images.build(git, commit, env, lines, cache, timeout))


def _boot(sides: dict[str, ab.BootedKernel], boots: int, timeout: float, logs: Path, paths: dict[str, str],
          progress: Progress = QUIET) -> dict[str, ab.BootedKernel]:
    """Boot the sides in turn, up to BOOTS rounds (alternating, so that a slow moment hits both) for
    medians. A side boots again only while its boots are clean and short: a hang or a splat
    will come back, and a minute-long test (debug, TCG) averages out its own noise."""
    done: dict[str, list[qemu.Boot]] = {tree: [] for tree in sides}
    for n in range(boots):
        going = [(tree, side) for tree, side in sides.items() if side.build.image is not None and (not n or _again(done[tree]))]
        progress.expect(len(going))
        for tree, side in going:
            assert side.build.image is not None
            progress.advance(f"boot the {tree} kernel ({side.env})" + (f", boot {n + 1} of up to {boots}" if n else ""))
            log = logs / f"boot-{tree}-{side.env}{f'-{n + 1}' if n else ''}.log"
            private.make_dir(logs)  # console logs: the user's eyes only (700; proc.watch writes them 600)
            done[tree].append(qemu.boot(side.build.image, timeout, log))
            paths.setdefault(f"{tree}/{side.env}", str(log))
    return {tree: ab.BootedKernel(s.tree, s.env, s.build, tuple(done[tree])) for tree, s in sides.items()}


def _again(previous: list[qemu.Boot]) -> bool:
    last = previous[-1] if previous else None
    return last is not None and last.seconds < REPEAT_UNDER and ab.clean(last)


def _merge(out: BootResults, tests: list[InTest], sides: dict[str, ab.BootedKernel], asked: float | None,
           load: hostload.HostLoad | None = None) -> BootResults:
    runs = [r for s in sides.values() for r in ab.runs(tests, s)]
    findings = [f for s in sides.values() for f in ab.side_findings(s)]
    accel = next((b.accel for s in sides.values() for b in s.boots), out.accel)
    bench, more = ab.compare(tests, sides["base"], sides["patched"], model.slower_than(asked, accel), load)
    return BootResults((*out.runs, *runs), (*out.benchmarks, *bench), (*out.findings, *findings, *more),
                   out.tests, out.config, out.logs, accel)
