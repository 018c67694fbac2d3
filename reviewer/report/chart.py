"""A benchmark row as a picture: each run one mark, base and patched side by side, for the HTML page.

The geometry only; templates/review.html draws it as inline SVG (no script, no library: the page must
open offline and under a Content-Security-Policy that allows no script). The y axis starts at zero, so
the heights read as the ratio the verdict is about: a patched median 1.3 times the base's stands 30%
higher. The threshold (--slower-than, or the one the row was judged against) is a dashed line at the
base median times it, across the patched side: patched runs above it are beyond the threshold.
Runs are drawn in the order they ran, left to right, so a drift during the review shows as a slope.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from reviewer.model import BenchResult

WIDTH, HEIGHT = 420, 190
# The right margin holds the threshold's label, beside its line rather than over the runs.
_LEFT, _RIGHT, _TOP, _BOTTOM, _GAP = 56, 48, 12, 26, 14
SIDES = ("base", "patched")


@dataclass(frozen=True)
class Mark:
    side: str  # base | patched
    run: int  # 1-based, in the order the side's runs ran
    value: float
    x: float
    y: float


@dataclass(frozen=True)
class Level:
    """A horizontal line: a side's median, the threshold, or a tick of the axis."""

    y: float
    x1: float
    x2: float
    value: float
    label: str = ""  # a tick's figure, the threshold's ratio, a median's side


@dataclass(frozen=True)
class Panel:
    side: str
    x: float
    width: float
    runs: int


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bottom: float  # the y of the axis' zero
    panels: tuple[Panel, ...]
    marks: tuple[Mark, ...]
    medians: tuple[Level, ...]
    ticks: tuple[Level, ...]
    threshold: Level | None


def chart(b: BenchResult, limit: float) -> Chart:
    """B's runs drawn against LIMIT, the ratio above which the patched tree counts as slower."""
    samples = {"base": b.base_samples, "patched": b.patched_samples}
    medians = {"base": b.base, "patched": b.patched}
    line = b.base * limit if b.base else None
    step = _step(max([*b.base_samples, *b.patched_samples, line or 0.0]) or 1.0)
    y = _Scale(math.ceil(max([*b.base_samples, *b.patched_samples, line or 0.0, step]) * 1.04 / step) * step)
    width = (WIDTH - _LEFT - _RIGHT - _GAP) / 2
    panels = tuple(Panel(side, _LEFT + i * (width + _GAP), width, len(samples[side])) for i, side in enumerate(SIDES))
    marks = tuple(Mark(p.side, i + 1, v, round(p.x + (i + 0.5) * p.width / p.runs, 2), y(v))
                  for p in panels for i, v in enumerate(samples[p.side]))
    middles = tuple(Level(y(m), p.x, p.x + p.width, m, p.side) for p in panels if (m := medians[p.side]) is not None)
    ticks = tuple(Level(y(v), _LEFT - 4, WIDTH - _RIGHT, v, _number(v, step)) for v in _ticks(y.top, step))
    patched = panels[1]
    threshold = Level(y(line), patched.x, patched.x + patched.width, line, f"{limit:g}x") if line is not None else None
    return Chart(WIDTH, HEIGHT, y.bottom, panels, marks, middles, ticks, threshold)


@dataclass(frozen=True)
class _Scale:
    """Figures to heights: zero at the bottom of the plot, TOP at its top."""

    top: float
    bottom: float = HEIGHT - _BOTTOM

    def __call__(self, value: float) -> float:
        return round(self.bottom - (self.bottom - _TOP) * value / self.top, 2)


def _step(top: float) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving three to six ticks up to TOP."""
    raw = top / 4
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _ticks(top: float, step: float) -> list[float]:
    return [i * step for i in range(round(top / step) + 1)]


def _number(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{value:.{decimals}f}"
