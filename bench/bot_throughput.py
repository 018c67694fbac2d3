#!/usr/bin/env python3
"""The review bot's queue on this machine: static reviews per hour through huey with 1 and 2 workers, on
SqliteHuey and (when redis-server is installed) Redis, against the same static review run directly in
this process (the baseline: reviewer.app.review on the same mbox, as the `static` stage calls it; measured
again after the queue rows, to show how much the machine drifted). Every row: the median of RUNS (default 5)
batches, seconds per job.

Each queue row: consumers (reviewer.bot.queue.consume, in processes of their own, as `review bot worker`
runs them) are started and warmed with one job, then JOBS jobs (default 40), each the bundled demo series
(fixtures/series/loongarch-vdso-getrandom-v4.mbox, 4 patches; MBOX=PATH: another) in a directory of its own, are submitted
and timed until the jobs table says all are done. "1 worker" is one consumer with one worker thread;
"2 threads" is one consumer with two (the GIL shares one core between them); "2 processes" is two
consumers of one thread each. The consumers run as the bot runs them (an idle SqliteHuey worker polls 5 ms
after its last job, at most 1 s later: reviewer.bot.queue.POLL; Redis blocks on the queue). Target: the
queue's overhead per job (1 worker against the baseline) <= 5%; the 1-worker rows pair each batch with a
baseline batch run just before it and give the median of the RUNS ratios, so that the machine's drift
between rows cancels. As a review's time varies on a busy machine more than 5% even so, the overhead is also
measured alone: jobs through the same path whose stage does nothing
(registered as "noop" in the consumers), against a review's time.
Redis runs on a loopback port in a temporary directory, without persistence, and is stopped by its PID.

Measured 2026-12-06 (2 CPUs, shared: load 2 to 3), the queue alone, before -> after the queue's SQLite
commits went without an fsync each (synchronous=NORMAL, as the jobs table's), one heartbeat thread per
consumer instead of one per job, and the polling above (huey's 0.1 s to 10 s before): SqliteHuey 3.1 ->
0.7 ms a job (9.2% -> 2.2% of a 32 ms review), Redis 1.3 -> 1.3 ms (4.0% -> 4.1%); three more runs
after: SqliteHuey 0.6 to 0.8 ms (1.9% to 2.5%), Redis 1.1 to 1.5 ms (3.3% to 3.7%). The 1-worker rows with a
review, even paired, moved from -6% to +28% (SqliteHuey) and +0.5% to +13% (Redis) from run to run: on this
machine a review's own time moves more than the queue costs.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _common import ROOT, RUNS, env, scratch, table

from bench._cli import usage
from bench._procs import stop_groups

JOBS = int(os.environ.get("JOBS", "40"))
MBOX = Path(os.environ.get("MBOX", ROOT / "fixtures/series/loongarch-vdso-getrandom-v4.mbox"))
CONSUMER = ("import json, sys; from pathlib import Path; from reviewer.bot import queue, stages; f = json.loads(sys.argv[1]); "
            "stages.register('noop', lambda job, stop: {}); "
            "queue.consume(queue.Settings(home=Path(f.pop('home')), **f), sys.argv[3], workers=int(sys.argv[2]))")


def mboxes(work: Path, tag: str, count: int) -> list[Path]:
    out = []
    for i in range(count):
        where = work / tag / str(i)
        where.mkdir(parents=True)
        out.append(Path(shutil.copy(MBOX, where / "series.mbox")))
    return out


def direct(paths: list[Path]) -> float:
    """Seconds per review, the reviews run one after the other in this process."""
    from reviewer import app
    from reviewer.request import ReviewRequest, SourceOptions

    start = time.perf_counter()
    for mbox in paths:
        app.review(ReviewRequest(SourceOptions(target=str(mbox), cwd=mbox.parent, offline=True)))
    return (time.perf_counter() - start) / len(paths)


@contextmanager
def consumers(settings: dict[str, str], pool: str, layout: tuple[int, ...], environ: dict[str, str]) -> Iterator[None]:
    """One consumer process per entry of LAYOUT (its worker threads), each in a process group of its own,
    stopped by SIGTERM to that group (SIGKILL 30 s later)."""
    procs = [subprocess.Popen([sys.executable, "-c", CONSUMER, json.dumps(settings), str(n), pool], env=environ, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for n in layout]
    try:
        yield
    finally:
        stop_groups(procs, signal.SIGTERM, 30)


def through_queue(work: Path, tag: str, queue_url: str, layout: tuple[int, ...], environ: dict[str, str], stage: str = "static", *,
                  paired: bool = False) -> tuple[float, float | None]:
    """Seconds per job through the queue: JOBS jobs submitted to warmed consumers, until all are done (median of RUNS batches).
    PAIRED: each batch follows a baseline batch in this process, and the median of the RUNS ratios comes second (else None)."""
    from reviewer.bot.jobs import Spec
    from reviewer.bot.queue import Bot, Settings

    home = work / tag / "home"
    settings = Settings(home=home, queue=queue_url)
    bot = Bot(settings)
    try:
        with consumers({"home": str(home), "queue": queue_url}, stage, layout, environ):
            warm = [bot.submit(Spec("bench", f"warm{i}", stage, payload={"mbox": str(m)}))
                    for i, m in enumerate(mboxes(work, f"{tag}-warm", len(layout)))]
            wait(home, [j.id for j in warm], 300)
            times, ratios = [], []
            for run in range(RUNS):
                base = direct(mboxes(work, f"{tag}-direct{run}", JOBS)) if paired else None
                paths = mboxes(work, f"{tag}-{run}", JOBS)
                start = time.perf_counter()
                ids = [bot.submit(Spec("bench", f"s{run}.{i}", stage, payload={"mbox": str(m)})).id for i, m in enumerate(paths)]
                wait(home, ids, 60 + 60 * JOBS)
                times.append((time.perf_counter() - start) / JOBS)
                ratios += [times[-1] / base] if base else []
            return statistics.median(times), statistics.median(ratios) if ratios else None
    finally:
        bot.close()


def wait(home: Path, ids: list[int], seconds: float) -> None:
    """Until the jobs IDS are done. Read with a plain reader of the WAL database (the table's own calls take the
    write lock: polling with them would slow the workers down)."""
    marks = ", ".join("?" * len(ids))
    deadline = time.monotonic() + seconds
    with contextlib.closing(sqlite3.connect(home / "jobs.db")) as db:
        while True:
            states = dict(db.execute(f"SELECT state, COUNT(*) FROM jobs WHERE id IN ({marks}) GROUP BY state", ids).fetchall())
            if states.get("done") == len(ids):
                return
            if states.get("failed") or time.monotonic() > deadline:
                raise RuntimeError(f"jobs not done: {states}")
            time.sleep(0.01)


@contextmanager
def redis_server(work: Path) -> Iterator[str | None]:
    """A redis-server of this script's own on a free loopback port (None when it is not installed)."""
    binary = shutil.which("redis-server")
    try:
        import redis
    except ImportError:
        binary = None
    if binary is None:
        yield None
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    (work / "redis").mkdir()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(work / "redis"), "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    with scratch("bot") as tmp:
        work = Path(tmp)
        environ = env(work / "home") | {"PYTHONPATH": str(ROOT)}
        os.environ.update({k: v for k, v in environ.items() if k.startswith(("HOME", "XDG_"))})  # the same caches as the consumers'
        direct(mboxes(work, "warm", 1))
        base = statistics.median(direct(mboxes(work, f"direct{i}", JOBS)) for i in range(RUNS))
        rows: list[tuple[str, float, float | None, str]] = [
            ("static review in this process (baseline)", base, 1.0, f"{3600 / base:,.0f} reviews/hour")]
        with redis_server(work) as redis_url:
            queues = [("SqliteHuey", "sqlite"), *([("Redis", redis_url)] if redis_url else [])]
            for name, url in queues:
                for label, layout in (("1 worker", (1,)), ("2 threads, 1 consumer", (2,)), ("2 processes", (1, 1))):
                    per_job, ratio = through_queue(work, f"{name}-{len(layout)}-{sum(layout)}", url, layout, environ, paired=layout == (1,))
                    over = f"; overhead {ratio - 1:+.1%} against a baseline batch before each (target <= +5%)" if ratio else ""
                    rows.append((f"{name}, {label}", per_job, per_job / base, f"{3600 / per_job:,.0f} reviews/hour{over}"))
                alone, _ = through_queue(work, f"{name}-noop", url, (1,), environ, stage="noop")
                rows.append((f"{name}, 1 worker, a stage that does nothing", alone, alone / base,
                             f"the queue alone: {1000 * alone:.1f} ms/job, {alone / base:.1%} of a review"))
        again = statistics.median(direct(mboxes(work, f"direct-again{i}", JOBS)) for i in range(RUNS))
        rows.append(("baseline again, after the queue rows (the drift)", again, again / base, ""))
        if not redis_url:
            rows.append(("Redis: skipped (redis-server or the redis package not installed)", 0.0, None, ""))
        table(f"Static reviews through the bot's queue, batches of {JOBS} jobs, seconds per job (os.cpu_count() = {os.cpu_count()})", rows,
              runs=RUNS)


if __name__ == "__main__":
    usage(__doc__)
    main()
