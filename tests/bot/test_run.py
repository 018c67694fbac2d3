"""`review bot run --once` end to end, with real parts: a public-inbox v2 archive made here and served by
public-inbox-httpd on 127.0.0.1, mirrored with public-inbox-clone (and brought up to date by the bot's own
public-inbox-fetch), the bot as a subprocess (`python -m reviewer`), its SqliteHuey consumer in that process,
and an aiosmtpd SMTP server receiving the mails (git send-email's sendemail.* in the config's directory)."""
from __future__ import annotations

import email
import email.policy
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

import pytest
import redis
import requests
from prometheus_client.parser import text_string_to_metric_families

from bench._lore import Httpd, Inbox, free_port, make_inbox, start_httpd
from reviewer.bot.jobs import Jobs
from tests.bot.conftest import clone
from tests.bot.mails import LIST, mail, series
from tests.bot.pwserver import TOKEN, Patchwork
from tests.mail.test_send import Inbox as SmtpInbox

ROOT = Path(__file__).resolve().parents[2]
BOT = "reviewer-bot <bot@example.org>"


@dataclass
class Site:
    inbox: Inbox
    config: Path
    smtp: SmtpInbox

    def deliver(self, mails: list[bytes]) -> None:
        for m in mails:
            self.inbox.deliver(m)

    def bot(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.run([sys.executable, "-m", "reviewer", "bot", "--config", str(self.config), *args], cwd=self.config.parent,
                              env=env, capture_output=True, text=True, timeout=timeout, check=False)

    def run_once(self, timeout: float = 300) -> list[EmailMessage]:
        """One tick of `review bot run --once`; the mails the SMTP server got during it."""
        before = len(self.smtp.received)
        done = self.bot("run", "--once", timeout=timeout)
        assert done.returncode == 0, done.stderr
        return [_parse(data) for _, _, data in self.smtp.received[before:]]


def _parse(data: bytes) -> EmailMessage:
    msg = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    return msg


@pytest.fixture
def site(tmp_path: Path, smtp: tuple[SmtpInbox, int]) -> Iterator[Site]:
    inbox = make_inbox(tmp_path / "archive")
    inbox.deliver(mail("first@example.org", "the list's first mail", "hello\n"))  # an empty inbox answers 404
    httpd: Httpd = start_httpd(inbox, tmp_path / "httpd.log")
    try:
        mirror = clone(httpd, tmp_path / "mirror")
        conf = tmp_path / "bot"
        conf.mkdir()
        subprocess.run(["git", "init", "-q", str(conf)], check=True)
        for key, value in {"user.name": "reviewer-bot", "user.email": "bot@example.org", "sendemail.smtpServer": "127.0.0.1",
                           "sendemail.smtpServerPort": str(smtp[1])}.items():
            subprocess.run(["git", "-C", str(conf), "config", key, value], check=True)
        config = conf / "bot.toml"
        config.write_text(f'[bot]\nhome = "state"\n\n[lists.test]\nmirror = "{mirror}"\nmail = "author+list"\nsettle = 0\n'
                          'quiet_on_clean = false\nrfc = "static"\nmaintainers = ["maint@example.org"]\n')
        smtp[0].refuse.clear()
        yield Site(inbox, config, smtp[0])
    finally:
        httpd.stop()


def _about(msgs: list[EmailMessage]) -> dict[str, EmailMessage]:
    """The mails by the Message-ID they answer (In-Reply-To, without <>)."""
    return {str(m["In-Reply-To"]).strip("<>"): m for m in msgs}


def test_a_list_gets_exactly_the_mails_its_policy_says(site: Site) -> None:
    site.deliver(series("full", "PATCH", "lib: tidy the helpers", 3))
    site.deliver(series("part", "PATCH", "mm: fix a leak", 3, parts=(1, 3)))  # part 2 never comes: incomplete
    site.deliver(series("rfc", "RFC PATCH", "net: an idea", 2))
    first = _about(site.run_once())
    assert sorted(first) == ["full.0@example.org", "rfc.0@example.org"]  # none for the incomplete series
    for cover, msg in first.items():
        assert msg["References"].split()[-1] == f"<{cover}>"
        assert msg["To"].addresses[0].addr_spec == "ann@example.org" and LIST in str(msg["Cc"])
        assert msg["Auto-Submitted"] == "auto-generated"
        body = str(msg.get_body(preferencelist=("plain",)).get_content())  # type: ignore[union-attr]
        assert "reviewer-bot: stop" in body and "Base commit: " in body
        assert not any(line.lower().startswith(("reviewed-by:", "acked-by:", "tested-by:")) for line in body.splitlines())

    site.deliver(series("again", "PATCH RESEND", "lib: tidy the helpers", 3))  # the same patches: nothing new
    site.deliver(series("part2", "PATCH v2", "mm: fix a leak", 3, change=" v2"))
    second = _about(site.run_once())
    assert sorted(second) == ["part2.0@example.org"]  # none for the RESEND

    assert site.run_once() == []  # nothing new: nothing sent again
    status = json.loads(site.bot("status", "--format", "json").stdout)
    pools = status["lists"]["test"]["pools"]
    assert all(p["queued"] == 0 and p["running"] == 0 and p["failed"] == 0 for p in pools.values()), pools
    assert pools["static"]["done"] == 4  # full, part (static only), rfc, part v2
    assert status["outbox"] == {"queued": 0, "sent": 3, "failed": 0, "errors": []}


def test_a_stop_from_the_author_stops_the_mail_and_one_from_anyone_else_is_ignored(site: Site) -> None:
    site.deliver(series("mine", "PATCH", "fs: a fix", 2))
    site.deliver(series("theirs", "PATCH", "fs: another fix", 2))
    site.deliver([mail("stop1@example.org", "Re: [PATCH 0/2] fs: a fix", "Please don't.\n\nreviewer-bot: stop\n",
                       reply_to="mine.0@example.org"),
                  mail("stop2@example.org", "Re: [PATCH 0/2] fs: another fix", "reviewer-bot: stop\n",
                       sender="Mallory <mallory@example.org>", reply_to="theirs.0@example.org")])
    sent = _about(site.run_once())
    assert sorted(sent) == ["theirs.0@example.org"]
    doc = json.loads(site.bot("status", "--format", "json").stdout)
    assert doc["lists"]["test"]["pools"]["report"]["done"] == 2  # both decided: one mailed, one stopped


def test_enqueue_by_message_id_and_clear_errors(site: Site) -> None:
    site.deliver(series("byhand", "PATCH", "kernel: by hand", 2))
    subprocess.run(["public-inbox-fetch", "-q", "-C", json.loads(site.bot("status", "--format", "json").stdout)["lists"]["test"]["mirror"]],
                   check=True, capture_output=True, timeout=120)
    done = site.bot("enqueue", "byhand.2@example.org")
    assert done.returncode == 0, done.stderr
    assert "queued job" in done.stdout and "(static, list test)" in done.stdout
    again = site.bot("enqueue", "<byhand.0@example.org>")
    assert again.returncode == 0 and "already there" in again.stdout
    missing = site.bot("enqueue", "nowhere@example.org")
    assert missing.returncode == 4 and missing.stderr.startswith("review: error: enqueue nowhere@example.org: no series"), missing.stderr


def test_run_stops_on_sigterm_and_leaves_no_process_behind(site: Site) -> None:
    """... and publishes its metrics meanwhile, on a loopback port and in a file, read by Prometheus' own parser."""
    port = free_port()
    site.config.write_text(site.config.read_text().replace('home = "state"', f'home = "state"\nmetrics_listen = "127.0.0.1:{port}"\n'
                                                                            'metrics_file = "bot.prom"'))
    site.deliver(series("live", "PATCH", "lib: live", 2))
    log = (site.config.parent / "run.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "reviewer", "bot", "--config", str(site.config), "run", "--interval", "1"],
                            cwd=site.config.parent, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=log, stderr=log,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not site.smtp.received and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert len(site.smtp.received) == 1, (site.config.parent / "run.log").read_text()
        scraped = _families(requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
        assert scraped["reviewer_bot_jobs"][("static", "done")] == 1 and scraped["reviewer_bot_mails_last_day"][("test",)] >= 0
        time.sleep(1.5)  # a tick after the mail went: the file has it too
        written = _families((site.config.parent / "bot.prom").read_text())
        assert written["reviewer_bot_mails_last_day"][("test",)] == 1 and written["reviewer_bot_jobs"][("static", "done")] == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, (site.config.parent / "run.log").read_text()
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)  # no process of its group is left
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _families(text: str) -> dict[str, dict[tuple[str, ...], float]]:
    """Prometheus' text format read by prometheus_client's parser: per family, the samples' label values -> value."""
    out: dict[str, dict[tuple[str, ...], float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(s.labels.values())] = s.value
    return out


def test_replay_reviews_a_range_again_and_sends_nothing_without_send(site: Site) -> None:
    site.deliver(series("old", "PATCH", "lib: replayed", 2))
    assert len(site.run_once()) == 1
    mirror = Path(json.loads(site.bot("status", "--format", "json").stdout)["lists"]["test"]["mirror"])
    commits = subprocess.run(["git", "-C", str(mirror / "git" / "0.git"), "log", "--reverse", "--format=%H"], check=True,
                             capture_output=True, text=True).stdout.split()
    done = site.bot("replay", f"{commits[0]}..{commits[-1]}")
    assert done.returncode == 0, done.stderr
    assert "would send: Re: [PATCH 0/2] lib: replayed" in done.stdout, done.stdout
    assert len(site.smtp.received) == 1  # nothing sent again
    bad = site.bot("replay", "nothing")
    assert bad.returncode == 2 and "replay nothing: not FROM..TO" in bad.stderr


def test_the_same_with_redis_postgresql_and_two_worker_processes(site: Site, redis_url: str, pg_db: str) -> None:
    redis.Redis.from_url(redis_url).flushdb()  # the session's server: no task of another test's table
    site.config.write_text(site.config.read_text().replace('home = "state"', f'home = "state"\nqueue = "{redis_url}"\ndb = "{pg_db}"'))
    site.deliver(series("full", "PATCH", "lib: tidy the helpers", 3))
    site.deliver(series("part", "PATCH", "mm: fix a leak", 3, parts=(1, 3)))
    site.deliver(series("rfc", "RFC PATCH", "net: an idea", 2))
    assert site.bot("run", "--workers", "0", "--once").returncode == 0  # feeds and sender only: the jobs wait for workers
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    logs = [(site.config.parent / f"worker-{n}.log").open("wb") for n in range(2)]
    elsewhere = site.config.parent / "elsewhere.toml"  # the workers' machine: a home of its own, the same queue and table
    elsewhere.write_text(site.config.read_text().replace('home = "state"', 'home = "worker-state"'))
    workers = [subprocess.Popen([sys.executable, "-m", "reviewer", "bot", "--config", str(elsewhere), "worker", "--pool", "static"],
                                cwd=site.config.parent, env=env, stdout=log, stderr=log, start_new_session=True) for log in logs]
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pools = json.loads(site.bot("status", "--format", "json").stdout)["lists"]["test"]["pools"]
            if pools["static"]["done"] == 3:
                break
            time.sleep(0.5)
        assert pools["static"]["done"] == 3, pools
        # The workers read the series from the jobs database, not from run's home: each mbox is in theirs too.
        theirs = sorted(p.name for p in (site.config.parent / "worker-state" / "mbox").glob("*.mbox"))
        assert theirs == sorted(p.name for p in (site.config.parent / "state" / "mbox").glob("*.mbox")) and len(theirs) == 3
        for w in workers:
            w.send_signal(signal.SIGTERM)
        assert [w.wait(timeout=60) for w in workers] == [0, 0]
    finally:
        for w in workers:
            if w.poll() is None:
                os.killpg(w.pid, signal.SIGKILL)
                w.wait()
        for log in logs:
            log.close()
    sent = _about(_tick_without_workers(site))
    assert sorted(sent) == ["full.0@example.org", "rfc.0@example.org"]
    status = json.loads(site.bot("status", "--format", "json").stdout)
    assert all(p["queued"] == 0 and p["running"] == 0 for p in status["lists"]["test"]["pools"].values())
    assert status["outbox"]["sent"] == 2


def _tick_without_workers(site: Site) -> list[EmailMessage]:
    before = len(site.smtp.received)
    done = site.bot("run", "--workers", "0", "--once")
    assert done.returncode == 0, done.stderr
    return [_parse(data) for _, _, data in site.smtp.received[before:]]


def test_a_worker_killed_mid_review_loses_no_series_and_doubles_no_mail(site: Site, redis_url: str) -> None:
    redis.Redis.from_url(redis_url).flushdb()
    site.config.write_text(site.config.read_text().replace('home = "state"', f'home = "state"\nqueue = "{redis_url}"\nlease = 2'))
    for n in range(3):
        site.deliver(series(f"big{n}", "PATCH", f"drivers: big change {n}", 16))  # a review long enough to be killed in
    assert site.bot("run", "--workers", "0", "--once").returncode == 0
    table = Jobs(site.config.parent / "state" / "jobs.db")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    logs = [(site.config.parent / f"worker-{n}.log").open("wb") for n in range(2)]
    workers = [subprocess.Popen([sys.executable, "-m", "reviewer", "bot", "--config", str(site.config), "worker", "--pool", "static"],
                                cwd=site.config.parent, env=env, stdout=log, stderr=log, start_new_session=True) for log in logs]
    victim, survivor = workers
    try:
        deadline = time.monotonic() + 120
        killed = None
        while killed is None and time.monotonic() < deadline:
            killed = next((j for j in table.select(state="running") if f"/{victim.pid}/" in (j.worker or "")), None)
            time.sleep(0.02)
        assert killed is not None, "the victim never ran a job"
        os.killpg(victim.pid, signal.SIGKILL)  # mid-review: its job stays running until its lease ends
        victim.wait()
        assert table.get(killed.id).state == "running"  # type: ignore[union-attr]
        while time.monotonic() < deadline and len(table.select(pool="static", state="done")) < 3:
            time.sleep(0.5)
        assert len(table.select(pool="static", state="done")) == 3, (site.config.parent / "worker-1.log").read_text()
        assert table.get(killed.id).attempt == 2  # type: ignore[union-attr]
        survivor.send_signal(signal.SIGTERM)
        assert survivor.wait(timeout=60) == 0
    finally:
        table.close()
        for w in workers:
            if w.poll() is None:
                os.killpg(w.pid, signal.SIGKILL)
                w.wait()
        for log in logs:
            log.close()
    sent = [str(m["In-Reply-To"]) for m in _tick_without_workers(site)]
    assert sorted(sent) == [f"<big{n}.0@example.org>" for n in range(3)]  # each once
    assert _tick_without_workers(site) == []


def test_the_apply_stage_applies_to_the_lists_tree_and_checks_go_to_patchwork(site: Site, kernel_repo: Path,
                                                                                   patchwork: Patchwork) -> None:
    for k in (1, 2):  # the files the test series change (mails.diff: "context one / old K / context two")
        (kernel_repo / f"lib/f{k}.c").write_text(f"context one\nold {k}\ncontext two\n")
    subprocess.run(["git", "-C", str(kernel_repo), "add", "lib"], check=True)
    subprocess.run(["git", "-C", str(kernel_repo), "commit", "-q", "-m", "lib: the files the series change"], check=True)
    head = subprocess.run(["git", "-C", str(kernel_repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    api = patchwork.url.replace("/api/1.1", "/api/1.2")
    (site.config.parent / "pw.token").write_text(TOKEN + "\n")
    site.config.write_text(site.config.read_text() + f'stages = ["static", "apply"]\ntree = "{kernel_repo}"\n'
                           f'patchwork = {{ url = "{api}", project = "test", checks = true, token_file = "pw.token" }}\n')
    good, bad = series("good", "PATCH", "lib: two files", 2), series("bad", "PATCH", "lib: three files", 3)  # bad's lib/f3.c is not there
    ids = {f"<{tag}.{k}@example.org>": 100 * n + k for n, (tag, count) in enumerate((("good", 2), ("bad", 3)), 1)
           for k in range(1, count + 1)}
    patchwork.patches.update({("test", m): i for m, i in ids.items()})
    site.deliver(good + bad)

    sent = _about(site.run_once())
    assert sorted(sent) == ["bad.0@example.org", "good.0@example.org"]
    body = {k: str(m.get_body(preferencelist=("plain",)).get_content()).replace("\r\n", "\n")  # type: ignore[union-attr]
            for k, m in sent.items()}
    assert body["bad.0@example.org"].split("\n\n")[1].startswith(f"The series does not apply to {head[:12]}: patch 3/3")
    assert f"Base commit: {head}" in body["good.0@example.org"]
    assert "does not apply" not in body["good.0@example.org"]
    posted = {(p, b["context"]): b["state"] for m, p, _, b in patchwork.seen if m == "POST"}
    assert len(posted) == 10  # 5 patches, a check each for static and apply
    assert {posted[(f"/api/1.2/patches/{i}/checks/", "reviewer-apply")] for i in (201, 202, 203)} == {"fail"}
    assert {posted[(f"/api/1.2/patches/{i}/checks/", "reviewer-apply")] for i in (101, 102)} <= {"success", "warning"}
    status = json.loads(site.bot("status", "--format", "json").stdout)
    assert status["lists"]["test"]["pools"]["apply"]["done"] == 2
    assert status["outbox"]["sent"] == 12 and status["outbox"]["failed"] == 0
