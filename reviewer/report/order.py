"""What a report says first, and which findings are one fact.

Order by what matters: what stops the series (it does not apply, a patch is missing or damaged),
then errors, then warnings, then infos; within a level by patch (the series as a whole first),
file and line. The terminal lists findings in this order, and the reply says them in it.

One fact once: findings that say the same thing (rule, level, message, hint and file) about
several patches are one Fact naming those patches; so are the reports of one checkpatch type,
whose messages differ only in their figures (`line length of 109 exceeds 100 columns`).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from reviewer.model import Finding, Level, PatchApply, Review

RANK = {Level.ERROR: 0, Level.WARNING: 1, Level.INFO: 2}
# The findings that mean the series as a whole cannot be taken as it is.
BLOCKING = ("series-complete", "patch-damaged")


def blocking(f: Finding) -> bool:
    return any(r.split("/", 1)[0] in BLOCKING for r in (f.sources or (f.rule,)))


def key(f: Finding) -> tuple[int, int, int, str, int]:
    return (0 if blocking(f) else 1, RANK[f.level], f.patch or 0, f.path or "", f.line or 0)


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=key)


def checkpatch_only(f: Finding) -> bool:
    """A report of the tree's checkpatch.pl that no check of ours shares."""
    return all(r.startswith("checkpatch/") for r in (f.sources or (f.rule,)))


@dataclass(frozen=True)
class Fact:
    findings: tuple[Finding, ...]  # one, or the same fact on several patches (or one checkpatch type's reports)

    @property
    def first(self) -> Finding:
        return self.findings[0]

    @property
    def level(self) -> Level:
        return self.first.level

    @property
    def patches(self) -> tuple[int, ...]:
        return tuple(sorted({f.patch for f in self.findings if f.patch is not None}))


def facts(findings: Iterable[Finding]) -> list[Fact]:
    """FINDINGS as facts, in report order (a fact where its first finding is)."""
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for f in ordered(findings):
        same = (f.rule, f.level) if checkpatch_only(f) else (f.rule, f.level, f.message, f.hint, f.path)
        groups.setdefault(same, []).append(f)
    return sorted((Fact(tuple(g)) for g in groups.values()), key=lambda fact: (key(fact.first)[:2], fact.patches))


# apply/worktree.py words a failed patch's detail `PATH: hunk @@ ... @@ does not apply; GIT'S LINES`,
# or only git's lines (joined by "; ") when git named no hunk.
_FAILED = re.compile(r"^(?P<path>.+?): hunk (?P<hunk>@@ [^@]*? @@|at line \d+).*? does not apply; (?P<why>.*)$", re.S)
_GIT_LINE = re.compile(r"; (?=error:|Patch failed|CONFLICT|fatal:)")


@dataclass(frozen=True)
class Failure:
    """The patch git am stopped at: the file and hunk it could not place, and git's own lines."""

    patch: PatchApply
    base: str
    path: str | None
    hunk: str | None
    output: tuple[str, ...]


def failure(review: Review) -> Failure | None:
    a = review.apply
    failed = a.failed if a is not None else None
    if a is None or failed is None:
        return None
    m = _FAILED.match(failed.detail)
    why = m["why"] if m else failed.detail
    hunk = m["hunk"] if m and m["hunk"].startswith("@@") else None
    return Failure(failed, a.base, m["path"] if m else _only_file(review, failed.index), hunk, tuple(_GIT_LINE.split(why)))


def _only_file(review: Review, index: int) -> str | None:
    patch = next((p for p in review.series.patches if p.index == index), None) if review.series else None
    return patch.files[0].path if patch is not None and len(patch.files) == 1 else None
