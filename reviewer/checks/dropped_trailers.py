"""Trailers given in replies that b4 does not apply, because the person they name did not send them.

Why: b4 (and so `b4 am`/`b4 shazam`) applies a reply's `Reviewed-by:`/`Acked-by:`/`Tested-by:`
only when its address (or name) matches the reply's From:; a maintainer who expects a review
to be recorded should know it will not be, and why. Shown as an info: the trailer may still be
real (a reviewer writing from another address), but someone has to add it by hand.
PASS: a reply from `Rev One <rev1@example.org>` saying `Reviewed-by: Rev One <rev1@example.org>`.
FAIL: a reply from `Rev One <rev1@work.example.com>` saying `Reviewed-by: Rev One <rev1@example.org>`.
"""
from __future__ import annotations

from collections.abc import Iterator

from reviewer.model import Finding, Level, Series

ID = "dropped-trailers"
LEVEL = Level.INFO


def check(series: Series) -> Iterator[Finding]:
    for t in series.dropped_trailers:
        yield Finding("", LEVEL, f"`{t.name}: {t.value}` in a reply from {t.sender} is not applied by b4: "
                      "the reply's From: is not the person the trailer names",
                      hint="ask for the trailer from the address it names, or add it by hand if it is genuine")
