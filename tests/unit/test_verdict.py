"""Benchmark verdicts: `slower` only with enough runs, on a host that was not busy, beyond the noise AND beyond
--slower-than with confidence (reviewer/verdict.py), in both stages and every report."""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from scipy.stats import bootstrap, mannwhitneyu

from reviewer import hostload
from reviewer.boot import ab, intests
from reviewer.hostload import HostLoad, Reading
from reviewer.kernel import kconfig
from reviewer.kernel.qemu import Boot
from reviewer.model import SLOWER_THAN, SLOWER_THAN_TCG, BenchResult, Level, Person, Review, Series, slower_than
from reviewer.report import email, terminal
from reviewer.report import json as json_report
from reviewer.selftests import stage
from reviewer.verdict import ALPHA, BENCH_RUNS, CONFIDENCE, Method, Trend, judge, mann_whitney_reachable, min_runs

LIMIT = 1.25
# 5 v 5, every patched run beyond every base run, 1.40x.
APART = ([1.00, 1.02, 1.05, 1.01, 1.03], [1.40, 1.43, 1.47, 1.42, 1.45])
# 5 v 5, medians 1.5 -> 2.1 (1.40x), but the runs mingle.
MINGLED = ([1.0, 1.5, 2.0, 1.2, 1.7], [1.9, 2.1, 2.3, 1.4, 2.2])
# 8 v 8, patched ~1.3x slower: a difference, but its interval (1.19-1.38x) reaches below the 1.25x threshold.
BASE8 = [1.00, 1.03, 0.98, 1.10, 1.05, 0.97, 1.20, 1.01]
PATCHED8 = [1.25, 1.40, 1.31, 1.15, 1.36, 1.28, 1.33, 1.45]
QUIET = HostLoad(60.0, 2, 0.05, 0.0, 1.0, 0.01, (0.9, 1.0))
# Real A/A figures: review demo --format json (bench-single of the demo tree's vdso_test_getrandom, plain and
# timens, 5 runs a side, the same program and kernel on both sides) on the 2-core machine with 0, 1 and 2 CPU
# hogs, and other users' work beside them (bench/false_verdicts.py --save, 2026-12-05): every row's runs.
AA_ROWS = Path(__file__).parents[2] / "fixtures" / "bench" / "aa-demo-rows.json"


def _result(base: list[float], patched: list[float], load: HostLoad | None = None) -> BenchResult:
    return BenchResult.of("vdso_test_getrandom bench-single", "plain", "vdso", "s", base, patched, max(len(base), len(patched)), load=load)


def _findings(base: list[float], patched: list[float], limit: float = LIMIT) -> list[str]:
    judged, findings = stage.judge_benchmarks([_result(base, patched)], limit)
    assert len(judged) == 1 and judged[0].verdict is not None
    assert all(f.rule == "benchmarks" and f.level is Level.WARNING for f in findings)
    return [f.message for f in findings]


def _aa_rows() -> list[tuple[list[float], list[float]]]:
    saved = json.loads(AA_ROWS.read_text())["reviews"]
    return [(row["base_runs"], row["patched_runs"]) for reviews in saved.values() for review in reviews for row in review]


def _ranges_rule(base: list[float], patched: list[float]) -> bool:
    """The verdict before issue 30, on 3 runs a side: every run of one side beyond every run of the other, and the ratio
    of the medians beyond the threshold."""
    ratio = statistics.median(patched) / statistics.median(base)
    return (min(patched) > max(base) and ratio > LIMIT) or (max(patched) < min(base) and ratio < 1 / LIMIT)


# --- the statistics ------------------------------------------------------------------------------------------------

def test_a_verdict_needs_five_runs_a_side_and_that_is_the_default() -> None:
    # the smallest one-sided p of the exact test is 1 / C(n + m, n): 4 v 4 gives 1/70 = 0.014, not below 0.01
    assert ALPHA == 0.01 and min_runs() == BENCH_RUNS == 5
    assert not mann_whitney_reachable(4, 4) and not mann_whitney_reachable(3, 3) and not mann_whitney_reachable(2, 9)
    assert mann_whitney_reachable(5, 5) and mann_whitney_reachable(4, 6) and mann_whitney_reachable(3, 9)
    assert float(mannwhitneyu([2, 3, 4, 5], [0, 0.5, 1, 1.5], alternative="greater").pvalue) == pytest.approx(1 / 70)  # the oracle


@pytest.mark.parametrize(("base", "patched", "said"), [
    ([1.0, 1.01, 1.02], [1.4, 1.43, 1.47], "3 runs per side"),  # apart, 1.40x: what used to be a "ranges" verdict
    ([1.0, 1.01, 1.02, 1.03], [10.0, 10.1, 10.2, 10.3], "4 runs per side"),  # even 10x
    ([1.0], [10.0], "1 run per side"),
    ([1.0, 1.1], [9.0, 9.1, 9.2, 9.3, 9.4], "2 base v 5 patched runs"),
])
def test_fewer_runs_than_a_verdict_needs_show_the_numbers_and_say_so(base: list[float], patched: list[float], said: str) -> None:
    v = judge(base, patched, LIMIT)
    assert (v.outcome, v.method, v.p, v.interval) == (Trend.NOT_ENOUGH_RUNS, None, None, None)
    assert v.text == f"not enough runs for a verdict ({said}; a verdict needs 5 a side)"
    assert _findings(base, patched) == []
    row = _result(base, patched)  # the numbers are still there: medians and ratio
    assert row.ratio == pytest.approx(statistics.median(patched) / statistics.median(base))


def test_a_tenfold_slowdown_with_enough_runs_is_slower_with_the_tests_that_say_so() -> None:
    base = [0.101, 0.098, 0.104, 0.097, 0.102]
    patched = [1.02, 0.99, 1.05, 1.01, 0.98]
    v = judge(base, patched, LIMIT, QUIET)
    assert (v.outcome, v.method) == (Trend.SLOWER, Method.MANN_WHITNEY_BOOTSTRAP)
    p = float(mannwhitneyu(patched, base, alternative="greater").pvalue)
    ci = bootstrap((patched, base), lambda a, b: statistics.median(a) / statistics.median(b), vectorized=False,
                   n_resamples=2000, method="percentile", rng=1).confidence_interval  # the oracle, unvectorized
    assert v.p == pytest.approx(p) and p < ALPHA
    assert v.interval is not None and v.interval[0] > LIMIT and v.interval[0] == pytest.approx(ci.low, rel=0.05)
    assert v.text == f"slower (95% interval {v.interval[0]:.2f}-{v.interval[1]:.2f}x, Mann-Whitney U p=0.004, 5 runs per side)"
    (message,) = _findings(base, patched)
    assert message.startswith("vdso_test_getrandom bench-single [vdso] is 10.00x slower on the patched tree (plain): 0.101s -> 1.010s")
    assert message.endswith("(medians, threshold 1.25x; 95% interval 9.61-10.52x, Mann-Whitney U p=0.004, 5 runs per side)")


def test_aa_samples_of_real_noise_give_no_verdict() -> None:
    rows = _aa_rows()
    assert len(rows) == 72 and all(len(b) == len(p) == 5 for b, p in rows)
    # The statistics alone, the busy-host rule aside (no load given): no row is judged slower or faster.
    assert [v.text for v in (judge(b, p, LIMIT) for b, p in rows) if v.significant] == []
    # The noise is real: the first 3 runs a side of some rows were apart beyond 1.25x, a verdict by the old rule.
    assert sum(_ranges_rule(b[:3], p[:3]) for b, p in rows) >= 1


def test_a_slowdown_not_clear_of_the_noise_is_no_verdict() -> None:
    assert statistics.median(MINGLED[1]) / statistics.median(MINGLED[0]) == pytest.approx(1.4)
    v = judge(*MINGLED, LIMIT)
    assert v.outcome is Trend.NO_CHANGE and v.text.startswith("no significant change (95% interval 0.93-2.10x, Mann-Whitney U p=0.048")
    assert _findings(*MINGLED) == []


def test_a_difference_whose_interval_reaches_the_threshold_is_not_clearly_beyond_it() -> None:
    assert max(BASE8) > min(PATCHED8)
    v = judge(BASE8, PATCHED8, LIMIT)
    assert v.p is not None and v.p < ALPHA and v.interval is not None and v.interval[0] < LIMIT < v.interval[1]
    assert v.outcome is Trend.NO_CHANGE and v.text.startswith("not clearly beyond the 1.25x threshold (95% interval 1.19-1.38x")
    assert judge(BASE8, PATCHED8, 1.15).outcome is Trend.SLOWER  # the same figures, a lower --slower-than


def test_a_significant_difference_within_the_threshold_is_no_finding() -> None:
    base, patched = [1.00, 1.01, 1.02, 1.005, 1.015], [1.10, 1.11, 1.12, 1.105, 1.115]  # apart, but 1.10x
    v = judge(base, patched, LIMIT)
    assert v.outcome is Trend.NO_CHANGE and v.text.startswith("within the 1.25x threshold (95% interval 1.08-1.11x")
    assert _findings(base, patched) == [] and _findings(base, patched, limit=1.05) != []


def test_apart_beyond_the_threshold_is_slower_and_faster_is_its_mirror() -> None:
    assert judge(*APART, LIMIT).text == "slower (95% interval 1.36-1.45x, Mann-Whitney U p=0.004, 5 runs per side)"
    assert judge(APART[1], APART[0], LIMIT).outcome is Trend.FASTER
    assert _findings(APART[1], APART[0]) == []  # faster is a verdict, not a finding


def test_the_same_samples_always_give_the_same_interval() -> None:
    assert judge(*MINGLED, LIMIT).interval == judge(*MINGLED, LIMIT).interval  # the bootstrap is seeded


# --- the busy host ---------------------------------------------------------------------------------------------------

def _reading(at: float, busy: float, ours: float, steal: float = 0.0, pressure: float | None = 0.0) -> Reading:
    return Reading(at, busy, steal, ours, pressure, 1.0)


def test_a_busy_host_is_not_judged_and_the_figures_say_why() -> None:
    busy = hostload.since(_reading(0, 0, 0, pressure=0), _reading(10, 20, 6, pressure=9.5))  # 2 CPUs busy, 0.6 of them ours
    assert (busy.others, busy.idle, busy.waiting, busy.busy) == (pytest.approx(1.4), 0.0, pytest.approx(0.95), True)
    v = judge(*APART, LIMIT, busy)
    assert (v.outcome, v.method, v.load) == (Trend.BUSY, Method.MANN_WHITNEY_BOOTSTRAP, busy)
    assert v.text.startswith("not judged: the machine was busy (other work used 1.4 of 2 CPUs, 0.0 left idle, "
                             "tasks waited for a CPU 95% of the time, load 1.0 -> 1.0, over 10 s; 95% interval")
    assert _result(*APART, busy).judged(LIMIT).slower is False
    assert judge([1.0] * 3, [9.0] * 3, LIMIT, busy).outcome is Trend.NOT_ENOUGH_RUNS  # too few runs is said first


def test_our_own_load_never_makes_the_host_busy() -> None:
    # Two guests at once, or bench-multi's threads: the whole machine busy, all of it ours.
    ours = hostload.since(_reading(0, 0, 0), _reading(10, 20, 19.8, pressure=9.0))
    assert ours.others == pytest.approx(0.02) and ours.busy is False
    # Time the hypervisor stole counts as others'; so does a machine left with idle CPUs not count as busy.
    stolen = hostload.since(_reading(0, 0, 0), _reading(10, 12, 10, steal=8))
    assert (stolen.stolen, stolen.busy) == (pytest.approx(0.8), True)
    roomy = HostLoad(10, 64, 40.0, 0.0, 23.0, 0.0, (40.0, 41.0))
    assert roomy.busy is False  # 40 of 64 CPUs taken by others, 23 idle: nothing waited for ours


def test_the_sandboxs_programs_count_as_ours(tmp_path: Path) -> None:
    # getrusage() never sees them (bwrap exits before its PID namespace's init is reaped): the sandbox reports them.
    # Two at once, from two threads, as the base's and the patched guest run.
    from concurrent.futures import ThreadPoolExecutor

    from reviewer.run.sandbox import Sandbox

    def busy(n: int) -> float:
        done = Sandbox(tmp_path / f"s{n}").run(["bash", "-c", "i=0; while ((i < 200000)); do ((i++)); done; times"], cwd=tmp_path,
                                               timeout=120)
        assert done.returncode == 0, done.output
        user, system = re.findall(r"(\d+)m([\d.]+)s", done.output)[0:2]  # the shell's own CPU time, as `times` gives it
        return sum(int(m) * 60 + float(s) for m, s in (user, system))

    before = hostload.read()
    with ThreadPoolExecutor(2) as pool:
        spent = sum(pool.map(busy, (1, 2)))
    after = hostload.read()
    assert spent > 0.2 and after.ours - before.ours >= spent * 0.9, (spent, after.ours - before.ours)


# --- the boot stage: dmapool_test's times, one boot per side per run -----------------------------------------------

def _side(tree: str, times: list[float]) -> ab.BootedKernel:
    build = kconfig.Build(ok=True, seconds=1.0, image=Path("bzImage"), config=(), log="")
    consoles = [f"dmapool test: size:16   align:16   blocks:8192 time:{t:g}\n" for t in times]
    return ab.BootedKernel(tree, "plain", build,
                           tuple(Boot(c, 2.0, timed_out=False, accel="kvm", returncode=None, log=None) for c in consoles))


def _boot_findings(base: list[float], patched: list[float], load: HostLoad | None = None) -> list[str]:
    bench, findings = ab.compare([intests.BUILTIN[0]], _side("base", base), _side("patched", patched), LIMIT, load)
    assert [b.metric for b in bench] == ["size:16 align:16 blocks:8192"] and bench[0].verdict is not None
    assert bench[0].verdict.load is load
    return [f.message for f in findings]


def test_boot_boots_apart_are_a_finding_that_names_the_tests() -> None:
    (message,) = _boot_findings([1000, 1020, 1050, 1010, 1030], [1400, 1430, 1470, 1420, 1450], QUIET)
    assert message == ("dmapool_test is slower on the patched tree (plain): size:16 align:16 blocks:8192 1.40x "
                       "(1020us -> 1430us, 95% interval 1.36-1.45x, Mann-Whitney U p=0.004, 5 runs per side) (threshold 1.25x)")


def test_boot_mingled_few_or_busy_boots_are_no_finding() -> None:
    assert _boot_findings([1000, 1500, 2000, 1200, 1700], [1900, 2100, 2300, 1400, 2200]) == []
    assert _boot_findings([1000, 1020, 1050], [1400, 1430, 1470]) == []  # 3 boots a side: not enough
    assert _boot_findings([1000], [5000]) == []
    busy = HostLoad(60.0, 2, 1.3, 0.0, 0.0, 0.9, (3.0, 3.1))
    assert _boot_findings([1000, 1020, 1050, 1010, 1030], [1400, 1430, 1470, 1420, 1450], busy) == []


# --- thresholds under TCG ------------------------------------------------------------------------------------------

# 5 v 5 shaped like what the real tier measured of a flavour doing the same work in two TCG-emulated kernel
# builds (ppc64le guests, timens: 1.25x and 1.32x apart, the ranges apart): 1.32x here.
TCG_SAME_WORK = ([9.4, 9.6, 9.7, 9.5, 9.65], [12.0, 12.7, 13.1, 12.4, 12.9])


def test_under_tcg_the_default_threshold_is_wider_and_an_explicit_one_is_kept() -> None:
    assert (SLOWER_THAN, SLOWER_THAN_TCG) == (1.25, 1.5)
    assert [slower_than(None, a) for a in ("", "kvm", "tcg")] == [1.25, 1.25, 1.5]
    assert [slower_than(1.1, a) for a in ("", "kvm", "tcg")] == [1.1, 1.1, 1.1]  # --slower-than says so
    assert statistics.median(TCG_SAME_WORK[1]) / statistics.median(TCG_SAME_WORK[0]) == pytest.approx(1.32, abs=0.005)
    under_tcg = judge(*TCG_SAME_WORK, slower_than(None, "tcg"))
    assert under_tcg.outcome is Trend.NO_CHANGE and under_tcg.limit == 1.5
    assert under_tcg.text.startswith("within the 1.5x threshold (95% interval 1.25-1.37x")
    assert judge([1.0, 1.1, 1.05, 1.02, 1.08], [6.0, 6.3, 6.1, 6.2, 6.15], 1.5).outcome is Trend.SLOWER  # the 6x VDSO32 slowdown


# --- the reports show the verdict per row ---------------------------------------------------------------------------

def _review(*results: BenchResult) -> Review:
    series = Series("demo", 1, "demo@example.org", Person("A", "a@example.org"), None, 0, ())
    return Review(series, benchmarks=tuple(r.judged(LIMIT) for r in results), slower_than=LIMIT)


def test_json_gives_each_benchmark_its_verdict_method_interval_and_host_load() -> None:
    busy = HostLoad(61.04, 2, 1.33, 0.0, 0.0, 0.97, (2.5, 3.9))
    doc = json_report.document(_review(_result(*MINGLED, QUIET), _result(*APART, QUIET), _result([1.0], [2.0]), _result(*APART, busy)))
    rows = doc["benchmarks"]
    assert [r["verdict"] for r in rows] == ["no-change", "slower", "not-enough-runs", "busy-host"]
    assert [r["test"] for r in rows] == ["mann-whitney-u+bootstrap", "mann-whitney-u+bootstrap", None, "mann-whitney-u+bootstrap"]
    assert rows[1]["interval"] == [1.359, 1.45] and rows[1]["confidence"] == CONFIDENCE and rows[1]["alpha"] == ALPHA
    assert 0 < rows[1]["p"] < ALPHA and rows[1]["min_runs"] == 5 and rows[1]["base_runs"] == APART[0]
    assert rows[2]["interval"] is None and rows[2]["p"] is None and rows[2]["host_load"] is None
    assert rows[2]["verdict_text"] == "not enough runs for a verdict (1 run per side; a verdict needs 5 a side)"
    assert rows[3]["host_load"] == {"seconds": 61.0, "cpus": 2, "others": 1.33, "stolen": 0.0, "idle": 0.0, "waiting": 0.97,
                                    "load": [2.5, 3.9], "busy": True}
    assert rows[0]["host_load"]["busy"] is False and [r["threshold"] for r in rows] == [LIMIT] * 4
    json.dumps(doc)  # plain JSON types only


def test_terminal_shows_the_verdict_and_marks_only_a_judged_slowdown() -> None:
    console = Console(width=300, record=True, color_system="truecolor", force_terminal=True, file=open(os.devnull, "w"))  # noqa: SIM115
    terminal.render(_review(_result(*MINGLED), _result(*APART)), console)
    text = console.export_text(styles=True, clear=False)
    plain = console.export_text()
    assert "no significant change (95% interval 0.93-2.10x" in plain
    assert "slower (95% interval 1.36-1.45x, Mann-Whitney U p=0.004, 5 runs per side)" in plain
    assert len(re.findall(r"\x1b\[1;31m1\.40x", text)) == 1  # two 1.40x ratios, one of them beyond the noise


def test_the_reply_gives_the_verdict_per_benchmark() -> None:
    text = email.body(_review(_result(*MINGLED), _result([1.0, 1.0, 1.1], [2.0, 2.0, 2.1])), [], email.ReplyOptions("R <r@example.org>"),
                      summary=True)
    words = " ".join(text.split())  # however the reply wraps its lines
    assert "1.500 -> 2.100 s (1.40x) no significant change (95% interval 0.93-2.10x, Mann-Whitney U p=0.048, 5 runs per side)" in words
    assert "1.000 -> 2.000 s (2.00x) not enough runs for a verdict (3 runs per side; a verdict needs 5 a side)" in words


def test_start_up_does_not_import_scipy() -> None:
    # What `review --help` loads, and the modules that judge and report: scipy (~0.3 s) waits for a comparison.
    code = ("import sys, reviewer.cli, reviewer.boot.ab, reviewer.selftests.stage, reviewer.report.json, reviewer.report.terminal; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'numpy', 'reviewer')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "'reviewer.verdict'" in loaded and "'reviewer.hostload'" in loaded and "scipy" not in loaded and "numpy" not in loaded
