"""reviewer.bot.queue: huey delivering the jobs of the table, with real consumers in processes of their own
(each in its own process group, as a service manager would start them): SqliteHuey for one machine, and
for two workers a real redis-server and a real PostgreSQL table, one worker killed with kill -9 mid-job."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path

import pytest

from reviewer.bot import stages
from reviewer.bot.jobs import Job, Spec
from reviewer.bot.queue import Bot, Settings
from tests.bot.servers import dies_with_us, wait_until
from tests.bot.stagefns import touch
from tests.conftest import ROOT, SERIES


class Consumers:
    """Consumer processes (python -m tests.bot.worker), each the leader of its own process group."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, settings: Settings, pool: str) -> subprocess.Popen[bytes]:
        fields = {**dataclasses.asdict(settings), "home": str(settings.home)}
        log = (self.logs / f"consumer-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen([sys.executable, "-m", "tests.bot.worker", json.dumps(fields), pool], cwd=ROOT, stdout=log, stderr=log,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True,
                                preexec_fn=dies_with_us(signal.SIGKILL))
        log.close()
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> int:
        """SIGTERM to the group: running jobs finish, then the consumer exits. Its exit status."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        return proc.wait(30)

    def kill_all(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture
def consumers(tmp_path: Path) -> Iterator[Consumers]:
    running = Consumers(tmp_path)
    try:
        yield running
    finally:
        running.kill_all()


def settled(bot: Bot, ids: list[int], seconds: float) -> list[Job]:
    """The jobs IDS once none is queued or running any more."""
    def ended() -> bool:
        return all(j is not None and j.state not in ("queued", "running") for j in map(bot.jobs.get, ids))
    wait_until(ended, seconds, "jobs")
    return [j for j in map(bot.jobs.get, ids) if j is not None]


def test_a_sqlite_consumer_runs_a_static_review_end_to_end(tmp_path: Path, consumers: Consumers) -> None:
    settings = Settings(home=tmp_path / "home", lease=5, reap_every=1, retry_delay=0)
    bot = Bot(settings)
    mbox = SERIES / "single-patch.mbox"
    review = bot.jobs.add(Spec("linux-mm", "dmapool-v1", "static", payload={"mbox": str(mbox)}))
    side = tmp_path / "side"
    side.mkdir()
    flaky = bot.jobs.add(Spec("linux-mm", "dmapool-v1", "touch", payload={"dir": str(side), "fail": 1}))
    assert flaky.pool == "touch"
    for job in (review, flaky):
        bot.deliver(job)
    worker = consumers.start(settings, "static")
    other = consumers.start(settings, "touch")
    done = settled(bot, [review.id, flaky.id], 60)
    assert [(j.state, j.attempt) for j in done] == [("done", 1), ("done", 2)]
    assert done[0].result is not None and done[0].result["status"] == 0
    assert done[0].result["review"]["series"]["subject"] == "mm/dmapool: Document the free list head"
    assert done[1].error == "RuntimeError: attempt 1 fails"  # the first attempt's, kept
    assert sorted(p.name for p in side.iterdir()) == [f"{flaky.id}.1.start", f"{flaky.id}.2.end", f"{flaky.id}.2.start"]
    assert bot.queue("static").pending_count() == 0
    assert consumers.stop(worker) == 0 and consumers.stop(other) == 0


def test_reconcile_enqueues_what_the_queue_lost(tmp_path: Path) -> None:
    bot = Bot(Settings(home=tmp_path / "home"))
    ids = [bot.jobs.add(Spec("l", f"s{n}", "static")).id for n in range(3)]
    later = bot.jobs.add(Spec("l", "s9", "static", not_before=time.time() + 3600))
    bot.enqueue(ids[0], "static", 0, None)
    assert sorted(bot.reconcile("static")) == sorted([ids[1], ids[2], later.id])
    assert bot.reconcile("static") == []  # all held now: nothing twice
    held = {t.args[0]: t.eta for t in bot.queue("static").pending()}
    assert sorted(held) == sorted([*ids, later.id])
    assert [i for i, eta in held.items() if eta is not None] == [later.id]  # not due: a consumer schedules it until then
    bot.queue("static").flush()  # the queue lost everything (a Redis restarted without persistence)
    assert sorted(bot.reconcile("static")) == sorted([*ids, later.id])
    bot.close()


def test_submitting_the_same_work_twice_queues_it_once(tmp_path: Path) -> None:
    bot = Bot(Settings(home=tmp_path / "home"))
    first = bot.submit(Spec("l", "s1", "build", arch="arm64", priority=3))
    assert bot.submit(Spec("l", "s1", "build", arch="arm64", priority=3)) == first
    assert [(t.args, t.priority) for t in bot.queue("build-arm64").pending()] == [((first.id,), 3)]
    assert bot.queue("static").pending() == []
    bot.close()


def test_a_job_delivered_before_it_is_due_is_delivered_again_for_then(tmp_path: Path) -> None:
    bot = Bot(Settings(home=tmp_path / "home"))
    due = time.time() + 3600
    job = bot.jobs.add(Spec("l", "s1", "static", not_before=due))
    bot.run("static", job.id)  # as a consumer whose clock is an hour ahead would
    [held] = bot.queue("static").pending()
    assert held.args == (job.id,) and held.eta is not None and abs(held.eta.replace(tzinfo=UTC).timestamp() - due) < 1
    still = bot.jobs.get(job.id)
    assert still is not None and (still.state, still.attempt) == ("queued", 0)
    bot.close()


def test_a_running_stage_learns_at_its_heartbeat_that_its_series_was_superseded(tmp_path: Path) -> None:
    stages.register("touch", touch)
    bot = Bot(Settings(home=tmp_path / "home", lease=0.3))
    side = tmp_path / "side"
    side.mkdir()
    job = bot.jobs.add(Spec("l", "v1", "touch", payload={"dir": str(side), "wait_stop": True}))
    runner = threading.Thread(target=bot.run, args=("touch", job.id))
    runner.start()
    wait_until(lambda: (side / f"{job.id}.1.start").exists(), 10, "the stage")
    start = time.monotonic()
    assert bot.jobs.cancel_series("v1") == 1
    runner.join(10)
    assert not runner.is_alive() and time.monotonic() - start < 2  # seen at the next heartbeat (every lease / 3)
    ended = bot.jobs.get(job.id)
    assert ended is not None and (ended.state, ended.result) == ("cancelled", None)  # its result was refused
    bot.close()


def test_a_stage_over_its_timeout_is_told_to_stop_and_fails(tmp_path: Path) -> None:
    stages.register("touch", touch)
    bot = Bot(Settings(home=tmp_path / "home", lease=30, timeout=0.3))
    side = tmp_path / "side"
    side.mkdir()
    job = bot.jobs.add(Spec("l", "v1", "touch", max_attempts=1, payload={"dir": str(side), "wait_stop": True}))
    start = time.monotonic()
    bot.run("touch", job.id)
    assert time.monotonic() - start < 2
    ended = bot.jobs.get(job.id)
    assert ended is not None and (ended.state, ended.error) == ("failed", "the stage ran over its timeout (0.3 s)")
    bot.close()


def test_sigterm_lets_a_running_job_finish_within_the_grace_time(tmp_path: Path, consumers: Consumers) -> None:
    settings = Settings(home=tmp_path / "home", lease=30, stop_grace=30)
    bot = Bot(settings)
    side = tmp_path / "side"
    side.mkdir()
    job = bot.jobs.add(Spec("l", "v1", "touch", payload={"dir": str(side), "sleep": 1.0}))
    bot.deliver(job)
    proc = consumers.start(settings, "touch")
    wait_until(lambda: (side / f"{job.id}.1.start").exists(), 30, "the stage")
    assert consumers.stop(proc) == 0
    done = bot.jobs.get(job.id)
    assert done is not None and (done.state, done.attempt) == ("done", 1) and (side / f"{job.id}.1.end").exists()
    bot.close()


def test_sigterm_hands_back_a_job_that_does_not_finish_in_the_grace_time(tmp_path: Path, consumers: Consumers) -> None:
    settings = Settings(home=tmp_path / "home", lease=30, stop_grace=0.5)
    bot = Bot(settings)
    side = tmp_path / "side"
    side.mkdir()
    job = bot.jobs.add(Spec("l", "v1", "touch", payload={"dir": str(side), "hang": 60}))
    bot.deliver(job)
    first = consumers.start(settings, "touch")
    wait_until(lambda: (side / f"{job.id}.1.start").exists(), 30, "the stage")
    start = time.monotonic()
    assert consumers.stop(first) == 0
    assert time.monotonic() - start < 10  # not the lease (30 s), nor the hang (60 s)
    back = bot.jobs.get(job.id)
    assert back is not None and (back.state, back.worker, back.error) == ("queued", None, "handed back by a stopping worker")
    assert bot.queue("touch").pending_count() == 1  # delivered again, not left to the next consumer's reconciliation
    second = consumers.start(settings, "touch")
    (done,) = settled(bot, [job.id], 30)
    assert (done.state, done.attempt) == ("done", 2) and (side / f"{job.id}.2.end").exists()
    assert consumers.stop(second) == 0
    bot.close()


@pytest.mark.parametrize("table", ["postgres", "sqlite"])
def test_two_redis_workers_and_kill_9_of_one_mid_job(tmp_path: Path, redis_url: str, table: str, request: pytest.FixtureRequest,
                                                     consumers: Consumers) -> None:
    # Homes of their own and the queue on Redis; the jobs table on PostgreSQL, as on two machines, or in one
    # SQLite file both processes write.
    side = tmp_path / "side"
    side.mkdir()
    db = request.getfixturevalue("pg_db") if table == "postgres" else f"sqlite://{tmp_path / 'jobs.db'}"
    homes = [Settings(home=tmp_path / f"home-{n}", queue=redis_url, db=db, lease=1.5, reap_every=0.3) for n in "ab"]
    bot = Bot(homes[0])
    bot.queue("touch").flush()  # the session's Redis: nothing left from another test
    specs = [Spec("netdev", f"s{n}", "touch", payload={"dir": str(side), "sleep": 0.1, "hang": 60 if n == 4 else 0}) for n in range(20)]
    ids = [bot.jobs.add(s).id for s in specs]
    for job_id in ids:
        bot.enqueue(job_id, "touch", 0, None)
    procs = {p.pid: p for p in (consumers.start(homes[0], "touch"), consumers.start(homes[1], "touch"))}
    hung = ids[4]

    def hanging() -> bool:
        job = bot.jobs.get(hung)
        return job is not None and job.state == "running"
    wait_until(hanging, 30, "the hanging job")
    running = bot.jobs.get(hung)
    assert running is not None and running.worker is not None
    victim = procs[int(running.worker.split("/")[1])]  # host/pid/thread: the consumer that holds the job
    os.killpg(victim.pid, signal.SIGKILL)  # the whole group: the consumer and all its threads
    assert victim.wait(10) == -signal.SIGKILL
    done = settled(bot, ids, 60)
    assert [j.state for j in done] == ["done"] * 20
    ends = sorted(p.name for p in side.glob("*.end"))
    assert ends == sorted(f"{j.id}.{j.attempt}.end" for j in done)  # every job ran to its end exactly once
    assert [j.id for j in done if j.attempt != 1] == [hung]  # only the killed one ran twice
    assert (side / f"{hung}.1.start").read_text() == running.worker and not (side / f"{hung}.1.end").exists()
    survivor = next(p for p in procs.values() if p is not victim)
    assert all((side / f"{j.id}.{j.attempt}.end").read_text() == j.worker for j in done)
    assert done[4].worker is not None and done[4].worker.split("/")[1] == str(survivor.pid)
    assert consumers.stop(survivor) == 0
    bot.close()


def test_one_heartbeat_thread_keeps_the_leases_of_every_running_job(tmp_path: Path) -> None:
    stages.register("touch", touch)
    bot = Bot(Settings(home=tmp_path / "home", lease=0.3))
    side = tmp_path / "side"
    side.mkdir()
    jobs = [bot.jobs.add(Spec("l", f"v{n}", "touch", payload={"dir": str(side), "wait_stop": True})) for n in range(3)]
    runners = [threading.Thread(target=bot.run, args=("touch", j.id)) for j in jobs]
    for runner in runners:
        runner.start()
    wait_until(lambda: all((side / f"{j.id}.1.start").exists() for j in jobs), 10, "the stages")
    time.sleep(1.0)  # three leases: without heartbeats every claim would have expired
    assert all(bot.jobs.reap() == [] for _ in range(2))
    assert [t.name for t in threading.enumerate()].count("heartbeats") == 1
    assert [bot.jobs.cancel_series(f"v{n}") for n in range(3)] == [1, 1, 1]
    for runner in runners:
        runner.join(10)
    assert not any(r.is_alive() for r in runners)
    bot.close()
    assert "heartbeats" not in [t.name for t in threading.enumerate()]


def test_the_sqlite_queue_commits_without_an_fsync_each(tmp_path: Path) -> None:
    bot = Bot(Settings(home=tmp_path / "home"))
    storage = bot.queue("static").storage
    assert storage.sql("PRAGMA journal_mode", results=True) == [("wal",)]
    assert storage.sql("PRAGMA synchronous", results=True) == [(1,)]  # NORMAL: durable across a crash of the process
    bot.close()
