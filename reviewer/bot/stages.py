"""The stages a job can run, by name (an explicit registry, as the rules' is): each takes the claimed job and
an event set when the job is no longer the worker's (cancelled, or its lease lost), and returns its result
as JSON-able data: the review's JSON document (report/json.py) and its exit status. A stage that raises has
failed, and is tried again until the job's max_attempts.

Each stage is one `review` of the job's mbox (payload "mbox"), offline, asked for more as the stages go on:

- static (pool static): parse and check, no tree;
- apply (pool apply): applied to the list's tree (payload "tree") in a worktree of its own, on the base the review
  chooses (the series' base-commit, else one guessed from its blobs, else the tree's HEAD); the tree's checkpatch.pl;
- build (pool build-ARCH): as apply, and built patch by patch for the job's arch (`--build --arch ARCH`);
- guest (pool guest-ARCH): as apply, and the relevant selftests run base and patched in a guest of the job's
  arch (`--run-tests --run-on vm`).

The event is not passed into the review: a stage stops when its programs' own timeouts say (reviewer/proc.py), and
a result made after the job was taken away is refused (jobs.py)."""
from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from reviewer import app
from reviewer.bot.jobs import Job
from reviewer.report import json as json_report
from reviewer.request import BuildOptions, ReviewRequest, SelftestOptions, SourceOptions

Stage = Callable[[Job, threading.Event], Mapping[str, Any]]
TREE_STAGES = ("apply", "build", "guest")  # the stages that need the list's kernel tree
ARCH_STAGES = ("build", "guest")  # one job per architecture


def _source(job: Job, *, tree: bool) -> SourceOptions:
    mbox = Path(job.payload["mbox"])
    if not tree:
        return SourceOptions(target=str(mbox), cwd=mbox.parent, offline=True)
    return SourceOptions(target=str(mbox), cwd=mbox.parent, offline=True, tree=Path(job.payload["tree"]))


def _result(request: ReviewRequest) -> Mapping[str, Any]:
    done = app.review(request)
    return {"status": int(done.status()), "review": json_report.document(done.review)}


def static(job: Job, stopped: threading.Event) -> Mapping[str, Any]:  # noqa: ARG001 (one review, nothing to stop between)
    """The static review (parse and check, no tree) of the mbox the job names, offline."""
    return _result(ReviewRequest(_source(job, tree=False)))


def apply(job: Job, stopped: threading.Event) -> Mapping[str, Any]:  # noqa: ARG001
    """The review applied to the list's tree: whether each patch applies, and the tree's checkpatch.pl."""
    return _result(ReviewRequest(_source(job, tree=True)))


def build(job: Job, stopped: threading.Event) -> Mapping[str, Any]:  # noqa: ARG001
    """The review applied and built patch by patch for the job's architecture."""
    return _result(ReviewRequest(_source(job, tree=True), build=BuildOptions(run=True, arches=(job.arch,))))


def guest(job: Job, stopped: threading.Event) -> Mapping[str, Any]:  # noqa: ARG001
    """The review applied, and its relevant selftests run base and patched in a guest of the job's architecture."""
    return _result(ReviewRequest(_source(job, tree=True), selftests=SelftestOptions(run=True, run_on="vm"),
                                 build=BuildOptions(arches=(job.arch,))))


STAGES: dict[str, Stage] = {"static": static, "apply": apply, "build": build, "guest": guest}


def register(name: str, stage: Stage) -> None:
    """Add a stage under NAME (the tests' stages; a site's own)."""
    STAGES[name] = stage
