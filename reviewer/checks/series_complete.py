"""Every patch the series announces (`[PATCH 2/3]`) is present in the thread.

Why: a reviewer who reviews, or a maintainer who applies, an incomplete series misses code;
`git am` of the rest may not even apply.
PASS: a thread with 0/3, 1/3, 2/3 and 3/3.
FAIL: a thread with 0/3, 1/3 and 3/3: "patch 2/3 is missing from the thread".
"""
from __future__ import annotations

from collections.abc import Iterator

from reviewer.model import Finding, Level, Series

ID = "series-complete"
LEVEL = Level.ERROR


def check(series: Series) -> Iterator[Finding]:
    for index in series.missing:
        yield Finding(
            rule="",
            level=LEVEL,
            message=f"patch {index}/{series.total} is missing from the thread",
            patch=index,
            hint="fetch the whole thread, or ask the author to resend the series",
        )
