#!/usr/bin/env python3
"""A maintainer's review by Message-ID, first and second time (issue 7: "a second review of the same
series from the cache under a fifth of the first").

The series is real 6.12 code (bench/_common.py `real_series`), mailed into a real public-inbox served
on 127.0.0.1 (the fetch tests' local lore). As commands, with interpreter start-up:
- first: `review MSGID --lore-url URL --tree LINUX --format json --no-cache`: fetch the thread,
  apply it in a worktree of the full 6.12 tree, run the tree's checkpatch.pl and get_maintainer.pl
  on every patch (nothing read from any cache);
- second: the same without --no-cache: the thread, the scripts' outputs and the apply outcome come
  from the caches (the check and apply stages say so; the bench checks the findings are the same).
Without --tree (fetch, parse, rules: start-up dominates) the same pair is shown too, for honesty.
A loopback lore answers in microseconds; lore.kernel.org does not. The last rows put a proxy that
answers each request LORE_RTT seconds late (default 0.1, one round trip) in front of the same
public-inbox, and give the id truncated, as people paste it (resolving it costs requests too).
"""
from __future__ import annotations

import http.server
import json
import mailbox
import os
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _common import BIN, RUNS, env, kernel, median, real_series, scratch, sh, table

from bench._cli import usage
from bench._lore import Inbox, make_inbox, start_httpd

PATCHES = tuple(int(n) for n in os.environ.get("PATCHES", "10,20").split(","))
RTT = float(os.environ.get("LORE_RTT", "0.1"))
NETDEV = ("--to=netdev@vger.kernel.org", "--cc=linux-kernel@vger.kernel.org", "--thread=shallow", "--cover-letter")


def deliver(inbox: Inbox, mbox: Path) -> str:
    """Mail every message of MBOX to the inbox; the Message-ID of the first (the cover letter)."""
    ids = []
    for msg in mailbox.mbox(str(mbox)):
        ids.append(str(msg["Message-ID"]).strip().strip("<>"))
        inbox.deliver(msg.as_bytes(unixfrom=False))
    return ids[0]


def main() -> None:
    missing = [c for c in ("public-inbox-init", "public-inbox-mda", "public-inbox-httpd") if shutil.which(c) is None]
    if missing:
        print(f"\n## Cached second review: skipped: public-inbox is not installed ({', '.join(missing)}; ./dev deps installs it)")
        return
    linux = kernel()
    with scratch("cache") as tmp:
        work = Path(tmp)
        environ = env(work / "home")
        inbox = make_inbox(work / "pi")
        msgids = {n: deliver(inbox, real_series(linux, n, work / f"series-{n}.mbox", *NETDEV)[1]) for n in PATCHES}
        httpd = start_httpd(inbox, work / "httpd.log")
        try:
            rows = []
            for n, msgid in msgids.items():
                rows += _measure([BIN / "review", msgid, "--lore-url", httpd.url, "--tree", linux, "--format", "json"], environ, work,
                                 f"--tree 6.12, {n} patches")
            rows += _measure([BIN / "review", msgid, "--lore-url", httpd.url, "--format", "json"], environ, work, "no tree")
            with delayed(httpd.base, RTT) as base:
                far = base + httpd.url.removeprefix(httpd.base)
                n, msgid = next(iter(msgids.items()))
                rows += _measure([BIN / "review", msgid.split("@")[0], "--lore-url", far, "--tree", linux, "--format", "json"],
                                 environ, work,
                                 f"lore {RTT * 1000:.0f} ms away, truncated id, --tree, {n} patches")
                rows += _measure([BIN / "review", msgid.split("@")[0], "--lore-url", far, "--format", "json"], environ, work,
                                 f"lore {RTT * 1000:.0f} ms away, truncated id, no tree")
        finally:
            httpd.stop()
    table(f"Review by Message-ID from a lore: first (--no-cache) vs second (from the caches), {os.cpu_count()} cores", rows)


def _measure(cmd: list[str | Path], environ: dict[str, str], work: Path, what: str) -> list[tuple[str, float, float | None, str]]:
    sh([*cmd, "--no-cache"], environ, cwd=work, ok=(0, 1))  # warm the page cache (and the caches, for the second)
    first = median(lambda: sh([*cmd, "--no-cache"], environ, cwd=work, ok=(0, 1)))
    second = median(lambda: sh(cmd, environ, cwd=work, ok=(0, 1)))
    a, b = (json.loads(sh(c, environ, cwd=work, ok=(0, 1))) for c in ([*cmd, "--no-cache"], cmd))
    if a["findings"] != b["findings"]:
        raise RuntimeError(f"{what}: the cached review's findings differ from the first's")
    details = {st["name"]: st["detail"] for st in b["stages"]}
    shown = "; ".join(f"{n}: {details[n]}" for n in ("check", "apply") if "cache" in details.get(n, "") or n == "apply")
    print(f"{what}: {len(a['findings'])} findings, the same both times; second run: {shown}")
    return [
        (f"{what}: review MSGID --no-cache (first)", first, 1.0, "baseline"),
        (f"{what}: review MSGID (second, from the cache)", second, second / first, "target < 0.20x"),
    ]


@contextmanager
def delayed(upstream: str, rtt: float) -> Iterator[str]:
    """A loopback proxy to UPSTREAM that answers each request RTT seconds late; yields its base URL."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            time.sleep(rtt)
            req = urllib.request.Request(upstream.rstrip("/") + self.path, headers={"Host": self.headers["Host"]})
            try:
                resp = urllib.request.build_opener(_NoRedirect).open(req, timeout=30)
                status, headers, body = resp.status, resp.headers, resp.read()
            except urllib.error.HTTPError as exc:
                status, headers, body = exc.code, exc.headers, exc.read()
            self.send_response(status)
            for key in ("Content-Type", "Location", "Content-Encoding"):
                if headers.get(key):
                    self.send_header(key, headers[key])
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_args: object, **_kw: object) -> None:
        return None


if __name__ == "__main__":
    usage(__doc__)
    print(f"RUNS={RUNS}")
    main()
