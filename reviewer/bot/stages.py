"""The stages a job can run, by name (an explicit registry, as the rules' is): each takes the claimed job and
an event set when the job is no longer the worker's (cancelled, superseded, or its lease lost), and returns its
result as JSON-able data: the review's JSON document (report/json.py) and its exit status. A stage that raises
has failed, and is tried again until the job's max_attempts.

Each stage is one `review` of the job's mbox (payload "mbox"), offline, asked for more as the stages go on:
- static (pool static): parse and check, no tree; in the worker's process (it runs nothing of the series, and
  costs a few milliseconds a series);
- apply (pool apply): applied to the list's tree (payload "tree") in a worktree of its own, on the base the review
  chooses (the series' base-commit, else one guessed from its blobs, else the tree's HEAD); the tree's checkpatch.pl;
- build (pool build-ARCH): as apply, and built patch by patch for the job's arch (`--build --arch ARCH`);
- guest (pool guest-ARCH): as apply, and the relevant selftests run base and patched in a guest of the job's
  arch (`--run-tests --run-on vm --arch ARCH --bench-runs N`, N the list's `bench_runs`, 0 by default).

apply, build and guest run `python -m reviewer ... --format json` as a child in a process group of its own: when
the event is set (the job cancelled by a new revision, its lease lost, the worker stopping, the stage's timeout)
the whole group (the review, git, make, QEMU) gets SIGTERM, which the review answers by removing its worktrees,
and SIGKILL GRACE seconds later; the stage then raises Stopped."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reviewer import app
from reviewer.bot.jobs import Job
from reviewer.errors import ExitStatus
from reviewer.report import json as json_report
from reviewer.request import ReviewRequest, SourceOptions

Stage = Callable[[Job, threading.Event], Mapping[str, Any]]
TREE_STAGES = ("apply", "build", "guest")  # the stages that need the list's kernel tree
ARCH_STAGES = ("build", "guest")  # one job per architecture
REPORTED = (ExitStatus.OK, ExitStatus.FINDINGS, ExitStatus.APPLY, ExitStatus.SELFTESTS)  # the review printed its report
GRACE = 30.0  # seconds between SIGTERM and SIGKILL of a stopped review's process group
POLL = 0.5


class Stopped(Exception):  # noqa: N818 (what happened, not an error of the stage's)
    """The job stopped being the worker's while its review ran: the review's process group was killed."""


_RUNNING: dict[int, subprocess.Popen[bytes]] = {}  # the reviews running in this process, by pid: stop_all() ends them
_ENDED: set[int] = set()  # the pids stop_all() ended (their stages raise Stopped)
_LOCK = threading.Lock()


def stop_all() -> int:
    """End every review a stage of this process runs (a worker that stops: before its jobs are handed back, so that
    no make or QEMU outlives it): SIGTERM to each process group, SIGKILL GRACE seconds later. How many there were."""
    with _LOCK:
        procs = list(_RUNNING.values())
        _ENDED.update(p.pid for p in procs)
    for proc in procs:
        _stop(proc)
        _kill_group(proc.pid)
    return len(procs)


def static(job: Job, stopped: threading.Event) -> Mapping[str, Any]:  # noqa: ARG001 (one review of milliseconds, nothing to stop)
    """The static review (parse and check, no tree) of the mbox the job names, offline."""
    mbox = Path(job.payload["mbox"])
    done = app.review(ReviewRequest(SourceOptions(target=str(mbox), cwd=mbox.parent, offline=True)))
    return {"status": int(done.status()), "review": json_report.document(done.review)}


def apply(job: Job, stopped: threading.Event) -> Mapping[str, Any]:
    """The review applied to the list's tree: whether each patch applies, and the tree's checkpatch.pl."""
    return review(job, stopped, ())


def build(job: Job, stopped: threading.Event) -> Mapping[str, Any]:
    """The review applied and built patch by patch for the job's architecture."""
    return review(job, stopped, ("--build", "--arch", job.arch))


def guest(job: Job, stopped: threading.Event) -> Mapping[str, Any]:
    """The review applied, and its relevant selftests run base and patched in a guest of the job's architecture."""
    runs = str(job.payload.get("bench_runs", 0))
    return review(job, stopped, ("--run-tests", "--run-on", "vm", "--arch", job.arch, "--bench-runs", runs))


def review(job: Job, stopped: threading.Event, extra: Sequence[str]) -> Mapping[str, Any]:
    """`review MBOX --offline --tree TREE EXTRA --format json` in a process group of its own, stopped with the job."""
    mbox = Path(job.payload["mbox"])
    cmd = [sys.executable, "-m", "reviewer", str(mbox), "--offline", "--tree", job.payload["tree"], *extra, "--format", "json"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=mbox.parent, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        with _LOCK:
            _RUNNING[proc.pid] = proc
        try:
            while proc.poll() is None:
                if stopped.wait(POLL):
                    _stop(proc)
                    raise Stopped(f"job {job.id}: stopped while its review ran (pid {proc.pid}): its process group was killed")
        finally:
            if proc.poll() is None:  # an exception of ours (KeyboardInterrupt, ...): never leave the review behind
                _stop(proc)
            _kill_group(proc.pid)  # whatever of its group outlived the review
            with _LOCK:
                _RUNNING.pop(proc.pid, None)
                ended = proc.pid in _ENDED
                _ENDED.discard(proc.pid)
        if ended:
            raise Stopped(f"job {job.id}: its worker stopped while its review ran (pid {proc.pid}): its process group was killed")
        out.seek(0)
        err.seek(0)
        text, why = out.read(), err.read().decode(errors="replace").strip().splitlines()
    if proc.returncode not in REPORTED:
        said = next((line for line in reversed(why) if line.startswith("review: error:")), why[-1] if why else "no message")
        raise RuntimeError(f"review exited {proc.returncode}: {said}")
    return {"status": proc.returncode, "review": json.loads(text)}


def _kill_group(pgid: int, wait: float = 10.0) -> None:
    """SIGKILL to what is left of the group, and wait (up to WAIT seconds) until its processes are gone."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, GRACE), (signal.SIGKILL, 30.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


STAGES: dict[str, Stage] = {"static": static, "apply": apply, "build": build, "guest": guest}


def register(name: str, stage: Stage) -> None:
    """Add a stage under NAME (the tests' stages; a site's own)."""
    STAGES[name] = stage
