"""Benchmark verdicts from real runs of the demo tree's vdso_test_getrandom bench-single: a real tenfold slowdown with
enough runs is slower; real CPU hogs beside the runs make the host busy, and a busy host gives no verdict."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from reviewer.model import BenchResult, TestRun
from reviewer.run.sandbox import Sandbox
from reviewer.selftests.bench import BENCHMARKS, RunOne, measure
from reviewer.selftests.run import run_test
from reviewer.verdict import BENCH_RUNS, Trend, judge

BENCH = BENCHMARKS["vdso_test_getrandom bench-single"]
CALLS = 20_000  # calls a flavour on base; the patched side makes ten times as many: a real 10x slowdown


@pytest.fixture
def hogs() -> Iterator[list[int]]:
    """One CPU hog per CPU (python busy loops in sessions of their own: other work, as far as the review can tell),
    stopped by PID at the end."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.5)
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()


def _tenfold(tmp_path: Path) -> RunOne:
    """Each side in its own sandbox: the patched one's program makes ten times the calls."""
    calls = {"base": CALLS, "patched": 10 * CALLS}

    def run_one(label: str, wt: Path, envs: Sequence[str]) -> dict[str, TestRun]:
        box = Sandbox(tmp_path / label, {"VDSO_BENCH_CALLS": str(calls[label])})
        return {env: run_test(wt, BENCH.test, tree=label, env=env, sandbox=box, args=BENCH.args, timeout=BENCH.timeout) for env in envs}

    return run_one


def _measure(tree: Path, tmp_path: Path, runs: int = BENCH_RUNS) -> list[BenchResult]:
    results = list(measure(BENCH, {"base": tree, "patched": tree}, ["plain"], Sandbox(tmp_path), runs, run_one=_tenfold(tmp_path)))
    assert [r.metric for r in results] == ["vdso", "libc", "syscall"]
    return [r.judged(1.25) for r in results]


def test_a_real_tenfold_slowdown_with_enough_runs_is_slower(built_tree: Path, tmp_path: Path) -> None:
    results = _measure(built_tree, tmp_path)
    for r in results:
        assert len(r.base_samples) == len(r.patched_samples) == BENCH_RUNS and r.load is not None and r.load.seconds > 0
        assert r.ratio is not None and r.ratio > 5, r
        # The statistics alone (this shared machine may be busy with other work: then the row itself is not judged).
        v = judge(r.base_samples, r.patched_samples, 1.25)
        assert v.outcome is Trend.SLOWER, v.text
        assert r.verdict is not None and r.verdict.outcome is (Trend.BUSY if r.load.busy else Trend.SLOWER), r.verdict.text


def test_fewer_runs_give_the_numbers_and_no_verdict(built_tree: Path, tmp_path: Path) -> None:
    for r in _measure(built_tree, tmp_path, runs=3):
        assert r.ratio is not None and r.ratio > 5 and r.verdict is not None and r.verdict.outcome is Trend.NOT_ENOUGH_RUNS
        assert r.verdict.text == "not enough runs for a verdict (3 runs per side; a verdict needs 5 a side)"


def test_cpu_hogs_beside_the_runs_make_the_host_busy_and_give_no_verdict(built_tree: Path, tmp_path: Path, hogs: list[int]) -> None:
    results = _measure(built_tree, tmp_path)
    load = results[0].load
    assert load is not None and load.busy, load
    assert load.others >= 0.5 * len(hogs) / (len(hogs) + 1) * load.cpus and load.idle < 0.5, load  # the hogs' share, at least half of it
    for r in results:
        assert r.verdict is not None and r.verdict.outcome is Trend.BUSY and not r.slower, r.verdict
        assert r.verdict.text.startswith(f"not judged: the machine was busy (other work used {load.others:.1f} "
                                         f"of {load.cpus} CPUs"), r.verdict.text
        assert "95% interval " in r.verdict.text  # the figures are still shown
