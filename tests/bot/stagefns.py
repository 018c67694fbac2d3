"""The tests' stage: it leaves a file per attempt, so that a test can count the runs a job really had."""
from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reviewer.bot.jobs import Job
from reviewer.bot.queue import worker_name


def touch(job: Job, stopped: threading.Event) -> Mapping[str, Any]:
    """Payload: dir (where ID.ATTEMPT.start and .end go, each holding the worker's name), sleep (seconds of
    work), hang (seconds the first attempt waits, unless the job is taken away), fail (attempts that raise),
    wait_stop (wait until the job is taken away)."""
    me = worker_name()
    side = Path(job.payload["dir"])
    (side / f"{job.id}.{job.attempt}.start").write_text(me)
    if job.attempt <= job.payload.get("fail", 0):
        raise RuntimeError(f"attempt {job.attempt} fails")
    if job.payload.get("wait_stop"):
        stopped.wait(30)
        return {"stopped": stopped.is_set()}
    if job.attempt == 1 and stopped.wait(job.payload.get("hang", 0)):
        return {"stopped": True}
    time.sleep(job.payload.get("sleep", 0))
    (side / f"{job.id}.{job.attempt}.end").write_text(me)
    return {"attempt": job.attempt, "worker": me}
