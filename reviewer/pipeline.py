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
from reviewer import worktree
from reviewer.checks import CHECKS
from reviewer.errors import ApplyError, ConfigError, ReviewerError
from reviewer.model import ApplyResult, Finding, Level, Review, Series, StageResult, StageStatus
from reviewer.patchparse import parse_diff
from reviewer.rules import RULES_DIR, evaluate, load_rules

Progress = Callable[[str], AbstractContextManager[None]]


@dataclass(frozen=True)
class Request:
    target: str
    cwd: Path = field(default_factory=Path.cwd)
    revision: int | None = None
    debug: bool = False
    tree: Path | None = None  # the user's kernel git tree, for the apply stage
    base: str | None = None  # --base REF overrides the series' base-commit
    lore_url: str | None = None  # --lore-url: the public-inbox archive to fetch Message-IDs from
    no_cache: bool = False  # --no-cache: refetch even a freshly cached thread
    offline: bool = False  # --offline: only the thread cache, never the network


@dataclass
class _Run:
    series: Series | None = None
    findings: list[Finding] = field(default_factory=list)
    stages: list[StageResult] = field(default_factory=list)
    apply: ApplyResult | None = None

    def review(self) -> Review:
        return Review(self.series, tuple(self.findings), tuple(self.stages), self.apply)


def review(request: Request, progress: Progress | None = None) -> tuple[Review, ReviewerError | None]:
    """Run every stage; return the review and the error that stopped it, if any."""
    run = _Run()
    steps: list[tuple[str, Callable[[], str]]] = [
        ("load", lambda: _load(run, request)),
        ("parse", lambda: _parse(run)),
        ("check", lambda: _check(run)),
    ]
    if request.tree is not None:
        steps.append(("apply", lambda: _apply(run, request)))
    for name, step in steps:
        error = _stage(run, name, step, progress)
        if error is not None:
            return run.review(), error
    if request.tree is None:
        run.stages.append(StageResult("apply", StageStatus.SKIPPED, 0.0, "no kernel tree given (--tree)"))
    run.stages.append(StageResult("selftests", StageStatus.SKIPPED, 0.0, "the selftest stage is not built yet"))
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
    remote = targets.Remote(request.lore_url, request.no_cache, request.offline)
    run.series = targets.load(target, request.cwd, request.revision, request.debug, remote)
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
    # Declarative rules stamp their own "<rule>/<requirement>" ids and levels; no base tree yet.
    run.findings.extend(evaluate(load_rules(RULES_DIR), run.series, None))
    return f"{len(CHECKS)} checks, {len(run.findings)} findings"


def _apply(run: _Run, request: Request) -> str:
    assert run.series is not None and request.tree is not None
    tree = request.tree
    if not worktree.is_git_tree(tree):
        raise ConfigError(f"--tree {tree}: not a git repository", "point --tree at a kernel git checkout")
    base, source = worktree.choose_base(tree, run.series, request.base)
    if source == "head":
        why = f"base-commit {run.series.base_commit} is not in the tree" if run.series.base_commit else "the series names no base-commit"
        run.findings.append(Finding("apply-base", Level.WARNING, f"{why}; applied to HEAD ({base[:12]})",
                                    hint="authors: send with `git format-patch --base=auto` or b4"))
    with worktree.isolated(tree, base) as wt:
        results = worktree.apply_series(wt, run.series)
    run.apply = ApplyResult(base, source, results)
    failed = run.apply.failed
    if failed is not None:
        total = run.series.total
        raise ApplyError(f"patch {failed.index}/{total} does not apply to {base[:12]}: {failed.detail}",
                         "check the base with --base REF; the tree was left untouched")
    return f"{len(results)} patches applied to {base[:12]} ({source})"


def _stamp(rule: str, level: Level, found: Iterator[Finding]) -> Iterator[Finding]:
    """The engine, not the check, owns the rule id and the level."""
    for finding in found:
        yield replace(finding, rule=rule, level=level)
