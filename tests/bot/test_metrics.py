"""The bot's metrics, read back with Prometheus' own parser (prometheus_client), from a jobs table and an outbox
filled as the bot fills them, in SQLite (and PostgreSQL: the same SQL); the HTTP endpoint on 127.0.0.1."""
from __future__ import annotations

import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from reviewer.bot import metrics
from reviewer.bot.jobs import Jobs, Spec
from reviewer.bot.outbox import Mail, Outbox

T = 1_000_000.0
DAY = metrics.DAY
HOSTILE = 'net"dev\\x\n} evil_metric 1 # {le="'


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples}


def value(text: str, name: str, **labels: str) -> float:
    return samples(text)[(name, tuple(sorted(labels.items())))]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The jobs table's database: SQLite in the bot's home, or a throw-away PostgreSQL database (tests/bot/servers.py)."""
    if request.param == "sqlite":
        return str(tmp_path / "jobs.db")
    return str(request.getfixturevalue("pg_db"))


def populated(path: Path, url: str | None = None) -> str:
    """Series a: static done after 30 s, build done 400 s later, reported at 410 s; series b: static done, build still queued;
    series c: one static queued 100 s ago; one failed job; two mails sent today, one two days ago, one queued.
    Each done job waited 5 s before a worker claimed it."""
    url = url or str(path / "jobs.db")
    with Jobs(url) as jobs:
        def done(series: str, stage: str, arch: str, start: float, end: float) -> None:
            job = jobs.add(Spec("netdev", series, stage, arch), now=start)
            jobs.claim(job.pool, "w", 60, now=start + 5, job_id=job.id)
            assert jobs.finish(job.id, "w", {"status": 0}, now=end)

        done("a", "static", "", T, T + 30)
        done("a", "build", "x86_64", T, T + 400)
        done("a", "report", "", T + 400, T + 410)
        done("b", "static", "", T, T + 10)
        jobs.add(Spec("netdev", "b", "build", "x86_64"), now=T + 5)
        jobs.add(Spec("netdev", "c", "static"), now=T + 900)
        failed = jobs.add(Spec("bpf", "d", "static", max_attempts=1), now=T)
        jobs.claim("static", "w", 60, now=T, job_id=failed.id)
        jobs.fail(failed.id, "w", "boom", now=T + 1)
        box = Outbox(jobs.db)
        for key, when in (("m1", T + 500), ("m2", T + 600), ("old", T - 2 * metrics.DAY)):
            box.put([Mail(key, b"Subject: x\n\nbody\n")], list_name="netdev", now=when)
            box.drain(lambda _row: None, now=when)
        box.put([Mail("m3", b"Subject: y\n\nbody\n")], list_name=HOSTILE, now=T + 700)
    return url


def test_the_text_parses_and_says_what_the_tables_hold(tmp_path: Path, url: str) -> None:
    m = metrics.Metrics(populated(tmp_path, url), lists=["netdev", "bpf"])
    try:
        text = m.render(now=T + 1000)
    finally:
        m.close()
    types = {f.name: f.type for f in text_string_to_metric_families(text)}
    assert types == {"reviewer_bot_jobs": "gauge", "reviewer_bot_oldest_waiting_seconds": "gauge", "reviewer_bot_job_seconds": "histogram",
                     "reviewer_bot_series_first_result_seconds": "histogram", "reviewer_bot_series_final_result_seconds": "histogram",
                     "reviewer_bot_stage_seconds": "histogram", "reviewer_bot_mails_sent": "counter",
                     "reviewer_bot_mails_last_day": "gauge", "reviewer_bot_outbox_rows": "gauge"}
    assert value(text, "reviewer_bot_jobs", pool="static", state="queued") == 1
    assert value(text, "reviewer_bot_jobs", pool="static", state="done") == 2
    assert value(text, "reviewer_bot_jobs", pool="static", state="failed") == 1
    assert value(text, "reviewer_bot_jobs", pool="build-x86_64", state="queued") == 1
    assert value(text, "reviewer_bot_jobs", pool="build-x86_64", state="running") == 0
    assert value(text, "reviewer_bot_oldest_waiting_seconds", pool="static") == 100
    assert value(text, "reviewer_bot_oldest_waiting_seconds", pool="build-x86_64") == 995
    assert value(text, "reviewer_bot_job_seconds_count", stage="static") == 2
    assert value(text, "reviewer_bot_job_seconds_sum", stage="static") == 40
    assert value(text, "reviewer_bot_job_seconds_bucket", stage="static", le="15.0") == 1
    assert value(text, "reviewer_bot_job_seconds_bucket", stage="build", le="300.0") == 0
    assert value(text, "reviewer_bot_job_seconds_bucket", stage="build", le="+Inf") == 1
    assert value(text, "reviewer_bot_stage_seconds_count", stage="static") == 2
    assert value(text, "reviewer_bot_stage_seconds_sum", stage="static") == 30  # 25 + 5: the runs, not the 5 s waits
    assert value(text, "reviewer_bot_stage_seconds_bucket", stage="static", le="5.0") == 1
    assert value(text, "reviewer_bot_stage_seconds_sum", stage="build") == 395
    assert value(text, "reviewer_bot_series_first_result_seconds_count") == 2  # a and b; c and d have no result
    assert value(text, "reviewer_bot_series_first_result_seconds_sum") == 40
    assert value(text, "reviewer_bot_series_final_result_seconds_count") == 1  # a only: b still has a build queued, no report
    assert value(text, "reviewer_bot_series_final_result_seconds_sum") == 410  # to its report
    assert value(text, "reviewer_bot_mails_last_day", list="netdev") == 2
    assert value(text, "reviewer_bot_mails_sent_total", list="netdev") == 3  # the one of two days ago too
    assert value(text, "reviewer_bot_mails_sent_total", list="bpf") == 0
    assert value(text, "reviewer_bot_mails_last_day", list="bpf") == 0
    assert value(text, "reviewer_bot_outbox_rows", kind="mail", state="sent") == 3
    assert value(text, "reviewer_bot_outbox_rows", kind="mail", state="queued") == 1


def test_per_list_and_day_and_per_stage_as_a_scrape_later_sees_them(tmp_path: Path) -> None:
    url = populated(tmp_path)
    with Jobs(url) as jobs:
        with jobs.db.tx() as run:  # a job done before the table had its started column: no run time known
            run("UPDATE jobs SET started = NULL WHERE stage = 'build'")
        box = Outbox(jobs.db)
        box.put([Mail("m5", b"Subject: z\n\nbody\n")], list_name="bpf", now=T + DAY)
        box.drain(lambda _row: None, now=T + DAY)
    m = metrics.Metrics(url, lists=["netdev", "bpf"])
    try:
        first, later = m.render(now=T + 1000), m.render(now=T + DAY + 1000)
    finally:
        m.close()
    assert ("reviewer_bot_stage_seconds_count", (("stage", "build"),)) not in samples(first)
    assert value(first, "reviewer_bot_job_seconds_count", stage="build") == 1
    assert [value(t, "reviewer_bot_mails_sent_total", list="netdev") for t in (first, later)] == [3, 3]  # a counter never falls
    assert [value(t, "reviewer_bot_mails_last_day", list="netdev") for t in (first, later)] == [2, 0]  # the window moved on
    assert [value(t, "reviewer_bot_mails_sent_total", list="bpf") for t in (first, later)] == [1, 1]  # m5: sent at T + DAY


def test_a_hostile_label_value_is_escaped_and_read_back_whole(tmp_path: Path) -> None:
    url = populated(tmp_path)
    with Jobs(url) as jobs:
        box = Outbox(jobs.db)
        box.put([Mail("m4", b"Subject: z\n\nbody\n")], list_name=HOSTILE, now=T + 800)
        box.drain(lambda _row: None, now=T + 800)
    m = metrics.Metrics(url)
    try:
        text = m.render(now=T + 1000)
    finally:
        m.close()
    assert value(text, "reviewer_bot_mails_last_day", list=HOSTILE) == 2  # m3 and m4, both sent by the drain
    assert "evil_metric" not in {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    assert all(line.startswith(("#", "reviewer_bot_")) for line in text.splitlines())
    assert metrics.escape('a\\b"c\nd') == 'a\\\\b\\"c\\nd'


def test_write_replaces_the_file_at_once(tmp_path: Path) -> None:
    m = metrics.Metrics(populated(tmp_path))
    target = tmp_path / "textfile" / "reviewer_bot.prom"
    target.parent.mkdir()
    target.write_text("old\n")
    try:
        m.write(target, now=T + 1000)
    finally:
        m.close()
    assert [p.name for p in target.parent.iterdir()] == ["reviewer_bot.prom"]  # no temporary file left
    assert value(target.read_text(), "reviewer_bot_jobs", pool="static", state="queued") == 1
    assert target.stat().st_mode & 0o777 == 0o644


def test_the_endpoint_answers_on_loopback_and_stops(tmp_path: Path) -> None:
    m = metrics.Metrics(populated(tmp_path))
    before = threading.active_count()
    server = m.serve("127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{server.port}"
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
            assert r.status == 200 and r.headers["Content-Type"] == metrics.CONTENT_TYPE
            text = r.read().decode()
        assert value(text, "reviewer_bot_jobs", pool="static", state="queued") == 1
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{url}/other", timeout=10)
        assert missing.value.code == 404
    finally:
        server.close()
        m.close()
    assert threading.active_count() == before and not server.thread.is_alive()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{url}/metrics", timeout=2)
