"""A series of more than two patches has a cover letter (`[PATCH 0/N]`).

Why: the cover letter explains what the series does as a whole and carries the changelog,
the base and the review tags for the series (Documentation/process/submitting-patches.rst,
"Explicit In-Reply-To headers"; `git format-patch --cover-letter`).
PASS: `[PATCH 0/3]` followed by 1/3 to 3/3.
FAIL: `[PATCH 1/3]` to `[PATCH 3/3]` with no 0/3.
"""
from __future__ import annotations

from collections.abc import Iterator

from reviewer.model import Finding, Level, Series

ID = "cover-letter"
LEVEL = Level.WARNING


def check(series: Series) -> Iterator[Finding]:
    if series.cover is None and series.total > 2:
        yield Finding("", LEVEL, f"a series of {series.total} patches has no cover letter", None,
                      hint="send with `git format-patch --cover-letter` or `b4 send`")
