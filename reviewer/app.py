"""The application: review(ReviewRequest) -> Reviewed, called by the CLI, a bot and the tests alike.

Around the pipeline it does what every caller needs: it resolves the target (none: the b4 prep branch
checked out, written out as b4 would send it; a git range with no --tree: reviewed against the kernel
tree it is in), runs the stages, and says whether there is a review to report. It never prints, never
exits and imports no typer: a failure is a ReviewerError (reviewer/errors.py) the caller maps to its
exit status, as reviewer/cli/ does.
"""
from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import pipeline
from reviewer.errors import ApplyError, ExitStatus, InputError, ReviewerError, SelftestError, UsageError
from reviewer.model import Finding, Level, Review
from reviewer.progress import Progress
from reviewer.report import b4check
from reviewer.request import ReviewRequest
from reviewer.series import fetch, prep
from reviewer.series import target as targets


@dataclass(frozen=True)
class Reviewed:
    """A review there is something to report of, and the error of the stage that stopped it, if one did
    (a series that does not apply, a selftest regression): reported, and then the exit status."""

    review: Review
    error: ReviewerError | None = None

    def status(self, *, strict: bool = False) -> ExitStatus:
        """The exit status: the stopping stage's, else whether the findings fail (STRICT: warnings too)."""
        return self.error.status if self.error is not None else status_of(self.review.findings, strict=strict)


def review(request: ReviewRequest, progress: Progress | None = None) -> Reviewed:
    """Review what REQUEST names (PROGRESS: what the stages tell the user as they run). Raises the
    ReviewerError that left nothing to report: a target that cannot be read, a config or rule error, ..."""
    with resolved(request) as ready:
        return reviewed(*pipeline.review(ready, progress))


def b4_check(request: ReviewRequest, message: bytes) -> Reviewed:
    """b4's per-patch and series checks: review the series around MESSAGE (the one mail b4 passes on
    stdin), and keep the findings about that message (a cover letter: the series' own)."""

    if not message.strip():
        raise InputError("stdin: empty input, no mail in it", "b4 passes one message on standard input")
    ctx = b4check.context(request.source.cwd, message)
    with tempfile.TemporaryDirectory(prefix="reviewer-b4check-") as scratch:
        path = Path(scratch) / "series.mbox"
        path.write_bytes(ctx.mbox)
        done = reviewed(*pipeline.review(replace(request, source=replace(request.source, target=str(path)))))
    _, found = b4check.select(done.review, fetch.parse_bytes(message), series_on_first=ctx.how == "b4 prep branch")
    return replace(done, review=replace(done.review, findings=tuple(found)))


def reviewed(result: Review, error: ReviewerError | None) -> Reviewed:
    """The pipeline's outcome as a Reviewed, or ERROR raised when it left nothing to report."""
    if not reportable(result, error):
        assert error is not None, "a review without a series stopped at an error"
        raise error
    return Reviewed(result, error)


def reportable(result: Review, error: ReviewerError | None) -> bool:
    """A series that could not be read has nothing to report but the error; one that was read and checked
    is reported even when a later stage (apply, selftests, boot) failed."""
    return result.series is not None and (error is None or isinstance(error, (ApplyError, SelftestError)))


def status_of(findings: Iterable[Finding], *, strict: bool) -> ExitStatus:
    levels = {f.level for f in findings}
    failing = Level.ERROR in levels or (strict and Level.WARNING in levels)
    return ExitStatus.FINDINGS if failing else ExitStatus.OK


@contextlib.contextmanager
def resolved(request: ReviewRequest) -> Iterator[ReviewRequest]:
    """REQUEST with its target resolved: none is the b4 prep branch checked out (an mbox that lives as long
    as the context), and a git range with no tree is reviewed against the kernel tree it is in."""
    source = request.source
    if source.tree is None and (of_range := targets.range_tree(source.target, source.cwd)) is not None:
        source = replace(source, tree=of_range, tree_of_range=True)
    if source.target is not None:
        yield replace(request, source=source)
        return

    branch = prep.find(source.cwd)
    if branch is None:
        raise UsageError("no TARGET given, and the checked-out branch is not a b4 prep branch",
                         "give an mbox, a directory, a git range or a Message-ID; see review --help")
    with tempfile.TemporaryDirectory(prefix="reviewer-prep-") as scratch:
        path = Path(scratch) / f"{branch.branch.replace('/', '-')}.mbox"
        path.write_bytes(prep.mbox(source.cwd, branch))
        yield replace(request, source=replace(source, target=str(path)))
