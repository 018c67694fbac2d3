"""review(request) -> Review: run the stages in order; a failed stage stops the later ones.

Stages: load (read the input, thread it with b4) -> parse (diffs with unidiff) ->
check (rules and checks) -> apply -> selftests. Each stage is timed and recorded; an error
in a stage is recorded as that stage's failure and returned with what was learned before it.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import target as targets
from reviewer.checks import CHECKS
from reviewer.errors import ReviewerError
from reviewer.model import Finding, Review, Series, StageResult, StageStatus
from reviewer.patchparse import parse_diff

Progress = Callable[[str], AbstractContextManager[None]]


@dataclass(frozen=True)
class Request:
    target: str
    cwd: Path = field(default_factory=Path.cwd)
    revision: int | None = None
    debug: bool = False


@dataclass
class _Run:
    series: Series | None = None
    findings: list[Finding] = field(default_factory=list)
    stages: list[StageResult] = field(default_factory=list)

    def review(self) -> Review:
        return Review(self.series, tuple(self.findings), tuple(self.stages))


def review(request: Request, progress: Progress | None = None) -> tuple[Review, ReviewerError | None]:
    """Run every stage; return the review and the error that stopped it, if any."""
    run = _Run()
    steps: list[tuple[str, Callable[[], str]]] = [
        ("load", lambda: _load(run, request)),
        ("parse", lambda: _parse(run)),
        ("check", lambda: _check(run)),
    ]
    for name, step in steps:
        error = _stage(run, name, step, progress)
        if error is not None:
            return run.review(), error
    for name, why in (("apply", "no kernel tree given (--tree)"), ("selftests", "needs the apply stage")):
        run.stages.append(StageResult(name, StageStatus.SKIPPED, 0.0, why))
    return run.review(), None


def _stage(run: _Run, name: str, step: Callable[[], str], progress: Progress | None) -> ReviewerError | None:
    start = time.perf_counter()
    with progress(name) if progress else contextlib.nullcontext():
        try:
            detail = step()
        except ReviewerError as exc:
            run.stages.append(StageResult(name, StageStatus.FAILED, time.perf_counter() - start, exc.message))
            return exc
    run.stages.append(StageResult(name, StageStatus.OK, time.perf_counter() - start, detail))
    return None


def _load(run: _Run, request: Request) -> str:
    target = targets.classify(request.target, request.cwd)
    run.series = targets.load(target, request.cwd, request.revision, request.debug)
    s = run.series
    return f"{target.kind}: v{s.version}, {len(s.patches)} of {s.total} patches"


def _parse(run: _Run) -> str:
    assert run.series is not None
    patches = tuple(
        replace(p, files=parse_diff(p.diff, f"patch {p.index}/{p.total} ({p.subject})")) for p in run.series.patches
    )
    run.series = replace(run.series, patches=patches)
    files = sum(len(p.files) for p in patches)
    return f"{files} files, +{run.series.added} -{run.series.removed}"


def _check(run: _Run) -> str:
    assert run.series is not None
    for check in CHECKS.values():
        run.findings.extend(_stamp(check.id, check.level, check.run(run.series)))
    return f"{len(CHECKS)} checks, {len(run.findings)} findings"


def _stamp(rule: str, level: object, found: Iterator[Finding]) -> Iterator[Finding]:
    """The engine, not the check, owns the rule id and the level."""
    for finding in found:
        yield replace(finding, rule=rule, level=level)
