"""Faults from a fake lore on loopback (a tiny http.server thread): 5xx, hangs, corrupt gzip,
HTML instead of an mbox, and Ctrl-C during a fetch. Retries are fast here (see conftest)."""
from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from tests.conftest import SERIES
from tests.helpers import review

ID = "20240823182000.3131-1-solo@example.org"  # fixtures/series/single-patch.mbox
MBOX_GZ = gzip.compress((SERIES / "single-patch.mbox").read_bytes())


class Fake(ThreadingHTTPServer):
    daemon_threads = True
    hits: Counter[str]
    release: threading.Event
    seen: threading.Event

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class Handler(BaseHTTPRequestHandler):
    server: Fake

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        mode = self.path.split("/")[1]
        self.server.hits[mode] += 1
        self.server.seen.set()
        if mode == "hang":
            self.server.release.wait(30)
            return
        if mode == "e500" or (mode == "flaky" and self.server.hits[mode] == 1):
            return self._send(503 if mode == "flaky" else 500, b"oops", "text/plain")
        body = {"corrupt": b"\x1f\x8b\x08\x00" + b"garbage" * 20, "truncated": MBOX_GZ[: len(MBOX_GZ) // 2],
                "html": b"<!DOCTYPE html><html><body>Please log in</body></html>", "e404": b""}.get(mode, MBOX_GZ)
        self._send(404 if mode == "e404" else 200, body, "text/html" if mode == "html" else "application/gzip")

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def fake() -> Iterator[Fake]:
    server = Fake(("127.0.0.1", 0), Handler)
    server.hits, server.release, server.seen = Counter(), threading.Event(), threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


def _url(fake: Fake, mode: str, tail: str = "t.mbox.gz") -> str:
    return f"{fake.base}{mode}/{ID}/{tail}"


def test_a_good_answer(fake: Fake, tmp_path: Path) -> None:
    res = review(ID, "--lore-url", f"{fake.base}ok/", "--format", "json", tmp=tmp_path)
    assert res.rc == ExitStatus.OK, res.stderr
    assert res.json()["series"]["msgid"] == ID


def test_5xx_is_retried_then_reported(fake: Fake, tmp_path: Path) -> None:
    res = review(ID, "--lore-url", f"{fake.base}e500/", tmp=tmp_path)
    res.assert_one_line_error(ExitStatus.FETCH, f"{_url(fake, 'e500')}: the server answered 500 Internal Server Error (3 tries)")
    assert fake.hits["e500"] == 3  # REVIEWER_LORE_RETRIES=2
    res.assert_nothing_left()


def test_a_transient_fault_heals(fake: Fake, tmp_path: Path) -> None:
    res = review(ID, "--lore-url", f"{fake.base}flaky/", "--format", "json", tmp=tmp_path)
    assert res.rc == ExitStatus.OK, res.stderr
    assert fake.hits["flaky"] >= 2


def test_a_hanging_server_times_out(fake: Fake, tmp_path: Path) -> None:
    start = time.monotonic()
    res = review(ID, "--lore-url", f"{fake.base}hang/", tmp=tmp_path)
    res.assert_one_line_error(ExitStatus.FETCH, f"{_url(fake, 'hang')}: no answer within 1 s (3 tries)")
    assert time.monotonic() - start < 10


@pytest.mark.parametrize(("mode", "fragment"), [
    ("corrupt", "the download is corrupt"),
    ("truncated", "the download is corrupt"),
    ("html", "the server sent an HTML page, not a gzipped mbox"),
    ("e404", f"no message <{ID}>"),
])
def test_bad_bodies_fail_at_once(fake: Fake, tmp_path: Path, mode: str, fragment: str) -> None:
    res = review(ID, "--lore-url", f"{fake.base}{mode}/", tmp=tmp_path)
    res.assert_one_line_error(ExitStatus.FETCH, fragment)
    assert _url(fake, mode) in res.stderr
    assert fake.hits[mode] == 1


def test_ctrl_c_during_a_fetch(fake: Fake, tmp_path: Path) -> None:
    env = {**os.environ, "REVIEWER_LORE_TIMEOUT": "60", "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "reviewer", ID, "--lore-url", f"{fake.base}hang/"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not fake.seen.wait(0.05):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == ExitStatus.INTERRUPTED, err
    assert err.decode().strip() == "review: interrupted"
    assert time.monotonic() - start < 3
