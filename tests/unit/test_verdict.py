"""Benchmark verdicts: `slower` only beyond --slower-than AND beyond the noise (reviewer/verdict.py), in both stages and every report."""
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
from scipy.stats import mannwhitneyu

from reviewer.boot import ab, intests, kconfig
from reviewer.boot.qemu import Boot
from reviewer.model import SLOWER_THAN, SLOWER_THAN_TCG, BenchResult, Level, Person, Review, Series, slower_than
from reviewer.report import email, terminal
from reviewer.report import json as json_report
from reviewer.selftests import stage
from reviewer.verdict import Method, Trend, judge, mann_whitney_reachable

LIMIT = 1.25
# 3 v 3, medians 1.5 -> 2.1 (1.40x), but the slowest base run (2.0) is slower than the fastest patched one (1.9).
OVERLAPPING = ([1.0, 1.5, 2.0], [1.9, 2.1, 2.3])
# 3 v 3, every patched run slower than every base run, 1.40x.
APART = ([1.00, 1.02, 1.05], [1.40, 1.43, 1.47])
# 8 v 8, patched ~1.3x slower; the ranges overlap (1.15 < 1.20), the ranks still tell them apart.
BASE8 = [1.00, 1.03, 0.98, 1.10, 1.05, 0.97, 1.20, 1.01]
PATCHED8 = [1.25, 1.40, 1.31, 1.15, 1.36, 1.28, 1.33, 1.45]


def _result(base: list[float], patched: list[float], runs: int | None = None) -> BenchResult:
    return BenchResult.of("vdso_test_getrandom bench-single", "plain", "vdso", "s", base, patched, runs or max(len(base), len(patched)))


def _findings(base: list[float], patched: list[float], limit: float = LIMIT) -> list[str]:
    judged, findings = stage.judge_benchmarks([_result(base, patched)], limit)
    assert len(judged) == 1 and judged[0].verdict is not None
    assert all(f.rule == "benchmarks" and f.level is Level.WARNING for f in findings)
    return [f.message for f in findings]


# --- the selftest stage ----------------------------------------------------------------------------------------

def test_overlapping_ranges_at_a_high_ratio_are_no_finding() -> None:
    assert statistics.median(OVERLAPPING[1]) / statistics.median(OVERLAPPING[0]) == pytest.approx(1.4)
    assert _findings(*OVERLAPPING) == []
    v = judge(*OVERLAPPING, LIMIT)
    assert (v.outcome, v.method) == (Trend.NO_CHANGE, Method.RANGES)
    assert v.text == "no significant change (ranges overlap, 3 runs per side)"


def test_ranges_apart_beyond_the_threshold_are_a_finding_that_names_the_test() -> None:
    (message,) = _findings(*APART)
    assert message.startswith("vdso_test_getrandom bench-single [vdso] is 1.40x slower on the patched tree (plain): 1.020s -> 1.430s")
    assert message.endswith("(medians, threshold 1.25x; ranges do not overlap, 3 runs per side)")


def test_eight_runs_per_side_use_mann_whitney_u_with_its_p_in_the_finding() -> None:
    assert max(BASE8) > min(PATCHED8)  # the range test would not see it
    oracle = float(mannwhitneyu(PATCHED8, BASE8, alternative="greater").pvalue)
    assert oracle < 0.05
    (message,) = _findings(BASE8, PATCHED8)
    p = re.search(r"; Mann-Whitney U p=([\d.e-]+), 8 runs per side\)$", message)
    assert p and float(p[1]) == pytest.approx(oracle, rel=0.05), message
    v = judge(BASE8, PATCHED8, LIMIT)
    assert (v.outcome, v.method) == (Trend.SLOWER, Method.MANN_WHITNEY) and v.p == pytest.approx(oracle)


def test_eight_runs_per_side_of_noise_are_no_finding() -> None:
    base, patched = BASE8, [1.30, 0.99, 1.02, 1.31, 1.28, 0.98, 1.29, 1.32]  # 1.28x by the medians, half of it noise
    assert statistics.median(patched) / statistics.median(base) > LIMIT
    assert _findings(base, patched) == []
    assert judge(base, patched, LIMIT).text.startswith("no significant change (Mann-Whitney U p=")


def test_one_run_per_side_is_never_a_finding() -> None:
    assert _findings([1.0], [10.0]) == []
    v = judge([1.0], [10.0], LIMIT)
    assert (v.outcome, v.method, v.text) == (Trend.SINGLE_RUN, None, "one run per side: not a verdict")
    assert _findings([1.0], [10.0, 10.1, 10.2]) == []
    assert judge([1.0], [10.0, 10.1], LIMIT).text == "one run on the base side: not a verdict"


def test_a_significant_difference_within_the_threshold_is_no_finding() -> None:
    base, patched = [1.00, 1.01, 1.02], [1.10, 1.11, 1.12]  # apart, but 1.10x
    assert _findings(base, patched) == []
    v = judge(base, patched, LIMIT)
    assert v.outcome is Trend.NO_CHANGE and v.text == "within the 1.25x threshold (ranges do not overlap, 3 runs per side)"
    assert _findings(base, patched, limit=1.05) != []  # the same figures, a lower --slower-than


def test_faster_is_a_verdict_not_a_finding() -> None:
    assert _findings(APART[1], APART[0]) == []
    assert judge(APART[1], APART[0], LIMIT).outcome is Trend.FASTER


def test_when_mann_whitney_u_can_reach_p_below_005() -> None:
    # the smallest one-sided p is 1 / C(n + m, n): 3 v 3 gives 1/20 = 0.05 exactly, which is not below 0.05
    assert not mann_whitney_reachable(3, 3) and not mann_whitney_reachable(2, 4)
    assert mann_whitney_reachable(4, 4) and mann_whitney_reachable(3, 4) and mann_whitney_reachable(2, 5)
    assert float(mannwhitneyu([2, 3, 4], [0, 0.5, 1], alternative="greater").pvalue) == pytest.approx(0.05)  # the oracle agrees
    assert judge([1.0, 1.01, 1.02, 1.03], [1.5, 1.51, 1.52, 1.53], LIMIT).test == "Mann-Whitney U p=0.014, 4 runs per side"


# --- the boot stage: dmapool_test's times, one boot per side per run -----------------------------------------------

def _side(tree: str, times: list[float]) -> ab.Side:
    build = kconfig.Build(True, 1.0, Path("bzImage"), (), "")
    consoles = [f"dmapool test: size:16   align:16   blocks:8192 time:{t:g}\n" for t in times]
    return ab.Side(tree, "plain", build, tuple(Boot(c, 2.0, False, "kvm", None, None) for c in consoles))


def _boot_findings(base: list[float], patched: list[float]) -> list[str]:
    bench, findings = ab.compare([intests.BUILTIN[0]], _side("base", base), _side("patched", patched), LIMIT)
    assert [b.metric for b in bench] == ["size:16 align:16 blocks:8192"] and bench[0].verdict is not None
    return [f.message for f in findings]


# 3 v 3 shaped like what the real tier measured of a flavour doing the same work in two TCG-emulated kernel
# builds (ppc64le guests, timens: 1.25x and 1.32x apart, the ranges apart): 1.32x here.
TCG_SAME_WORK = ([9.4, 9.6, 9.7], [12.0, 12.7, 13.1])


def test_under_tcg_the_default_threshold_is_wider_and_an_explicit_one_is_kept() -> None:
    assert (SLOWER_THAN, SLOWER_THAN_TCG) == (1.25, 1.5)
    assert [slower_than(None, a) for a in ("", "kvm", "tcg")] == [1.25, 1.25, 1.5]
    assert [slower_than(1.1, a) for a in ("", "kvm", "tcg")] == [1.1, 1.1, 1.1]  # --slower-than says so
    ratio = statistics.median(TCG_SAME_WORK[1]) / statistics.median(TCG_SAME_WORK[0])
    assert ratio == pytest.approx(1.32, abs=0.005)
    assert judge(*TCG_SAME_WORK, slower_than(None, "")).outcome is Trend.SLOWER  # on hardware 1.32x beyond the noise is news
    under_tcg = judge(*TCG_SAME_WORK, slower_than(None, "tcg"))
    assert under_tcg.outcome is Trend.NO_CHANGE and under_tcg.limit == 1.5
    assert under_tcg.text == "within the 1.5x threshold (ranges do not overlap, 3 runs per side)"
    assert judge([1.0, 1.1, 1.05], [6.0, 6.3, 6.1], 1.5).outcome is Trend.SLOWER  # the 6x VDSO32 slowdown still shows


def test_boot_overlapping_boots_are_no_finding() -> None:
    assert _boot_findings([1000, 1500, 2000], [1900, 2100, 2300]) == []


def test_boot_boots_apart_are_a_finding_that_names_the_test() -> None:
    (message,) = _boot_findings([1000, 1020, 1050], [1400, 1430, 1470])
    assert message == ("dmapool_test is slower on the patched tree (plain): size:16 align:16 blocks:8192 1.40x "
                       "(1020us -> 1430us, ranges do not overlap, 3 runs per side) (threshold 1.25x)")


def test_boot_one_boot_per_side_is_no_finding() -> None:
    assert _boot_findings([1000], [5000]) == []


# --- the reports show the verdict per row ---------------------------------------------------------------------------

def _review(*results: BenchResult) -> Review:
    series = Series("demo", 1, "demo@example.org", Person("A", "a@example.org"), None, 0, ())
    return Review(series, benchmarks=tuple(r.judged(LIMIT) for r in results), slower_than=LIMIT)


def test_json_gives_each_benchmark_its_verdict_and_test() -> None:
    doc = json_report.document(_review(_result(*OVERLAPPING), _result(BASE8, PATCHED8), _result([1.0], [2.0])))
    rows = [{k: b[k] for k in ("verdict", "test", "verdict_text")} for b in doc["benchmarks"]]
    assert rows[0] == {"verdict": "no-change", "test": "ranges", "verdict_text": "no significant change (ranges overlap, 3 runs per side)"}
    assert rows[1]["verdict"] == "slower" and rows[1]["test"] == "mann-whitney-u" and 0 < doc["benchmarks"][1]["p"] < 0.05
    assert rows[2] == {"verdict": "single-run", "test": None, "verdict_text": "one run per side: not a verdict"}
    assert doc["benchmarks"][0]["p"] is None
    assert [b["threshold"] for b in doc["benchmarks"]] == [LIMIT, LIMIT, None]  # what each verdict was judged against
    json.dumps(doc)  # plain JSON types only


def test_terminal_shows_the_verdict_and_marks_only_a_judged_slowdown() -> None:
    console = Console(width=250, record=True, color_system="truecolor", force_terminal=True, file=open(os.devnull, "w"))  # noqa: SIM115
    terminal.render(_review(_result(*OVERLAPPING), _result(*APART)), console)
    text = console.export_text(styles=True, clear=False)
    plain = console.export_text()
    assert "no significant change (ranges overlap, 3 runs per side)" in plain
    assert "slower (ranges do not overlap, 3 runs per side)" in plain
    assert len(re.findall(r"\x1b\[1;31m1\.40x", text)) == 1  # two 1.40x ratios, one of them beyond the noise


def test_the_reply_gives_the_verdict_per_benchmark() -> None:
    text = email.body(_review(_result(*OVERLAPPING), _result([1.0], [2.0])), [], email.ReplyOptions("R <r@example.org>"), summary=True)
    assert "      1.500 -> 2.100 s (1.40x)\n      no significant change (ranges overlap, 3 runs per side)\n" in text
    assert "      1.000 -> 2.000 s (2.00x)\n      one run per side: not a verdict\n" in text


def test_start_up_does_not_import_scipy() -> None:
    # What `review --help` loads, and the modules that judge and report: scipy (~0.3 s) waits for a comparison.
    code = ("import sys, reviewer.cli, reviewer.boot.ab, reviewer.selftests.stage, reviewer.report.json, reviewer.report.terminal; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'numpy', 'reviewer')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "'reviewer.verdict'" in loaded and "scipy" not in loaded and "numpy" not in loaded
