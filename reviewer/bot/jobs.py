"""The jobs table, the bot's durable truth (the queue only delivers job ids: huey delivers at most once).

A job is one stage of one series on one architecture: queued -> running -> done | failed | cancelled.
Its key is the sha256 of (list, series fingerprint, stage, arch, config, base), so adding the same
work twice returns the first job. A worker claims a job with a lease and extends it by heartbeats;
the reaper queues a job whose lease expired again (or fails it after max_attempts). `attempt` counts
the runs started: a claim adds one, and sets `started` (NULL again when the job is queued again).

SQLite (WAL) by default, PostgreSQL when workers on several machines share the table: sql.py's Dialect is
the one difference (placeholders, the locking claim, column types). Times are Unix seconds, passed in by
the caller where a test wants them fixed.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewer.bot import sql

STATES = ("queued", "running", "done", "failed", "cancelled")
LIVE = ("queued", "running")
FIELDS = ("id", "key", "list", "series", "stage", "arch", "config", "base", "pool", "priority", "state", "attempt", "max_attempts",
          "lease_until", "worker", "not_before", "payload", "result", "error", "created", "updated", "started")
COLUMNS = ", ".join(FIELDS)
BY_ID = f"SELECT {COLUMNS} FROM jobs WHERE id = ?"


def pool_for(stage: str, arch: str = "") -> str:
    """The resource class a stage's job runs in: build and guest stages per architecture."""
    return f"{stage}-{arch}" if stage in ("build", "guest") else stage


@dataclass(frozen=True)
class Spec:
    """The work a job is asked to do; the key is computed from it, the pool follows from stage and arch."""

    list: str
    series: str  # the series' fingerprint
    stage: str
    arch: str = ""
    config: str = ""
    base: str = ""
    priority: int = 0
    max_attempts: int = 3
    not_before: float = 0.0
    payload: Mapping[str, Any] = field(default_factory=dict)  # JSON: what the stage needs (an mbox path, ...)

    @property
    def key(self) -> str:
        fields = (self.list, self.series, self.stage, self.arch, self.config, self.base)
        return hashlib.sha256("\0".join(fields).encode()).hexdigest()

    @property
    def pool(self) -> str:
        return pool_for(self.stage, self.arch)


@dataclass(frozen=True)
class Job:
    id: int
    key: str
    list: str
    series: str
    stage: str
    arch: str
    config: str
    base: str
    pool: str
    priority: int
    state: str
    attempt: int
    max_attempts: int
    lease_until: float | None
    worker: str | None
    not_before: float
    payload: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None
    created: float
    updated: float
    started: float | None = None  # when the current (or last) attempt was claimed; None while queued (last: added later)

    @classmethod
    def of(cls, row: Sequence[Any]) -> Job:
        d = dict(zip(FIELDS, row, strict=True))
        d["payload"] = json.loads(d["payload"])
        d["result"] = None if d["result"] is None else json.loads(d["result"])
        return cls(**d)


@dataclass(frozen=True)
class Count:
    """How many jobs of a list and pool are in a state, and since when the oldest of them was created."""

    list: str
    pool: str
    state: str
    jobs: int
    oldest: float


def _schema(d: sql.Dialect) -> tuple[str, ...]:
    return (f"""CREATE TABLE IF NOT EXISTS jobs (
        id {d.id_column}, key TEXT NOT NULL UNIQUE, list TEXT NOT NULL, series TEXT NOT NULL, stage TEXT NOT NULL,
        arch TEXT NOT NULL, config TEXT NOT NULL, base TEXT NOT NULL, pool TEXT NOT NULL, priority INTEGER NOT NULL,
        state TEXT NOT NULL, attempt INTEGER NOT NULL, max_attempts INTEGER NOT NULL, lease_until {d.real}, worker TEXT,
        not_before {d.real} NOT NULL, payload TEXT NOT NULL, result TEXT, error TEXT, created {d.real} NOT NULL,
        started {d.real}, updated {d.real} NOT NULL)""",
            "CREATE INDEX IF NOT EXISTS jobs_claim ON jobs (pool, state, priority, id)",
            "CREATE INDEX IF NOT EXISTS jobs_series ON jobs (series, state)")


def _added(d: sql.Dialect) -> tuple[tuple[str, str, str], ...]:
    """Columns newer than the table: a jobs.db made before them gets them at the next start."""
    return (("jobs", "started", d.real),)


class Jobs:
    """The jobs table in the database at URL (sql.Database: `postgresql://...`, `sqlite:///PATH` or a path)."""

    def __init__(self, url: str | Path, *, read_only: bool = False) -> None:
        """READ_ONLY: for a reader (the dashboard), which creates nothing and takes no write lock; its select() reads."""
        self.db = sql.Database(url, read_only=read_only)
        if not read_only:
            self.db.create(_schema(self.db.dialect), _added(self.db.dialect))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Jobs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, spec: Spec, now: float | None = None) -> Job:
        """Queue SPEC's job, or return the job of the same key (whatever its state): adding is idempotent."""
        return self.put(spec, now)[0]

    def put(self, spec: Spec, now: float | None = None) -> tuple[Job, bool]:
        """As add(), and whether the job is new (False: the same work was added before)."""
        now = time.time() if now is None else now
        values = (spec.key, spec.list, spec.series, spec.stage, spec.arch, spec.config, spec.base, spec.pool, spec.priority, "queued", 0,
                  spec.max_attempts, None, None, spec.not_before, json.dumps(dict(spec.payload), sort_keys=True), None, None, now, now,
                  None)
        with self.db.tx() as run:
            cur = run(f"INSERT INTO jobs ({COLUMNS.removeprefix('id, ')}) VALUES ({', '.join('?' * len(values))}) "
                      "ON CONFLICT (key) DO NOTHING", values)
            return Job.of(run(f"SELECT {COLUMNS} FROM jobs WHERE key = ?", (spec.key,)).fetchone()), cur.rowcount == 1

    def get(self, job_id: int) -> Job | None:
        with self.db.tx() as run:
            row = run(BY_ID, (job_id,)).fetchone()
        return None if row is None else Job.of(row)

    def select(self, *, series: str | None = None, pool: str | None = None, state: str | None = None) -> list[Job]:
        """The jobs that match every filter given, oldest first."""
        where = [(c, v) for c, v in (("series", series), ("pool", pool), ("state", state)) if v is not None]
        query = f"SELECT {COLUMNS} FROM jobs" + (" WHERE " + " AND ".join(f"{c} = ?" for c, _ in where) if where else "")
        with self.db.tx() as run:
            return [Job.of(r) for r in run(query + " ORDER BY id", tuple(v for _, v in where)).fetchall()]

    def claim(self, pool: str, worker: str, lease_seconds: float, now: float | None = None, job_id: int | None = None) -> Job | None:
        """Take the most urgent queued job of POOL that is due (JOB_ID: that one job, if it is queued and due) for
        WORKER, leased for LEASE_SECONDS; None if there is none. Two workers never claim the same job."""
        now = time.time() if now is None else now
        query = "SELECT id FROM jobs WHERE pool = ? AND state = 'queued' AND not_before <= ?"
        args: tuple[Any, ...] = (pool, now)
        if job_id is not None:
            query, args = query + " AND id = ?", (*args, job_id)
        with self.db.tx() as run:
            row = run(query + " ORDER BY priority DESC, id LIMIT 1" + self.db.dialect.lock, args).fetchone()
            if row is None:
                return None
            run("UPDATE jobs SET state = 'running', attempt = attempt + 1, worker = ?, lease_until = ?, started = ?, updated = ? "
                "WHERE id = ?", (worker, now + lease_seconds, now, now, row[0]))
            return Job.of(run(BY_ID, (row[0],)).fetchone())

    def heartbeat(self, job_id: int, worker: str, lease_seconds: float, now: float | None = None) -> bool:
        """Extend WORKER's lease on a running job; False when the job is no longer WORKER's to run (cancelled,
        or reaped after its lease expired): the stage should stop, and its result will not be recorded."""
        now = time.time() if now is None else now
        return self._update("lease_until = ?, updated = ?", (now + lease_seconds, now), job_id, worker)

    def finish(self, job_id: int, worker: str, result: Mapping[str, Any], now: float | None = None) -> bool:
        """Record the result of WORKER's run; False (nothing recorded) when the job is no longer WORKER's."""
        with self.db.tx() as run:
            return finish_in(run, job_id, worker, result, now)

    def fail(self, job_id: int, worker: str, error: str, now: float | None = None, retry_delay: float = 0.0) -> Job | None:
        """WORKER's run failed with ERROR: the job is queued again (due RETRY_DELAY from now) until it has been
        tried max_attempts times, then failed. The job as it is now, or None when it was no longer WORKER's."""
        now = time.time() if now is None else now
        ok = self._update("state = CASE WHEN attempt < max_attempts THEN 'queued' ELSE 'failed' END, error = ?, lease_until = NULL, "
                          "worker = CASE WHEN attempt < max_attempts THEN NULL ELSE worker END, "
                          "started = CASE WHEN attempt < max_attempts THEN NULL ELSE started END, not_before = ?, updated = ?",
                          (error, now + retry_delay, now), job_id, worker)
        return self.get(job_id) if ok else None

    def _update(self, assignments: str, values: tuple[Any, ...], job_id: int, worker: str) -> bool:
        with self.db.tx() as run:
            return _update(run, assignments, values, job_id, worker)

    def cancel_series(self, series: str, now: float | None = None) -> int:
        """Supersede SERIES: its queued and running jobs are cancelled (a running one learns it at its next
        heartbeat). The number of jobs cancelled."""
        now = time.time() if now is None else now
        with self.db.tx() as run:
            cur = run("UPDATE jobs SET state = 'cancelled', lease_until = NULL, updated = ? "
                      "WHERE series = ? AND state IN ('queued', 'running')", (now, series))
            return int(cur.rowcount)

    def hand_back(self, worker_prefix: str, now: float | None = None) -> list[Job]:
        """The running jobs of the workers whose name starts with WORKER_PREFIX (a process that stops before they
        finished: host/pid/), queued again at once. The jobs queued again, for the queue to deliver."""
        now = time.time() if now is None else now
        with self.db.tx() as run:
            mine = run("SELECT id FROM jobs WHERE state = 'running' AND substr(worker, 1, ?) = ?" + self.db.dialect.lock,
                       (len(worker_prefix), worker_prefix))
            ids = [r[0] for r in mine.fetchall()]
            for job_id in ids:
                run("UPDATE jobs SET state = 'queued', lease_until = NULL, worker = NULL, started = NULL, not_before = ?, updated = ?, "
                    "error = ? WHERE id = ?", (now, now, "handed back by a stopping worker", job_id))
            return [Job.of(run(BY_ID, (i,)).fetchone()) for i in ids]

    def reap(self, now: float | None = None) -> list[Job]:
        """Running jobs whose lease expired (their worker died or hangs): queued again, or failed once they were
        tried max_attempts times. The jobs queued again, for the queue to deliver."""
        now = time.time() if now is None else now
        with self.db.tx() as run:
            expired = run("SELECT id FROM jobs WHERE state = 'running' AND lease_until < ?" + self.db.dialect.lock, (now,))
            ids = [r[0] for r in expired.fetchall()]
            for job_id in ids:
                run("UPDATE jobs SET state = CASE WHEN attempt < max_attempts THEN 'queued' ELSE 'failed' END, lease_until = NULL, "
                    "worker = NULL, started = CASE WHEN attempt < max_attempts THEN NULL ELSE started END, not_before = ?, updated = ?, "
                    "error = ? WHERE id = ?", (now, now, "lease expired", job_id))
            rows = [run(BY_ID, (i,)).fetchone() for i in ids]
        return [j for j in map(Job.of, rows) if j.state == "queued"]

    def counts(self) -> list[Count]:
        """Per list, pool and state: how many jobs, and the creation time of the oldest (for queued ones: the
        oldest waiting)."""
        with self.db.tx() as run:
            rows = run("SELECT list, pool, state, COUNT(*), MIN(created) FROM jobs GROUP BY list, pool, state ORDER BY list, pool, state",
                       ()).fetchall()
        return [Count(r[0], r[1], r[2], int(r[3]), float(r[4])) for r in rows]

    def errors(self, limit: int = 10) -> list[Job]:
        """The last failed jobs, newest first."""
        with self.db.tx() as run:
            rows = run(f"SELECT {COLUMNS} FROM jobs WHERE state = 'failed' ORDER BY updated DESC, id DESC LIMIT ?", (limit,))
            return [Job.of(r) for r in rows.fetchall()]


def finish_in(run: sql.Run, job_id: int, worker: str, result: Mapping[str, Any], now: float | None = None) -> bool:
    """Jobs.finish inside the open transaction RUN, so that what the result causes (the outbox's rows) is
    written in the same transaction or not at all."""
    now = time.time() if now is None else now
    return _update(run, "state = 'done', result = ?, lease_until = NULL, updated = ?", (json.dumps(dict(result)), now), job_id, worker)


def _update(run: sql.Run, assignments: str, values: tuple[Any, ...], job_id: int, worker: str) -> bool:
    cur = run(f"UPDATE jobs SET {assignments} WHERE id = ? AND state = 'running' AND worker = ?", (*values, job_id, worker))
    return bool(cur.rowcount == 1)
