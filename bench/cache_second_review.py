#!/usr/bin/env python3
"""A review by Message-ID, fetched from a lore (a real public-inbox served on 127.0.0.1, as the
fetch tests use) vs the second review of the same series, from the thread cache. The first is
the baseline; --no-cache forces a fetch each time. Measured as commands (with interpreter
start-up) and in-process (the pipeline alone). Target: the cached review under a fifth of the first.
Over the real lore.kernel.org each fetch costs more (round trips of the thread and of the search
for other revisions), so the ratio here is the least favourable one."""
from __future__ import annotations

import http.server
import os
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _common import BIN, ROOT, env, median, scratch, sh, table

from reviewer.pipeline import Request, review
from tests.fetch.conftest import _make_inbox, start_httpd

MSGID = "20240816110717.10249-1-xry111@example.org"  # the demo series' cover letter, v4 of 4 patches
RTT = float(os.environ.get("LORE_RTT", "0.1"))  # seconds added to each request: a round trip to a distant lore


@contextmanager
def delayed(upstream: str, rtt: float) -> Iterator[str]:
    """A loopback proxy to UPSTREAM that answers each request RTT seconds late; yields its base URL."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            time.sleep(rtt)
            req = urllib.request.Request(upstream.rstrip("/") + self.path, headers={"Host": self.headers["Host"]})
            opener = urllib.request.build_opener(NoRedirect)
            try:
                resp = opener.open(req, timeout=30)
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
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kw: object) -> None:
        return None


def main() -> None:
    missing = [c for c in ("public-inbox-init", "public-inbox-mda", "public-inbox-httpd") if shutil.which(c) is None]
    if missing:
        print(f"\n## Cached second review: skipped: public-inbox is not installed ({', '.join(missing)}; ./dev deps installs it)")
        return
    with scratch("cache") as tmp:
        work = Path(tmp)
        environ = env(work / "home")
        httpd = start_httpd(_make_inbox(work / "pi"), work / "httpd.log")
        try:
            rows = _measure(httpd.url, environ, work, "local lore")
            with delayed(httpd.base, RTT) as base:
                rows += _measure(base + httpd.url.removeprefix(httpd.base), environ, work, f"lore {RTT * 1000:.0f} ms away")
        finally:
            httpd.stop()
    table("Review by Message-ID: fetched from a lore vs from the cache", rows)


def _measure(url: str, environ: dict[str, str], work: Path, where: str) -> list[tuple[str, float, float | None, str]]:
    cmd = [BIN / "review", MSGID, "--lore-url", url, "--format", "json"]
    sh(cmd, environ, cwd=work, ok=(0, 1))  # warm the page cache; its fetch also fills our thread cache
    first = median(lambda: sh([*cmd, "--no-cache"], environ, cwd=work, ok=(0, 1)))
    second = median(lambda: sh(cmd, environ, cwd=work, ok=(0, 1)))
    os.environ.update({k: v for k, v in environ.items() if k.startswith(("HOME", "XDG_", "GIT_"))})
    fetched = median(lambda: review(Request(target=MSGID, cwd=ROOT, lore_url=url, no_cache=True)))
    cached = median(lambda: review(Request(target=MSGID, cwd=ROOT, lore_url=url)))
    return [
        (f"{where}: review MSGID --no-cache (fetched)", first, 1.0, "baseline"),
        (f"{where}: review MSGID (from the cache)", second, second / first, "target < 0.20x; includes ~0.4 s start-up"),
        (f"{where}: in-process pipeline, fetched", fetched, 1.0, "baseline"),
        (f"{where}: in-process pipeline, from the cache", cached, cached / fetched, "target < 0.20x"),
    ]


if __name__ == "__main__":
    main()
