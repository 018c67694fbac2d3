"""The build stage: compile the series for each architecture it touches, base then patch by patch.

Only with `--build` (it runs the series' Makefiles and compiler, sandboxed, and costs minutes). See
steps.py for how a step is built, judge.py for what becomes a finding, kernel/arches.py for the architectures and their toolchains.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reviewer.compile import judge
from reviewer.compile.steps import BUILD_TIMEOUT, BuildPlan, Commit, Step, TargetBuild, build_target
from reviewer.kernel import arches, srctree
from reviewer.model import BuiltStep, BuiltTarget, Finding, Level
from reviewer.progress import QUIET, Progress

__all__ = ["BUILD_TIMEOUT", "BuildPlan", "BuildResults", "Commit", "Step", "TargetBuild", "chosen", "cost", "describe", "exported",
           "report", "run"]

# Measured on 2 cores (6.12): configuring a tinyconfig ~15-20 s; the first build of a target's goals
# (kbuild's prepare, the scripts, the objects) 15-30 s cold; a step ~3-10 s with ccache.
_CONFIG_S, _FIRST_S, _STEP_S = 20, 30, 6


@dataclass(frozen=True)
class BuildResults:
    builds: tuple[TargetBuild, ...] = ()
    findings: tuple[Finding, ...] = ()


def chosen(touched: Sequence[str], only: Sequence[str] = ()) -> tuple[list[arches.Arch], list[str]]:
    return arches.for_series(touched, only)


def describe(touched: Sequence[str], patches: int, only: Sequence[str] = ()) -> str:
    """What --build would do: the targets and the steps."""
    ts, _ = chosen(touched, only)
    return f"would build the base and {patches} patches for {', '.join(t.name for t in ts)}" if ts else "nothing to build"


def cost(ts: Sequence[arches.Arch], steps: int) -> str:
    """A rough cost of building STEPS steps (the base included) for TS, cold and with a warm cache."""
    cold = len(ts) * (_CONFIG_S + _FIRST_S + _STEP_S * (steps - 1))
    warm = len(ts) * (_CONFIG_S + _STEP_S * steps)
    return f"about {_mins(cold)} cold, {_mins(warm)} with a warm cache"


def _mins(seconds: int) -> str:
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min"


def run(plan: BuildPlan, only: Sequence[str] = (), progress: Progress = QUIET) -> BuildResults:
    """Build every step of PLAN for the series' targets (ONLY: --arch); a target whose toolchain is missing
    is one info finding naming the packages."""
    ts, unknown = chosen(plan.touched, only)
    found: list[Finding] = [Finding("build/toolchain", Level.INFO, f"arch/{d}/ is not built: no toolchain is known for it here")
                            for d in unknown]
    ready = []
    builds: list[TargetBuild] = []
    for t in ts:
        if missing := t.missing():
            found.append(Finding("build/toolchain", Level.INFO, f"not built for {t.name}: {', '.join(missing)} not installed",
                                 hint=f"apt-get install {' '.join(t.packages)}"))
            builds.append(TargetBuild(t, problem=f"{', '.join(missing)} not installed"))
        else:
            ready.append(t)
    total = len(plan.commits) - 1
    progress.expect(len(ready) * len(plan.commits))
    with srctree.locked(plan.cache):
        for t in ready:
            tb = build_target(plan, t, progress)
            builds.append(tb)
            found += judge.findings(tb, plan.touched, total)
            if tb.not_kept:
                found.append(Finding("build/config", Level.INFO, f"{t.name}: the configuration could not keep "
                                     f"{', '.join(ln.split('=')[0] for ln in tb.not_kept)}: what they guard was compiled "
                                     "outside the configuration"))
    return BuildResults(tuple(builds), tuple(found))


def report(tb: TargetBuild) -> BuiltTarget:
    """The model's view of a target's build (what the reports show)."""
    steps = tuple(BuiltStep(s.index, s.status, s.seconds, s.goals, s.detail, sum(1 for d in s.diagnostics if d.kind == "warning"),
                            tuple((im.path, im.symbols) for im in s.images)) for s in tb.steps)
    return BuiltTarget(tb.target.name, " ".join(tb.target.variables(ccache=False)), steps, tb.config, tb.problem)


exported = judge.exported
