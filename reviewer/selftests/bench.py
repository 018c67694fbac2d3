"""Benchmarks reviewers run by hand, and how to read their numbers; base vs patched."""
from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import hostload
from reviewer.hostload import HostLoad
from reviewer.model import BenchResult, TestRun
from reviewer.run.sandbox import Sandbox
from reviewer.selftests.choose import TestRef
from reviewer.selftests.run import run_test


@dataclass(frozen=True)
class Benchmark:
    name: str
    test: TestRef
    args: tuple[str, ...]
    pattern: re.Pattern[str]  # one match per metric: groups `metric` and `value`
    unit: str
    lower_is_better: bool = True
    opt_in: bool = False  # too long to run unless asked for by name (--bench)
    timeout: float = 600.0  # benchmarks run longer than the dir's test timeout


_SINGLE = re.compile(r"^\s*(?P<metric>vdso|libc|syscall):\s+\d+ times in (?P<value>[\d.]+) seconds", re.M)
_MULTI = re.compile(r"^\s*(?P<metric>vdso|libc|syscall):\s+\d+ x \d+ times in (?P<value>[\d.]+) seconds", re.M)

# The vDSO getrandom() benchmarks of tools/testing/selftests/vDSO (25,000,000 calls each in
# the kernel's version): vdso vs libc vs syscall, the figures reviewers quote on the list.
BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark("vdso_test_getrandom bench-single", TestRef("vDSO", "vdso_test_getrandom"), ("bench-single",), _SINGLE, "s"),
        # 256 threads x 25,000,000 calls per flavour: tens of minutes on a 2-core machine.
        Benchmark("vdso_test_getrandom bench-multi", TestRef("vDSO", "vdso_test_getrandom"), ("bench-multi",), _MULTI, "s", opt_in=True),
    )
}


def for_tests(refs: list[TestRef], asked: tuple[str, ...] = ()) -> list[Benchmark]:
    """The benchmarks whose program is among REFS (or in a chosen directory); opt-in ones only if ASKED."""
    relevant = [b for b in BENCHMARKS.values() if any(r == b.test or (r.name is None and r.dir == b.test.dir) for r in refs)]
    return [b for b in relevant if not b.opt_in or b.name in asked]


STALL = 2.5  # a run this many times worse than its tree's other runs stalled (stalls())

RunOne = Callable[[str, Path, Sequence[str]], dict[str, TestRun]]  # (tree, worktree, envs) -> one run of the benchmark there per env


def measure(bench: Benchmark, trees: dict[str, Path], envs: Sequence[str], sandbox: Sandbox, runs: int,
            on_run: Callable[[str], None] = lambda _: None, run_one: RunOne | None = None) -> Iterator[BenchResult]:
    """Run BENCH RUNS times on each tree, alternating, in each of ENVS, and compare medians per environment and
    metric; ON_RUN hears of each run. RUN_ONE runs it once on a tree in every environment (in a guest: one boot for
    all of them); default: in the sandbox, on this machine's kernel, one environment after the other. A run that
    stalled (stalls()) is measured again, once, its figures replaced, and the row that stalled says so. The machine is read
    before the first run and after the last (hostload.py): every row carries how busy other work kept it meanwhile."""
    def once(label: str, what: str) -> dict[str, TestRun]:
        on_run(f"benchmark {bench.name} on {label} ({', '.join(envs)}), {what}")
        wt = trees[label]
        return (run_one(label, wt, envs) if run_one is not None else
                {env: run_test(wt, bench.test, tree=label, env=env, sandbox=sandbox, args=bench.args, timeout=bench.timeout)
                 for env in envs})

    done: dict[str, list[dict[str, TestRun]]] = {label: [] for label in trees}
    before = hostload.read()
    for i in range(runs):
        for label in trees:
            done[label].append(once(label, f"run {i + 1} of {runs}"))
    stalled: dict[tuple[str, str], list[str]] = {}  # (env, metric): what stalled there, said on that row only
    for label, side in done.items():
        for i, stall in stalls(bench, side):
            done[label][i] = once(label, f"run {i + 1} again: it stalled")
            again = [s for n, s in stalls(bench, done[label]) if n == i and s.env == stall.env]
            stalled.setdefault((stall.env, stall.metric), []).append(
                f"{label} run {i + 1} stalled ({stall.metric} {stall.value:.3g} {bench.unit}, {stall.times:.1f}x "
                f"its other runs): measured again{f', and stalled again ({again[0].times:.1f}x)' if again else ''}")
    load = hostload.since(before)
    samples: dict[str, dict[str, dict[str, list[float]]]] = {env: {label: {} for label in trees} for env in envs}
    notes: dict[str, list[str]] = {env: [] for env in envs}
    for label, side in done.items():
        for got in side:
            for env, run in got.items():
                found = figures(bench, run)
                if not found:
                    notes[env].append(f"{label}: {run.result} {run.reason}".strip())
                for metric, value in found.items():
                    samples[env][label].setdefault(metric, []).append(value)
    for env in envs:
        for metric in dict.fromkeys(m for side in samples[env].values() for m in side):
            row = _compare(bench, env, metric, samples[env].get("base", {}).get(metric, []),
                           samples[env].get("patched", {}).get(metric, []), runs, "; ".join(dict.fromkeys(notes[env])), load)
            yield replace(row, stalled="; ".join(stalled.get((env, metric), [])))


def figures(bench: Benchmark, run: TestRun) -> dict[str, float]:
    """BENCH's figures in RUN's output, by metric."""
    return {m["metric"]: float(m["value"]) for m in bench.pattern.finditer(run.log)}


@dataclass(frozen=True)
class Stall:
    env: str
    metric: str
    value: float
    times: float  # VALUE over the median of the side's other runs


def stalls(bench: Benchmark, side: Sequence[dict[str, TestRun]]) -> list[tuple[int, Stall]]:
    """The runs of one tree (SIDE, in order) that stalled: a figure STALL times worse than the median of the same
    environment's and metric's figure in the tree's other runs, the first such figure of each. The same program on the
    same kernel does not do that (TCG's runs differ by 1.3x): the machine stopped it (a busy or paused host, whose
    wall clock a guest's clock follows), and with a few runs a side, one such figure hides any difference."""
    figs = [{env: figures(bench, run) for env, run in got.items()} for got in side]
    found = []
    for i, mine in enumerate(figs):
        worse = [Stall(env, metric, value, times) for env, metrics in mine.items() for metric, value in metrics.items()
                 if (times := _times(bench, value, [f[env][metric] for j, f in enumerate(figs)
                                                    if j != i and metric in f.get(env, {})])) > STALL]
        if worse:
            found.append((i, worse[0]))
    return found


def _times(bench: Benchmark, value: float, others: Sequence[float]) -> float:
    """How many times worse VALUE is than the median of OTHERS (0 when there is nothing to compare)."""
    mid = statistics.median(others) if others else 0.0
    if mid <= 0 or value <= 0:
        return 0.0
    return value / mid if bench.lower_is_better else mid / value


def _compare(bench: Benchmark, env: str, metric: str, base: list[float], patched: list[float], runs: int, note: str,
             load: HostLoad) -> BenchResult:
    return BenchResult.of(bench.name, env, metric, bench.unit, base, patched, runs, note, load=load)
