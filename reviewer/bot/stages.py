"""The stages a job can run, by name (an explicit registry, as the rules' is): each takes the claimed job and
an event set when the job is no longer the worker's (cancelled, or its lease lost), and returns its result
as JSON-able data. A stage that raises has failed, and is tried again until the job's max_attempts."""
from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from reviewer import app
from reviewer.bot.jobs import Job
from reviewer.report import json as json_report
from reviewer.request import ReviewRequest, SourceOptions

Stage = Callable[[Job, threading.Event], Mapping[str, Any]]


def static(job: Job, stopped: threading.Event) -> Mapping[str, Any]:  # noqa: ARG001 (one review, nothing to stop between)
    """The static review (parse and check, no tree) of the mbox the job names (payload "mbox"), offline."""
    mbox = Path(job.payload["mbox"])
    done = app.review(ReviewRequest(SourceOptions(target=str(mbox), cwd=mbox.parent, offline=True)))
    return {"status": int(done.status()), "review": json_report.document(done.review)}


STAGES: dict[str, Stage] = {"static": static}


def register(name: str, stage: Stage) -> None:
    """Add a stage under NAME (the tests' stages; a site's own)."""
    STAGES[name] = stage
