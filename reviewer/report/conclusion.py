"""The one line that says what a review concludes: it heads the reply and the terminal report.

"The series does not apply to 6bbeb48ebf41: patch 2/3 fails on arch/x86/entry/vdso/vma.c.",
"The series misses patch 2/3: it is not in the thread.", "One error: the vDSO linker script does
not export __vdso_getrandom.", "No errors; 2 warnings, the first: ...", "No errors or warnings:
the series applies to 6bbeb48ebf41." The text is raw: each medium escapes it (escape.py).
"""
from __future__ import annotations

from collections.abc import Sequence

from reviewer.model import Finding, Level, Review
from reviewer.report import order

_WORDS = {1: "One", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight", 9: "Nine"}


def line(review: Review, findings: Sequence[Finding], patch: int | None = None) -> tuple[Level | None, str]:
    """(the level it is about, or None for a clean review; the sentence) for FINDINGS, which are those the
    report shows; PATCH: a reply about that patch alone."""
    what = "This patch" if patch is not None else "The series"
    blocked = _blocked(review, findings, what, patch)
    errors = [f for f in order.ordered(findings) if f.level is Level.ERROR]
    warnings = [f for f in order.ordered(findings) if f.level is Level.WARNING]
    if blocked is not None:
        rest = [f for f in (*errors, *warnings) if not order.blocking(f)]
        return Level.ERROR, blocked + (f" Also {_counts(rest)} below." if rest else "")
    if errors:
        more = f" (and {_count(len(warnings), 'warning')})" if warnings else ""
        return Level.ERROR, f"{_count(len(errors), 'error', capital=True)}{more}{_first(errors)}"
    if warnings:
        return Level.WARNING, f"No errors; {_count(len(warnings), 'warning')}{_first(warnings)}"
    a = review.apply
    if a is None:
        return None, f"No errors or warnings; {what.lower()} was not applied."
    return None, f"No errors or warnings: {what.lower()} applies to {a.base[:12]}."


def _blocked(review: Review, findings: Sequence[Finding], what: str, patch: int | None) -> str | None:
    failed = order.failure(review)
    if failed is not None and patch in (None, failed.patch.index):
        total = review.series.total if review.series else 0
        who = "it" if patch is not None else f"patch {failed.patch.index}/{total}"
        return f"{what} does not apply to {failed.base[:12]}: {who} fails" + (f" on {failed.path}." if failed.path else ".")
    missing = [f.patch for f in findings if f.rule == "series-complete" and f.patch is not None]
    if missing and review.series is not None:
        names = [f"{i}/{review.series.total}" for i in missing]
        said = f"patch {names[0]}: it is" if len(names) == 1 else f"patches {', '.join(names[:-1])} and {names[-1]}: they are"
        return f"The series misses {said} not in the thread."
    return None


def _first(found: list[Finding]) -> str:
    message = found[0].message.rstrip(".")
    return f": {message}." if len(found) == 1 else f", the first: {message}."


def _count(n: int, word: str, *, capital: bool = False) -> str:
    number = _WORDS.get(n, str(n)) if capital else (_WORDS[n].lower() if n in _WORDS else str(n))
    return f"{number} {word}{'s' if n != 1 else ''}"


def _counts(found: list[Finding]) -> str:
    errors = sum(1 for f in found if f.level is Level.ERROR)
    parts = [_count(n, w) for n, w in ((errors, "error"), (len(found) - errors, "warning")) if n]
    return " and ".join(parts)
