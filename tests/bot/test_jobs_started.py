"""reviewer.bot.jobs' `started` column: when the current attempt was claimed, NULL while the job is queued; and a
jobs table made before the column gained it at the next start (SQLite and PostgreSQL)."""
from __future__ import annotations

import json

from reviewer.bot import sql
from reviewer.bot.jobs import Jobs, Spec

OLD_TABLE = """CREATE TABLE jobs (
    id {id}, key TEXT NOT NULL UNIQUE, list TEXT NOT NULL, series TEXT NOT NULL, stage TEXT NOT NULL,
    arch TEXT NOT NULL, config TEXT NOT NULL, base TEXT NOT NULL, pool TEXT NOT NULL, priority INTEGER NOT NULL,
    state TEXT NOT NULL, attempt INTEGER NOT NULL, max_attempts INTEGER NOT NULL, lease_until {real}, worker TEXT,
    not_before {real} NOT NULL, payload TEXT NOT NULL, result TEXT, error TEXT, created {real} NOT NULL,
    updated {real} NOT NULL)"""  # the table as the first release made it


def spec(n: int, **kw: object) -> Spec:
    return Spec(**{"list": "netdev", "series": f"s{n}", "stage": "static", **kw})  # type: ignore[arg-type]


def started(jobs: Jobs, job_id: int) -> float | None:
    job = jobs.get(job_id)
    assert job is not None
    return job.started


def test_a_claim_sets_started_and_queuing_again_clears_it(jobs: Jobs) -> None:
    job = jobs.add(spec(1, max_attempts=3), now=1)
    assert job.started is None
    claimed = jobs.claim("static", "w", 10, now=5)
    assert claimed is not None and claimed.started == 5
    assert jobs.heartbeat(job.id, "w", 10, now=8) and started(jobs, job.id) == 5  # a heartbeat is not a start
    again = jobs.fail(job.id, "w", "boom", now=9)
    assert again is not None and (again.state, again.started) == ("queued", None)
    assert jobs.claim("static", "w", 10, now=11) is not None and started(jobs, job.id) == 11
    assert [j.started for j in jobs.reap(now=30)] == [None]  # the lease expired: queued again
    assert jobs.claim("static", "w", 10, now=31) is not None
    last = jobs.fail(job.id, "w", "boom 3", now=33)
    assert last is not None and (last.state, last.started) == ("failed", 31)  # the last attempt's start stays


def test_a_finished_job_keeps_its_start_and_a_handed_back_one_loses_it(jobs: Jobs) -> None:
    done = jobs.add(spec(1), now=0)
    back = jobs.add(spec(2), now=0)
    jobs.claim("static", "host/1/a", 60, now=2, job_id=done.id)
    jobs.claim("static", "host/1/b", 60, now=3, job_id=back.id)
    assert jobs.finish(done.id, "host/1/a", {}, now=7)
    assert [j.started for j in jobs.hand_back("host/1/", now=8)] == [None]
    finished = jobs.get(done.id)
    assert finished is not None and (finished.state, finished.started, finished.updated) == ("done", 2, 7)


def test_a_table_made_before_the_column_gains_it(url: str) -> None:
    db = sql.Database(url)
    d = db.dialect
    with db.tx() as run:
        run(OLD_TABLE.format(id=d.id_column, real=d.real))
        run("INSERT INTO jobs (key, list, series, stage, arch, config, base, pool, priority, state, attempt, max_attempts, "
            "not_before, payload, created, updated) VALUES ('k', 'netdev', 's0', 'static', '', '', '', 'static', 0, 'done', 1, 3, "
            "0, ?, 1, 4)", (json.dumps({}),))
    db.close()
    for _ in range(2):  # the second start finds the column there
        with Jobs(url) as jobs:
            [old] = jobs.select()
            assert (old.state, old.created, old.started, old.updated) == ("done", 1, None, 4)
    with Jobs(url) as jobs:
        new = jobs.add(spec(1), now=10)
        claimed = jobs.claim("static", "w", 10, now=12)
        assert claimed is not None and (claimed.id, claimed.started) == (new.id, 12)
