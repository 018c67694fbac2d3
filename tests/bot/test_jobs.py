"""reviewer.bot.jobs: the jobs table's semantics, the same on SQLite (a file in WAL mode) and on a real
PostgreSQL cluster (tests/bot/servers.py). Times are passed in, so leases expire when the test says."""
from __future__ import annotations

import threading
import time

from reviewer.bot.jobs import Jobs, Spec, pool_for


def spec(n: int = 0, **kw: object) -> Spec:
    return Spec(**{"list": "netdev", "series": f"s{n}", "stage": "static", **kw})  # type: ignore[arg-type]


def test_adding_the_same_work_twice_returns_the_first_job(jobs: Jobs) -> None:
    first, new = jobs.put(spec(1, payload={"mbox": "/a"}), now=10)
    again, renewed = jobs.put(spec(1, payload={"mbox": "/b"}, priority=9), now=20)
    assert (new, renewed) == (True, False)
    assert (again.id, again.payload, again.priority, again.created) == (first.id, {"mbox": "/a"}, 0, 10)
    build = jobs.add(spec(1, stage="build", arch="x86_64"), now=30)
    assert build.id != first.id and build.key != first.key
    assert (build.pool, build.state, build.attempt) == ("build-x86_64", "queued", 0)
    assert [j.id for j in jobs.select()] == [first.id, build.id]


def test_the_key_covers_every_part_of_the_work() -> None:
    keys = {spec(1).key, spec(2).key, spec(1, list="bpf").key, spec(1, stage="build").key, spec(1, arch="arm64").key,
            spec(1, config="allmodconfig").key, spec(1, base="v6.12").key}
    assert len(keys) == 7
    assert [pool_for("static"), pool_for("guest", "arm64"), pool_for("report")] == ["static", "guest-arm64", "report"]


def test_two_claimers_get_each_job_once(url: str, jobs: Jobs) -> None:
    added = {jobs.add(spec(n)).id for n in range(200)}
    taken: dict[str, list[int]] = {"a": [], "b": []}
    start = threading.Barrier(2)

    def claimer(name: str) -> None:
        with Jobs(url) as mine:  # a connection of its own: the database decides who wins
            start.wait()
            while (job := mine.claim("static", name, 60)) is not None:
                taken[name].append(job.id)
                time.sleep(0.002)  # a worker works between claims (SQLite's busy wait would starve the other one)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in taken]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken["a"] + taken["b"]) == sorted(added)
    assert taken["a"] and taken["b"], "both claimers should have had a share"
    assert {(j.state, j.attempt) for j in jobs.select()} == {("running", 1)}
    assert {j.worker for j in jobs.select()} == {"a", "b"}


def test_workers_starting_at_once_create_the_table_once(url: str) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def opener() -> None:
        start.wait()
        try:
            Jobs(url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Jobs(url) as jobs:
        assert jobs.select() == []


def test_claim_takes_the_most_urgent_due_job_of_its_pool(jobs: Jobs) -> None:
    low = jobs.add(spec(1), now=0)
    later = jobs.add(spec(2, priority=9, not_before=100), now=0)
    high = jobs.add(spec(3, priority=5), now=0)
    jobs.add(spec(4, stage="build", arch="arm64", priority=99), now=0)
    assert jobs.claim("static", "w", 10, now=50, job_id=later.id) is None  # not due yet
    assert [j.id for j in iter(lambda: jobs.claim("static", "w", 10, now=50), None)] == [high.id, low.id]
    claimed = jobs.claim("static", "w", 10, now=100, job_id=later.id)
    assert claimed is not None and (claimed.id, claimed.lease_until, claimed.worker) == (later.id, 110, "w")
    assert jobs.claim("static", "w", 10, now=100, job_id=later.id) is None  # running: a second delivery gets nothing


def test_an_expired_lease_is_reaped_and_its_old_worker_loses_the_job(jobs: Jobs) -> None:
    job = jobs.add(spec(1), now=0)
    assert jobs.claim("static", "old", 10, now=100) is not None
    assert jobs.heartbeat(job.id, "old", 10, now=105)  # the lease now runs to 115
    assert jobs.reap(now=114) == []
    again = jobs.reap(now=116)
    assert [(j.id, j.state, j.worker, j.attempt, j.error) for j in again] == [(job.id, "queued", None, 1, "lease expired")]
    assert not jobs.heartbeat(job.id, "old", 10, now=117)
    claimed = jobs.claim("static", "new", 10, now=118)
    assert claimed is not None and claimed.attempt == 2
    assert not jobs.finish(job.id, "old", {"by": "old"}, now=119)  # the dead worker's late result is not recorded
    assert jobs.finish(job.id, "new", {"by": "new"}, now=120)
    done = jobs.get(job.id)
    assert done is not None and (done.state, done.result, done.lease_until) == ("done", {"by": "new"}, None)


def test_reap_fails_a_job_after_max_attempts(jobs: Jobs) -> None:
    job = jobs.add(spec(1, max_attempts=2), now=0)
    claimed = jobs.claim("static", "w", 5, now=10)
    assert claimed is not None and claimed.attempt == 1
    assert [j.id for j in jobs.reap(now=20)] == [job.id]
    claimed = jobs.claim("static", "w", 5, now=30)
    assert claimed is not None and claimed.attempt == 2
    assert jobs.reap(now=100) == []
    failed = jobs.get(job.id)
    assert failed is not None and (failed.state, failed.error, failed.attempt) == ("failed", "lease expired", 2)


def test_a_failed_run_is_retried_until_max_attempts(jobs: Jobs) -> None:
    job = jobs.add(spec(1, max_attempts=2), now=0)
    jobs.claim("static", "w", 10, now=1)
    again = jobs.fail(job.id, "w", "boom 1", now=2, retry_delay=30)
    assert again is not None and (again.state, again.not_before, again.worker, again.error) == ("queued", 32, None, "boom 1")
    assert jobs.claim("static", "w", 10, now=31) is None
    assert jobs.claim("static", "w", 10, now=32) is not None
    assert jobs.fail(job.id, "other", "not mine", now=33) is None
    last = jobs.fail(job.id, "w", "boom 2", now=34)
    assert last is not None and (last.state, last.attempt, last.error) == ("failed", 2, "boom 2")
    assert [j.id for j in jobs.errors()] == [job.id]


def test_a_stopping_worker_hands_back_its_running_jobs(jobs: Jobs) -> None:
    mine = jobs.add(spec(1), now=0)
    other = jobs.add(spec(2), now=0)
    jobs.add(spec(3), now=0)
    jobs.claim("static", "host/1/Worker-1", 60, now=1, job_id=mine.id)
    jobs.claim("static", "host/12/Worker-1", 60, now=1, job_id=other.id)
    back = jobs.hand_back("host/1/", now=2)
    assert [(j.id, j.state, j.worker, j.lease_until, j.not_before) for j in back] == [(mine.id, "queued", None, None, 2)]
    assert {j.id: j.state for j in jobs.select()} == {mine.id: "queued", other.id: "running", mine.id + 2: "queued"}


def test_cancel_series_supersedes_its_queued_and_running_jobs(jobs: Jobs) -> None:
    running = jobs.add(spec(1), now=0)
    queued = jobs.add(spec(1, stage="build", arch="x86_64"), now=0)
    other = jobs.add(spec(2), now=0)
    assert jobs.claim("static", "w", 10, now=1, job_id=running.id) is not None
    assert jobs.cancel_series("s1", now=2) == 2
    assert not jobs.heartbeat(running.id, "w", 10, now=3)  # the running stage learns it here
    assert not jobs.finish(running.id, "w", {}, now=4)
    assert {j.id: j.state for j in jobs.select()} == {running.id: "cancelled", queued.id: "cancelled", other.id: "queued"}
    assert jobs.claim("build-x86_64", "w", 10, now=5) is None
    assert jobs.cancel_series("s1", now=6) == 0


def test_counts_per_list_pool_and_state(jobs: Jobs) -> None:
    jobs.add(spec(1), now=5)
    jobs.add(spec(2), now=3)
    jobs.add(spec(3, list="bpf", stage="build", arch="arm64"), now=7)
    jobs.claim("static", "w", 10, now=8)
    assert [(c.list, c.pool, c.state, c.jobs, c.oldest) for c in jobs.counts()] == [
        ("bpf", "build-arm64", "queued", 1, 7), ("netdev", "static", "queued", 1, 3), ("netdev", "static", "running", 1, 5)]
