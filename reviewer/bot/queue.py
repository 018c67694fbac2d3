"""The queue: huey delivers job ids, the jobs table (jobs.py) says what each job is and where it stands.

One huey queue per pool (static, build-<arch>, guest-<arch>, report), so that a build host runs only the
consumers of its pools. SqliteHuey (a file in the bot's home) by default, PriorityRedisHuey for a
`redis://` URL; the task code is the same. huey delivers at most once (a consumer killed mid-task loses
that task), so the table makes up for it: a consumer's start re-enqueues the queued jobs the queue no
longer holds (reconcile), and a reaper thread queues the jobs whose lease expired again (reap).
Everything else reaches the queue through one engine-neutral port, Port.enqueue(job_id, pool, priority,
eta), which a site running another engine (Celery, ...) could implement instead.
"""
from __future__ import annotations

import dataclasses
import datetime
import functools
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import huey

from reviewer.bot import mboxes, stages
from reviewer.bot.jobs import Job, Jobs, Spec
from reviewer.bot.mboxes import Mboxes

TASK = "reviewer.bot.run_job"
# How an idle SqliteHuey worker polls (Redis blocks on the queue instead): 5 ms after its last job, 15% longer at
# each empty poll, at most 1 s (huey's defaults, 0.1 s to 10 s, delayed a batch's first job 50 ms on average).
POLL = {"initial_delay": 0.005, "backoff": 1.15, "max_delay": 1.0}


class Port(Protocol):
    def enqueue(self, job_id: int, pool: str, priority: int, eta: float | None) -> None:
        """Deliver JOB_ID to a worker of POOL, not before ETA (Unix seconds; None: now)."""


@dataclass(frozen=True)
class Settings:
    home: Path  # the bot's state directory: the SQLite queue and jobs table by default
    queue: str = "sqlite"  # or a redis://host:port/db URL
    db: str | None = None  # the jobs table's URL (postgresql://...); None: jobs.db in HOME
    lease: float = 60.0  # seconds a claim lasts without a heartbeat
    reap_every: float = 10.0  # seconds between two runs of a consumer's reaper
    retry_delay: float = 30.0  # seconds before a failed job is tried again
    timeout: float | None = None  # seconds a stage may run: then it is told to stop, and its run has failed
    stop_grace: float = 30.0  # seconds SIGTERM waits for running jobs before they are handed back

    @property
    def jobs_url(self) -> str:
        return self.db or str(self.home / "jobs.db")


class Bot:
    """The queue and the jobs table of SETTINGS: enqueue work, and run the jobs huey delivers."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.jobs = Jobs(settings.jobs_url)
        self._queues: dict[str, tuple[huey.Huey, Any]] = {}  # pool: its huey and task
        self._lock = threading.Lock()
        self._beats = _Heartbeats(self)

    def close(self) -> None:
        self._beats.close()
        self.jobs.close()

    @functools.cached_property
    def mboxes(self) -> Mboxes:
        """The series' mboxes in the jobs database (its table made the first time a job needs it)."""
        return Mboxes(self.jobs.db)

    def queue(self, pool: str) -> huey.Huey:
        """POOL's huey, its one task registered (the consumer's process registers it as the producer's does)."""
        return self._pool(pool)[0]

    def _pool(self, pool: str) -> tuple[huey.Huey, Any]:
        with self._lock:
            if pool not in self._queues:
                q = _huey(self.settings, pool)

                def run_job(job_id: int) -> None:
                    self.run(pool, job_id)

                self._queues[pool] = (q, q.task(name=TASK)(run_job))
            return self._queues[pool]

    def enqueue(self, job_id: int, pool: str, priority: int, eta: float | None) -> None:
        q, task = self._pool(pool)
        when = {} if eta is None or eta <= time.time() else {"eta": datetime.datetime.fromtimestamp(eta, datetime.UTC)}
        q.enqueue(task.s(job_id, priority=priority, **when))

    def submit(self, spec: Spec) -> Job:
        """Add SPEC's job to the table, then enqueue it, once: the same work submitted again is not queued again."""
        job, new = self.jobs.put(spec)
        if new:
            self.deliver(job)
        return job

    def deliver(self, job: Job) -> None:
        self.enqueue(job.id, job.pool, job.priority, job.not_before or None)

    def reconcile(self, pool: str) -> list[int]:
        """Enqueue the queued jobs of POOL that the queue does not hold (lost with a killed consumer); their ids."""
        q = self.queue(pool)
        held = {t.args[0] for t in (*q.pending(), *q.scheduled()) if t.name == TASK and t.args}
        lost = [j for j in self.jobs.select(pool=pool, state="queued") if j.id not in held]
        for job in lost:
            self.deliver(job)
        return [j.id for j in lost]

    def reap(self, now: float | None = None) -> list[int]:
        """Queue the jobs whose lease expired again, and deliver them; their ids."""
        again = self.jobs.reap(now)
        for job in again:
            self.deliver(job)
        return [j.id for j in again]

    def run(self, pool: str, job_id: int) -> None:
        """The task of POOL's queue: claim JOB_ID (nothing to do if it is not queued: delivered twice, cancelled, or taken
        already), run its stage with heartbeats, and record the result or the failure."""
        worker = worker_name()
        job = self.jobs.claim(pool, worker, self.settings.lease, job_id=job_id)
        if job is None:
            self._early(job_id)
            return
        beat = self._beats.start(job.id, worker)
        try:
            result = stages.STAGES[job.stage](self._here(job), beat.stop)
        except Exception as exc:  # a stage's failure is the job's, recorded; the consumer goes on
            self._failed(job.id, worker, f"{type(exc).__name__}: {exc}")
        else:
            if beat.timed_out:
                self._failed(job.id, worker, f"the stage ran over its timeout ({self.settings.timeout} s)")
            else:
                self.jobs.finish(job.id, worker, result)
        finally:
            self._beats.end(beat)

    def _here(self, job: Job) -> Job:
        """JOB with its mbox (payload "mbox_sha256") as a file in this worker's home, read from the jobs database."""
        digest = job.payload.get("mbox_sha256")
        if not digest:
            return job
        path = mboxes.local(self.mboxes, self.settings.home, digest)
        return dataclasses.replace(job, payload=job.payload | {"mbox": str(path)})

    def _early(self, job_id: int) -> None:
        """A job delivered before it is due (the queue's clock ahead of the table's) is delivered again for then."""
        job = self.jobs.get(job_id)
        if job is not None and job.state == "queued" and job.not_before > time.time():
            self.deliver(job)

    def _failed(self, job_id: int, worker: str, error: str) -> None:
        again = self.jobs.fail(job_id, worker, error, retry_delay=self.settings.retry_delay)
        if again is not None and again.state == "queued":
            self.deliver(again)


@dataclass(eq=False)
class Beat:
    """A running job's heartbeat: STOP is the stage's signal to give up (the job is no longer the worker's, or the
    stage ran over its timeout: then timed_out)."""

    job_id: int
    worker: str
    next: float  # time.monotonic() of the next heartbeat
    deadline: float | None  # time.monotonic() of the timeout; None: none (left)
    stop: threading.Event = field(default_factory=threading.Event)
    timed_out: bool = False

    def due(self) -> float:
        return self.next if self.deadline is None else min(self.next, self.deadline)


class _Heartbeats:
    """One thread per Bot that extends the leases of the jobs its workers run, every third of the lease, and tells
    a stage to stop (Beat.stop) when its job is no longer the worker's or it ran over the timeout. One thread for
    all, started once and idle without jobs: a thread started per job cost 0.4 ms of the queue's 1 ms a job."""

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        self._cond = threading.Condition()
        self._beats: set[Beat] = set()
        self._thread: threading.Thread | None = None
        self._closed = False

    def start(self, job_id: int, worker: str) -> Beat:
        settings, now = self.bot.settings, time.monotonic()
        beat = Beat(job_id, worker, now + settings.lease / 3, None if settings.timeout is None else now + settings.timeout)
        with self._cond:
            self._beats.add(beat)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="heartbeats", daemon=True)
                self._thread.start()
            self._cond.notify()
        return beat

    def end(self, beat: Beat) -> None:
        with self._cond:
            self._beats.discard(beat)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [b for b in self._beats if b.due() <= now]
                if self._closed:
                    return
                if not due:
                    wake = min((b.due() for b in self._beats), default=None)
                    self._cond.wait(None if wake is None else wake - now)
                    continue
            for beat in due:
                self._beat(beat, now)

    def _beat(self, beat: Beat, now: float) -> None:
        settings = self.bot.settings
        if beat.deadline is not None and now >= beat.deadline:
            beat.timed_out, beat.deadline = True, None
            beat.stop.set()  # and the lease is still kept until the stage returns
        if now < beat.next:
            return
        beat.next = now + settings.lease / 3
        try:
            kept = self.bot.jobs.heartbeat(beat.job_id, beat.worker, settings.lease)
        except Exception:  # the database away for a moment: a missed beat; the lease has two more before it ends
            return
        if not kept:
            beat.stop.set()
            self.end(beat)


def worker_name() -> str:
    """Who runs a job: host, process and thread, so that an operator can find (and a test can kill) it."""
    return f"{socket.gethostname()}/{os.getpid()}/{threading.current_thread().name}"


def _huey(settings: Settings, pool: str) -> huey.Huey:
    name = f"reviewer-bot-{pool}"
    if settings.queue.startswith("redis://"):
        return huey.PriorityRedisHuey(name, url=settings.queue, results=False)
    if settings.queue != "sqlite":
        raise ValueError(f"bot queue: {settings.queue!r}: neither 'sqlite' nor a redis:// URL")
    settings.home.mkdir(parents=True, exist_ok=True)
    return huey.Huey(name, storage_class=_SqliteStorage, filename=str(settings.home / "queue.db"), results=False)


class _SqliteStorage(huey.storage.SqliteStorage):  # type: ignore[misc]  # huey has no type hints
    """huey's SqliteStorage with synchronous=NORMAL, as the jobs table's (sql.py): huey leaves SQLite's FULL, an
    fsync at every enqueue and dequeue. A power loss can lose the last tasks queued; the table still has their
    jobs, and a consumer's start enqueues them again (Bot.reconcile)."""

    def _create_connection(self) -> Any:
        conn = super()._create_connection()
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn


def consume(settings: Settings, pool: str, workers: int = 1, **consumer: Any) -> None:
    """Run POOL's consumer in this process until SIGINT (at once) or SIGTERM (running jobs get stop_grace seconds
    to finish): reconcile the queue with the table first, and reap expired leases every reap_every seconds
    meanwhile. The jobs still running at the end are handed back (queued again and delivered)."""
    bot = Bot(settings)
    bot.reconcile(pool)
    stop = threading.Event()
    reaper = threading.Thread(target=_reaper, args=(settings, stop), name="reaper", daemon=True)
    reaper.start()
    options = {"workers": workers, "worker_type": "thread", "periodic": False, "graceful_signal": "TERM",
               "shutdown_timeout": settings.stop_grace, **POLL, **consumer}
    try:
        bot.queue(pool).create_consumer(**options).run()
    finally:
        stop.set()
        reaper.join()
        for job in bot.jobs.hand_back(f"{socket.gethostname()}/{os.getpid()}/"):
            bot.deliver(job)
        stages.stop_all()  # then the reviews still running after stop_grace (their results refused): no make or QEMU outlives us
        bot.close()


def _reaper(settings: Settings, stop: threading.Event) -> None:
    bot = Bot(settings)  # a connection of its own: the reaper never waits behind a stage's heartbeat
    try:
        while not stop.wait(settings.reap_every):
            bot.reap()
    finally:
        bot.close()


class Workers:
    """The consumers of POOLS in this process, beside the caller (`review bot run`): started from the main thread (huey
    installs its signal handlers there; the caller installs its own after), stopped by stop(), which lets running jobs
    finish for stop_grace seconds and hands back those still running, as consume() does."""

    def __init__(self, settings: Settings, pools: list[str], workers: int) -> None:
        self.bot = Bot(settings)
        self._stop = threading.Event()
        self._consumers = []
        for pool in pools:
            self.bot.reconcile(pool)
            consumer = self.bot.queue(pool).create_consumer(workers=workers, worker_type="thread", periodic=False,
                                                            shutdown_timeout=settings.stop_grace, **POLL)
            consumer.start()
            self._consumers.append(consumer)
        self._reaper = threading.Thread(target=_reaper, args=(settings, self._stop), name="reaper", daemon=True)
        self._reaper.start()

    def stop(self) -> None:
        for consumer in self._consumers:
            consumer.stop(graceful=True)
        self._stop.set()
        self._reaper.join()
        for job in self.bot.jobs.hand_back(f"{socket.gethostname()}/{os.getpid()}/"):
            self.bot.deliver(job)
        stages.stop_all()
        self.bot.close()
