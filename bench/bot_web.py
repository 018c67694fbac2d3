#!/usr/bin/env python3
"""The bot's dashboard with many series (issue 33: a list page of 1,000 series in under 1 s on 2 cores): GET
/lists/NAME from `review bot serve`'s server (reviewer.bot.web, in a thread of this process, on 127.0.0.1) against
GET of a static file of the same size from the standard library's static file server (http.server's
SimpleHTTPRequestHandler, the same ThreadingHTTPServer) on the same machine: the ratio is what making the page costs
beyond sending its bytes. Also the same page as JSON (?format=json), the front page and the queue page.

The bot home is populated directly (no list archive, no review run per series): SERIES (default 1000) series in
the bot's store (bot.sqlite), each with a done `static` and `apply` job whose result is the JSON document of a real
static review of the bundled demo series (fixtures/series/loongarch-vdso-getrandom-v4.mbox, reviewed once here), and a
done `report` job; every tenth series a v2 of the one before. Each row: the median of RUNS (default 5) requests,
after one warm-up request, whose own time is a row too: every request opens the home afresh, but the server keeps
each done job's findings (a done job's result never changes), read at its first request.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _common import ROOT, RUNS, env, median, scratch, table

from bench._cli import usage

SERIES = int(os.environ.get("SERIES", "1000"))
MBOX = ROOT / "fixtures/series/loongarch-vdso-getrandom-v4.mbox"
LIST = "big"
TARGET = 1.0  # seconds, issue 33


def document(work: Path) -> dict[str, object]:
    """The JSON document of a real static review of the demo series."""
    from reviewer import app
    from reviewer.report import json as report_json
    from reviewer.request import ReviewRequest, SourceOptions

    os.environ.update(env(work / "home"))
    return report_json.document(app.review(ReviewRequest(SourceOptions(target=str(MBOX), cwd=work, offline=True))).review)


def populate(work: Path, doc: dict[str, object]) -> Path:
    """A bot home of SERIES reviewed series; its configuration file."""
    from reviewer.bot import config
    from reviewer.bot.assemble import Assembled, Readiness
    from reviewer.bot.jobs import Jobs, Spec
    from reviewer.bot.outbox import Outbox
    from reviewer.bot.store import Store

    path = work / "bot.toml"
    path.write_text(f'[bot]\nhome = "state"\n\n[lists.{LIST}]\nmirror = "{work / "mirror"}"\nmail = "off"\n')
    cfg = config.load(path)
    now = time.time() - SERIES * 60.0
    series = []
    for i in range(SERIES):
        v2 = i % 10 == 9
        root = f"s{i}.0@example.org"
        series.append(Assembled(key=f"{LIST}/{root}", list=LIST, identity=f"{LIST}|a{i - v2}@example.org|series {i - v2}",
                                revision=2 if v2 else 1, root=root, subject=f"lib: series number {i - v2}", sender=f"a{i - v2}@example.org",
                                expected=4, parts=(root,), missing=(), rfc=i % 7 == 0, resend=False, patch_ids=(), last_part_at=now,
                                state=Readiness.READY, supersedes=f"{LIST}/s{i - 1}.0@example.org" if v2 else None))
    store = Store.in_home(cfg.home)
    for i, s in enumerate(series):
        store.save_ready([s], now + 60 * i)
    store.close()
    result = json.dumps({"review": doc, "status": 0})
    report = json.dumps({"verdict": "never", "reason": "mail is off for this list"})
    with Jobs(cfg.jobs_url) as jobs:
        Outbox(jobs.db)  # its table, as the bot's loop makes it
        made = [(jobs.put(Spec(list=LIST, series=s.key, stage=stage, base="0" * 40 if stage == "apply" else ""), now + 60 * i)[0].id,
                 report if stage == "report" else result, now + 60 * i)
                for i, s in enumerate(series) for stage in ("static", "apply", "report")]
        with jobs.db.tx() as run:  # a transaction of its own: put() takes the table's lock itself
            for job_id, done, at in made:
                run("UPDATE jobs SET state = 'done', attempt = 1, result = ?, updated = ?, started = ? WHERE id = ?",
                    (done, at + 30, at + 1, job_id))
    return path


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
        pass  # the dashboard's server logs through logging, which is not configured here: neither prints a line a request


@contextmanager
def serving(server: http.server.ThreadingHTTPServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        body: bytes = r.read()
        return body


def timed(url: str) -> tuple[float, int, float]:
    """The median of RUNS requests after one warm-up; the size; the warm-up's time (a server that just started)."""
    start = time.perf_counter()
    size = len(fetch(url))
    first = time.perf_counter() - start
    return median(lambda: fetch(url)), size, first


def main() -> None:
    from reviewer.bot import config, web

    with scratch("bot-web") as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        cfg = config.load(populate(work, document(work)))
        print(f"populated {SERIES} series in {time.perf_counter() - start:.1f} s")
        rows: list[tuple[str, float, float | None, str]] = []
        with serving(web.make(cfg, "127.0.0.1", 0)) as site:
            page, size, cold = timed(f"{site}/lists/{LIST}")
            (work / "static").mkdir()
            (work / "static" / "page.html").write_bytes(fetch(f"{site}/lists/{LIST}"))
            handler = functools.partial(Quiet, directory=str(work / "static"))
            with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)) as files:
                flat, flat_size, _ = timed(f"{files}/page.html")
            rows.append((f"static file of the same size ({flat_size // 1024} KiB)", flat, None, "http.server"))
            rows.append((f"GET /lists/{LIST}: {SERIES} series ({size // 1024} KiB)", page, page / flat,
                         f"target < {TARGET:g} s: {'met' if page < TARGET else 'NOT met'}"))
            rows.append(("  its first request (each job's findings read once)", cold, cold / flat,
                         f"target < {TARGET:g} s: {'met' if cold < TARGET else 'NOT met'}"))
            for what, path in (("the same as JSON", f"/lists/{LIST}?format=json"), ("GET / (the lists)", "/"), ("GET /queue", "/queue")):
                secs, size, _ = timed(site + path)
                rows.append((f"{what} ({size // 1024} KiB)", secs, secs / flat, ""))
        table(f"the dashboard, {SERIES} series on one list", rows, RUNS)


if __name__ == "__main__":
    usage(__doc__)
    main()
