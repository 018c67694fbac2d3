"""Whether a benchmark's base and patched samples differ by more than their noise: one verdict per row.

A ratio of medians alone is not a verdict, nor are two ranges that do not overlap: on a shared 2-core
machine three runs of the same binary vary by 30% and more, and three runs a side fall apart by chance
(1 time in 20 each way). The patched tree is `slower` only when ALL of these hold:

1. enough runs: the exact one-sided Mann-Whitney U test can reach p < ALPHA with these sample sizes (its
   smallest p, both samples wholly apart, is 1 / C(n_base + n_patched, n_base)): 5 runs a side (1/252) at
   ALPHA = 0.01; with fewer the row shows its numbers and says "not enough runs for a verdict";
2. a host that was not busy while the runs ran (hostload.py: other work, not ours, competed for the CPUs);
   else "not judged: the machine was busy (...)" with the figures;
3. a difference beyond the noise: scipy.stats.mannwhitneyu, one-sided in the direction of the ratio, p < ALPHA;
4. an effect beyond the threshold beyond the noise: scipy.stats.bootstrap's CONFIDENCE interval of the ratio of
   the medians (patched / base; percentile method, resampling each side on its own) lies wholly above the
   threshold (--slower-than), not just its middle.

`faster` is the mirror image (the interval wholly below 1 / threshold). Else the row is `no-change`, said as "no
significant change" (the rank test's p >= ALPHA), "within the 1.25x threshold" (a difference, its interval wholly inside
the threshold) or "not clearly beyond the 1.25x threshold" (a difference, its interval across the threshold). A side with
no figure is `no-data`.

ALPHA is per row and direction: a review judges up to 6 rows (3 flavours in 2 environments) both ways, and at 0.05
one A/A review in two would have a row pass the rank test by chance; the interval then has to clear the threshold too.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reviewer.hostload import HostLoad

ALPHA = 0.01  # one-sided significance level of the Mann-Whitney U test, per row and direction
CONFIDENCE = 0.95  # of the bootstrap interval of the ratio of the medians
RESAMPLES = 9999
SEED = 30  # the bootstrap's resampling is seeded: the same samples always give the same verdict
# The default --bench-runs: the fewest runs a side that can give a verdict (min_runs()); more cost a run each on both trees.
BENCH_RUNS = 5


class Trend(StrEnum):
    SLOWER = "slower"
    FASTER = "faster"
    NO_CHANGE = "no-change"
    NOT_ENOUGH_RUNS = "not-enough-runs"
    BUSY = "busy-host"
    NO_DATA = "no-data"


class Method(StrEnum):
    # The rank test (is there a difference at all?) and the bootstrap interval of the ratio (is it beyond the threshold?).
    MANN_WHITNEY_BOOTSTRAP = "mann-whitney-u+bootstrap"


@dataclass(frozen=True)
class Verdict:
    outcome: Trend
    method: Method | None  # None: nothing was tested (too few runs, no data, a busy host)
    test: str  # the figures that decided it: "95% interval 1.31-1.52x, Mann-Whitney U p=0.004, 5 runs per side"
    text: str  # the whole verdict, as the reports print it: "slower (95% interval ...)"
    p: float | None = None  # the Mann-Whitney U test's one-sided p
    limit: float | None = None  # the threshold (--slower-than, or its default for where the runs were) it was judged against
    interval: tuple[float, float] | None = None  # the CONFIDENCE bootstrap interval of the ratio of the medians
    load: HostLoad | None = None  # the machine while the runs ran (None: not read, e.g. saved samples)
    needs: int = 0  # runs a side a verdict needs (min_runs())

    @property
    def significant(self) -> bool:
        return self.outcome in (Trend.SLOWER, Trend.FASTER)


def document(v: Verdict | None) -> dict[str, object]:
    """The figures behind verdict V, for the JSON report's benchmark rows (docs/json-schema.md); all null without one."""
    return {"interval": [round(x, 3) for x in v.interval] if v and v.interval else None,
            "confidence": CONFIDENCE if v and v.interval else None, "alpha": ALPHA if v else None, "min_runs": v.needs if v else None,
            "host_load": v.load.document() if v and v.load is not None else None}


def mann_whitney_reachable(n_base: int, n_patched: int, alpha: float = ALPHA) -> bool:
    """The exact one-sided Mann-Whitney U test can give p < ALPHA with these sample sizes (its smallest
    p, both samples wholly apart and no ties, is 1 / C(n_base + n_patched, n_base))."""
    return n_base > 0 and n_patched > 0 and 1 / math.comb(n_base + n_patched, n_base) < alpha


def min_runs(alpha: float = ALPHA) -> int:
    """The fewest runs a side with which a verdict can be reached (5 at ALPHA 0.01)."""
    return next(n for n in range(1, 64) if mann_whitney_reachable(n, n, alpha))


def judge(base: Sequence[float], patched: Sequence[float], limit: float, load: HostLoad | None = None) -> Verdict:
    """BASE's and PATCHED's samples (lower is better) against LIMIT, the --slower-than ratio; LOAD: the machine
    while they ran (hostload.since()), None when unknown."""
    needs = min_runs()
    if not base or not patched:
        missing = "base" if not base else "patched"
        return Verdict(Trend.NO_DATA, None, "", f"no figure on the {missing} side: not a verdict", limit=limit, load=load, needs=needs)
    runs = _runs(len(base), len(patched))
    if not mann_whitney_reachable(len(base), len(patched)):
        return Verdict(Trend.NOT_ENOUGH_RUNS, None, runs, f"not enough runs for a verdict ({runs}; a verdict needs {needs} a side)",
                       limit=limit, load=load, needs=needs)
    mb = statistics.median(base)
    if mb <= 0:
        return Verdict(Trend.NO_DATA, None, "", f"no ratio: the base median is {mb:g}", limit=limit, load=load, needs=needs)
    ratio = statistics.median(patched) / mb
    p = _mann_whitney_p(base, patched, "greater" if ratio >= 1 else "less")
    lo, hi = _interval(base, patched)
    test = f"{CONFIDENCE:.0%} interval {lo:.2f}-{hi:.2f}x, Mann-Whitney U p={p:.2g}, {runs}"  # the ratio itself is on the row
    if load is not None and load.busy:
        outcome, text = Trend.BUSY, f"not judged: the machine was busy ({load.text()}; {test})"
    else:
        outcome = _outcome(p, lo, hi, limit)
        text = f"{_label(outcome, p, lo, hi, limit)} ({test})"
    return Verdict(outcome, Method.MANN_WHITNEY_BOOTSTRAP, test, text, p, limit, (lo, hi), load, needs)


def _outcome(p: float, lo: float, hi: float, limit: float) -> Trend:
    if p < ALPHA and lo > limit:
        return Trend.SLOWER
    if p < ALPHA and hi < 1 / limit:
        return Trend.FASTER
    return Trend.NO_CHANGE


def _label(outcome: Trend, p: float, lo: float, hi: float, limit: float) -> str:
    if outcome is not Trend.NO_CHANGE:
        return str(outcome)
    if p >= ALPHA:
        return "no significant change"
    return f"within the {limit:g}x threshold" if 1 / limit < lo and hi < limit else f"not clearly beyond the {limit:g}x threshold"


def _mann_whitney_p(base: Sequence[float], patched: Sequence[float], alternative: str) -> float:
    # scipy costs ~0.57 s to import, and only a comparison needs it (docs/design.md, "Imports kept lazy").
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(list(patched), list(base), alternative=alternative).pvalue)
    return p if not math.isnan(p) else 1.0  # all samples tied: no evidence of a difference


def _interval(base: Sequence[float], patched: Sequence[float]) -> tuple[float, float]:
    """scipy.stats.bootstrap's CONFIDENCE interval of median(patched) / median(base), each side resampled on its own
    (the runs are not pairs); the percentile method: BCa's jackknife is unreliable for a median of a few runs."""
    import numpy as np
    from scipy.stats import bootstrap

    def ratio(p: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(p, axis=axis) / np.median(b, axis=axis)  # type: ignore[no-any-return]

    ci = bootstrap((np.asarray(patched, float), np.asarray(base, float)), ratio, n_resamples=RESAMPLES, confidence_level=CONFIDENCE,
                   method="percentile", vectorized=True, rng=np.random.default_rng(SEED)).confidence_interval
    return float(ci.low), float(ci.high)


def _runs(n_base: int, n_patched: int) -> str:
    if n_base == n_patched:
        return f"{n_base} run{'s' if n_base != 1 else ''} per side"
    return f"{n_base} base v {n_patched} patched runs"
