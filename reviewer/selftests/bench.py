"""Benchmarks reviewers run by hand, and how to read their numbers; base vs patched."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

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


RunOne = Callable[[str, Path, Sequence[str]], dict[str, TestRun]]  # (tree, worktree, envs) -> one run of the benchmark there per env


def measure(bench: Benchmark, trees: dict[str, Path], envs: Sequence[str], sandbox: Sandbox, runs: int,
            on_run: Callable[[str], None] = lambda _: None, run_one: RunOne | None = None) -> Iterator[BenchResult]:
    """Run BENCH RUNS times on each tree, alternating, in each of ENVS, and compare medians per environment and
    metric; ON_RUN hears of each run. RUN_ONE runs it once on a tree in every environment (in a guest: one boot for
    all of them); default: in the sandbox, on this machine's kernel, one environment after the other."""
    samples: dict[str, dict[str, dict[str, list[float]]]] = {env: {label: {} for label in trees} for env in envs}
    notes: dict[str, list[str]] = {env: [] for env in envs}
    for i in range(runs):
        for label, wt in trees.items():
            on_run(f"benchmark {bench.name} on {label} ({', '.join(envs)}), run {i + 1} of {runs}")
            got = (run_one(label, wt, envs) if run_one is not None else
                   {env: run_test(wt, bench.test, tree=label, env=env, sandbox=sandbox, args=bench.args, timeout=bench.timeout)
                    for env in envs})
            for env, run in got.items():
                found = {m["metric"]: float(m["value"]) for m in bench.pattern.finditer(run.log)}
                if not found:
                    notes[env].append(f"{label}: {run.result} {run.reason}".strip())
                for metric, value in found.items():
                    samples[env][label].setdefault(metric, []).append(value)
    for env in envs:
        for metric in dict.fromkeys(m for side in samples[env].values() for m in side):
            yield _compare(bench, env, metric, samples[env].get("base", {}).get(metric, []),
                           samples[env].get("patched", {}).get(metric, []), runs, "; ".join(dict.fromkeys(notes[env])))


def _compare(bench: Benchmark, env: str, metric: str, base: list[float], patched: list[float], runs: int, note: str) -> BenchResult:
    return BenchResult.of(bench.name, env, metric, bench.unit, base, patched, runs, note)
