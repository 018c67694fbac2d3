#!/usr/bin/env python3
"""The review bot's latency: seconds from a series' arrival in the list's archive to the bot's reply at the SMTP
server, median and 95th percentile (issue 32: "time from a mail's arrival in the mirror to its reply at the SMTP
server").

Everything is real, on loopback: a public-inbox v2 archive made here (bench/_lore.py) and served by
public-inbox-httpd on 127.0.0.1; the bot's mirror of it made with public-inbox-clone; an aiosmtpd SMTP server
in this process recording when each mail arrives; and the bot itself, `python -m reviewer bot --config FILE run
--interval INTERVAL` in a process group of its own (public-inbox-fetch each tick, the static review in its
SqliteHuey consumer thread, the report, the send over SMTP configured as git send-email is). One series is
delivered and answered first, to warm the bot up (not counted). Then SERIES series (default 20), each a cover
letter and 2 patches written here, are delivered one at a time with public-inbox-mda, GAP seconds apart on
average (default 3; each gap drawn uniformly from 0 to 2 GAP, seeded by SEED, default 1), so that they arrive
at different points of the tick. A series arrives when the delivery of its last part returned; its reply is
the mail whose In-Reply-To or References names its cover letter. INTERVAL: seconds between two ticks (default
5; `review bot run` waits that long after each tick's work). SETTLE (default 60): the list's settle time; a
complete series is ready at once whatever it is, but with 0 a tick that falls between the deliveries of two
parts decides the series incomplete, and an incomplete series is never mailed. The replies are waited for
until TIMEOUT seconds (default 60 + 4 INTERVAL) after the last arrival: the script then says which series got
none and exits 1.

The breakdown (medians) comes from the bot's jobs table: arrival to the static job queued (waiting for a tick,
then public-inbox-fetch and assembly), the job queued to done (the consumer noticing it and the review), done
to its report job (waiting for a later tick: the reply is written by the tick after the review's), and the
report to the reply's arrival at the SMTP server.
"""
from __future__ import annotations

import contextlib
import email
import email.policy
import email.utils
import importlib.util
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import AUTHOR, ROOT, env, scratch, table

from bench._cli import usage
from bench._lore import ADDRESS, Inbox, bot_site, free_port, make_inbox, start_httpd
from bench._procs import stop_groups

SERIES = int(os.environ.get("SERIES", "20"))
INTERVAL = float(os.environ.get("INTERVAL", "5"))
GAP = float(os.environ.get("GAP", "3"))
SEED = int(os.environ.get("SEED", "1"))
SETTLE = float(os.environ.get("SETTLE", "60"))
TIMEOUT = float(os.environ.get("TIMEOUT", str(60 + 4 * INTERVAL)))
TOOLS = ("public-inbox-init", "public-inbox-mda", "public-inbox-httpd", "public-inbox-clone", "public-inbox-fetch")


@dataclass
class Smtp:
    """aiosmtpd's handler: (arrival, message) of each mail received. Wall-clock time (time.time), as the bot's tables keep."""

    received: list[tuple[float, bytes]] = field(default_factory=list)

    async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        self.received.append((time.time(), envelope.original_content))
        return "250 Message accepted for delivery"


@contextlib.contextmanager
def smtp_server() -> Iterator[tuple[Smtp, int]]:
    from aiosmtpd.controller import Controller

    handler, port = Smtp(), free_port()
    ctl = Controller(handler, hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        yield handler, port
    finally:
        ctl.stop()


def mail(msgid: str, subject: str, body: str, reply_to: str | None = None) -> bytes:
    thread = f"In-Reply-To: <{reply_to}>\nReferences: <{reply_to}>\n" if reply_to else ""
    return (f"From: {AUTHOR}\nTo: {ADDRESS}\nSubject: {subject}\nDate: {email.utils.formatdate()}\nMessage-ID: <{msgid}>\n{thread}"
            f"MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\n{body}").encode()


def series(tag: str) -> tuple[str, list[bytes]]:
    """A cover letter `[PATCH 0/2]` and two patches threaded below it, as git format-patch writes them; the cover's msgid."""
    cover = f"{tag}.0@bench.example.org"
    out = [mail(cover, f"[PATCH 0/2] lib: latency {tag}", "This series tidies two helpers.\n\n---\nb4 0.14\n")]
    for k in (1, 2):
        path = f"lib/{tag}_{k}.c"
        diff = (f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"
                f"@@ -1,3 +1,3 @@\n context one\n-old {tag} {k}\n+new {tag} {k}\n context two\n")
        body = f"Tidy helper {k} of {tag}.\n\nSigned-off-by: {AUTHOR}\n---\n{diff}"
        out.append(mail(f"{tag}.{k}@bench.example.org", f"[PATCH {k}/2] lib: part {k} of {tag}", body, reply_to=cover))
    return cover, out


def deliver(inbox: Inbox, mails: list[bytes]) -> float:
    """MAILS into the upstream archive, one public-inbox-mda each; when the last one returned."""
    for m in mails:
        inbox.deliver(m)
    return time.time()


@contextlib.contextmanager
def httpd(inbox: Inbox, log: Path) -> Iterator[str]:
    server = start_httpd(inbox, log)
    try:
        yield server.url
    finally:
        server.stop()


def site(work: Path, url: str, port: int) -> Path:
    """The mirror and the bot's configuration (_lore.bot_site), mailing through the SMTP server on PORT."""
    return bot_site(work, url, lambda mirror: f'[lists.test]\nmirror = {mirror}\nmail = "author+list"\nsettle = {SETTLE:g}\n'
                    'quiet_on_clean = false\n', {"sendemail.smtpServer": "127.0.0.1", "sendemail.smtpServerPort": str(port)})


@contextlib.contextmanager
def bot(config: Path, environ: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`review bot run` in a process group of its own, stopped by SIGTERM to the group (SIGKILL 60 s later)."""
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "reviewer", "bot", "--config", str(config), "run", "--interval", f"{INTERVAL:g}"],
                                cwd=config.parent, env=environ, stdout=out, stderr=out, start_new_session=True)
    try:
        yield proc
    finally:
        stop_groups([proc], signal.SIGTERM, 60)


def replies(smtp: Smtp) -> dict[str, float]:
    """The cover letters answered so far: when the first reply to each arrived."""
    out: dict[str, float] = {}
    for at, data in list(smtp.received):
        msg = email.message_from_bytes(data, policy=email.policy.default)
        for ref in f"{msg['In-Reply-To'] or ''} {msg['References'] or ''}".split():
            out.setdefault(ref.strip("<>"), at)
    return out


def wait_for(smtp: Smtp, covers: list[str], proc: subprocess.Popen[bytes], until: float) -> dict[str, float]:
    """Until COVERS are answered, the bot ended or UNTIL (time.time) passed; the replies to COVERS."""
    while True:
        got = replies(smtp)
        if all(c in got for c in covers) or proc.poll() is not None or time.time() > until:
            return {c: got[c] for c in covers if c in got}
        time.sleep(0.05)


def pause(seconds: float, proc: subprocess.Popen[bytes]) -> bool:
    """Sleep SECONDS; whether the bot is still running."""
    deadline = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc.poll() is None


def deliver_all(inbox: Inbox, proc: subprocess.Popen[bytes]) -> dict[str, float]:
    """SERIES series, a random gap before each; their cover letters and arrivals."""
    gaps = random.Random(SEED)
    arrivals = {}
    for n in range(SERIES):
        if not pause(gaps.uniform(0, 2 * GAP), proc):
            break
        cover, mails = series(f"s{n}")
        arrivals[cover] = deliver(inbox, mails)
    return arrivals


def phases(home: Path, arrivals: dict[str, float], answered: dict[str, float]) -> list[list[float]]:
    """Per answered series, from the jobs table: arrival -> static queued -> done -> report job -> reply at the SMTP server."""
    query = ("SELECT o.body, s.created, s.updated, r.created FROM outbox o JOIN jobs r ON r.id = o.job "
             "JOIN jobs s ON s.id = json_extract(r.payload, '$.job') WHERE o.kind = 'mail'")
    out: list[list[float]] = [[], [], [], []]
    with contextlib.closing(sqlite3.connect(f"file:{home / 'jobs.db'}?mode=ro", uri=True)) as db:
        for body, queued, done, reported in db.execute(query):
            cover = str(email.message_from_bytes(body)["In-Reply-To"]).strip().strip("<>")
            if cover in answered:
                marks = (arrivals[cover], queued, done, reported, answered[cover])
                for i in range(4):
                    out[i].append(marks[i + 1] - marks[i])
    return out


def report(arrivals: dict[str, float], answered: dict[str, float], split: list[list[float]], load: str) -> None:
    lat = sorted(answered[c] - arrivals[c] for c in answered)
    p95 = statistics.quantiles(lat, n=20, method="inclusive")[18] if len(lat) > 1 else lat[0]
    rows: list[tuple[str, float, float | None, str]] = [
        ("median: arrival in the archive -> reply at the SMTP server", statistics.median(lat), statistics.median(lat) / INTERVAL, ""),
        ("95th percentile", p95, p95 / INTERVAL, "statistics.quantiles, inclusive"),
        ("min", lat[0], lat[0] / INTERVAL, ""),
        ("max", lat[-1], lat[-1] / INTERVAL, ""),
        ("expected wait for the next tick (interval / 2)", INTERVAL / 2, 0.5, "the tick's work comes on top")]
    names = ("arrival -> static job queued (tick, fetch, assembly)", "static job queued -> done (consumer, review)",
             "static job done -> report job (a later tick)", "report job -> reply at the SMTP server")
    for name, xs in zip(names, split, strict=True):
        if xs:
            rows.append((f"  {name}", statistics.median(xs), statistics.median(xs) / INTERVAL, "median"))
    table(f"Review bot latency: interval {INTERVAL:g} s, {len(arrivals)} series, {len(answered)} replies; ratio: to the interval;"
          f" load before: {load}", rows, runs=len(lat))


def main() -> None:
    missing = [c for c in TOOLS if shutil.which(c) is None]
    if missing:
        print(f"\n## Review bot latency: skipped: public-inbox is not installed ({', '.join(missing)}; ./dev deps installs it)")
        return
    if importlib.util.find_spec("aiosmtpd") is None:
        print("\n## Review bot latency: skipped: aiosmtpd is not installed (a test dependency: pip install -e '.[test]')")
        return
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    with scratch("latency") as tmp:
        work = Path(tmp)
        environ = env(work / "home") | {"PYTHONPATH": str(ROOT)}
        inbox = make_inbox(work / "archive")
        inbox.deliver(mail("first@bench.example.org", "the list's first mail", "hello\n"))  # an empty inbox answers 404 to clone
        with smtp_server() as (smtp, port), httpd(inbox, work / "httpd.log") as url:
            config = site(work, url, port)
            with bot(config, environ, work / "bot.log") as proc:
                warm, mails = series("warm")
                deliver(inbox, mails)
                if not wait_for(smtp, [warm], proc, time.time() + TIMEOUT):
                    raise SystemExit(f"no reply to the warm-up series within {TIMEOUT:g} s; the bot's log:\n{tail(work / 'bot.log')}")
                smtp.received.clear()
                arrivals = deliver_all(inbox, proc)
                answered = wait_for(smtp, list(arrivals), proc, max(arrivals.values(), default=0) + TIMEOUT)
            split = phases(config.parent / "state", arrivals, answered)
        if answered:
            report(arrivals, answered, split, load)
        if len(answered) < SERIES:
            lost = sorted(set(arrivals) - set(answered))
            raise SystemExit(f"bot_latency: {SERIES - len(answered)} of {SERIES} series got no reply within {TIMEOUT:g} s of the last "
                             f"arrival: {', '.join(lost[:10])}; the bot's log:\n{tail(work / 'bot.log')}")


def tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(none)"


if __name__ == "__main__":
    usage(__doc__)
    main()
