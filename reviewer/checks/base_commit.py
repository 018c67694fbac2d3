"""The series names the commit it applies to (`base-commit:`).

Why: without it reviewers, CI and b4 have to guess the base, and a series that does not
apply to the guess looks broken (Documentation/process/submitting-patches.rst,
"Providing base tree information"). A warning for authors: the review still runs.
PASS: a series sent with `git format-patch --base=auto`: `base-commit: 6bbeb48e...`.
FAIL: the same series without the base-commit line.
"""
from __future__ import annotations

from collections.abc import Iterator

from reviewer.model import Finding, Level, Series

ID = "base-commit"
LEVEL = Level.WARNING


def check(series: Series) -> Iterator[Finding]:
    if not series.base_commit:
        yield Finding("", LEVEL, "the series names no base-commit", None,
                      hint="authors: send with `git format-patch --base=auto` or b4")
