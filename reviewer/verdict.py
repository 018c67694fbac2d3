"""Whether a benchmark's base and patched samples differ by more than their noise: one verdict per row.

A ratio of medians alone is not a verdict: on a shared 2-core machine three runs of the same binary
vary by 30% and more, so a 1.38x ratio can come and go from one review to the next. The patched tree
is `slower` only when BOTH hold:

- the ratio of the medians (patched / base) exceeds the threshold (--slower-than), and
- the difference is larger than the noise, by a one-sided test in the direction of the ratio:
  - a Mann-Whitney U test (scipy.stats.mannwhitneyu) at p < ALPHA when the sample sizes let it
    reach that: its smallest one-sided p, with no ties, is 1 / C(n_base + n_patched, n_base), so
    with 3 runs per side it cannot go below 1/20 = 0.05 (never < 0.05); 4 runs per side (1/70) or
    3 against 4 (1/35) are enough;
  - else (2 or 3 runs per side) the ranges: every patched sample slower than every base sample.

`faster` is the mirror image (ratio below 1 / threshold, significant the other way). A side with one
run is `single-run` and never a verdict; a side with no figure at all is `no-data`.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

ALPHA = 0.05  # one-sided significance level of the Mann-Whitney U test


class Trend(StrEnum):
    SLOWER = "slower"
    FASTER = "faster"
    NO_CHANGE = "no-change"
    SINGLE_RUN = "single-run"
    NO_DATA = "no-data"


class Method(StrEnum):
    MANN_WHITNEY = "mann-whitney-u"
    RANGES = "ranges"


@dataclass(frozen=True)
class Verdict:
    outcome: Trend
    method: Method | None  # None: nothing was tested (a side with one run or none)
    test: str  # what the test found, with the sample sizes: "Mann-Whitney U p=0.012, 8 runs per side"
    text: str  # the whole verdict, as the reports print it: "slower (ranges do not overlap, 3 runs per side)"
    p: float | None = None  # the Mann-Whitney U test's one-sided p
    limit: float | None = None  # the threshold (--slower-than, or its default for where the runs were) it was judged against

    @property
    def significant(self) -> bool:
        return self.outcome in (Trend.SLOWER, Trend.FASTER)


def mann_whitney_reachable(n_base: int, n_patched: int) -> bool:
    """The exact one-sided Mann-Whitney U test can give p < ALPHA with these sample sizes (its smallest
    p, both samples wholly apart and no ties, is 1 / C(n_base + n_patched, n_base))."""
    return n_base > 0 and n_patched > 0 and 1 / math.comb(n_base + n_patched, n_base) < ALPHA


def judge(base: Sequence[float], patched: Sequence[float], limit: float) -> Verdict:
    """BASE's and PATCHED's samples (lower is better) against LIMIT, the --slower-than ratio."""
    if not base or not patched:
        missing = "base" if not base else "patched"
        return Verdict(Trend.NO_DATA, None, "", f"no figure on the {missing} side: not a verdict")
    if min(len(base), len(patched)) == 1:
        return Verdict(Trend.SINGLE_RUN, None, "", f"{_one_run(len(base), len(patched))}: not a verdict")
    mb, mp = statistics.median(base), statistics.median(patched)
    if mb <= 0:
        return Verdict(Trend.NO_DATA, None, "", f"no ratio: the base median is {mb:g}")
    ratio = mp / mb
    slower_side = ratio >= 1  # the direction the one-sided test looks in
    runs = _runs(len(base), len(patched))
    if mann_whitney_reachable(len(base), len(patched)):
        p = _mann_whitney_p(base, patched, "greater" if slower_side else "less")
        method, significant, test = Method.MANN_WHITNEY, p < ALPHA, f"Mann-Whitney U p={p:.2g}, {runs}"
    else:
        apart = min(patched) > max(base) if slower_side else max(patched) < min(base)
        method, significant, test, p = Method.RANGES, apart, f"ranges {'do not overlap' if apart else 'overlap'}, {runs}", None
    beyond = ratio > limit if slower_side else ratio < 1 / limit
    if significant and beyond:
        outcome = Trend.SLOWER if slower_side else Trend.FASTER
        return Verdict(outcome, method, test, f"{outcome} ({test})", p, limit)
    label = f"within the {limit:g}x threshold" if significant and ratio != 1 else "no significant change"
    return Verdict(Trend.NO_CHANGE, method, test, f"{label} ({test})", p, limit)


def _mann_whitney_p(base: Sequence[float], patched: Sequence[float], alternative: str) -> float:
    # Imported here, not at the top: scipy costs ~0.3 s to import, and only a comparison needs it.
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(list(patched), list(base), alternative=alternative).pvalue)
    return p if not math.isnan(p) else 1.0  # all samples tied: no evidence of a difference


def _runs(n_base: int, n_patched: int) -> str:
    return f"{n_base} runs per side" if n_base == n_patched else f"{n_base} base v {n_patched} patched runs"


def _one_run(n_base: int, n_patched: int) -> str:
    if n_base == n_patched:
        return "one run per side"
    return f"one run on the {'base' if n_base == 1 else 'patched'} side"
