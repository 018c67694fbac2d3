"""Faults from a fake lore on loopback (a tiny http.server thread): 5xx, hangs, corrupt gzip,
HTML instead of an mbox, a server that sends one byte a second, and Ctrl-C during a fetch.
Retries are fast here (see conftest)."""
from __future__ import annotations

import contextlib
import gzip
import os
import signal
import socket
import ssl
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

    def do_POST(self) -> None:  # noqa: N802 (b4's searches may POST)
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        mode = self.path.split("/")[1]
        self.server.hits[mode] += 1
        self.server.seen.set()
        if mode in ("slow", "slowbody") or (mode == "slowsearch" and not self.path.endswith("/t.mbox.gz")):
            return self._dribble(self._response(200, MBOX_GZ, "application/gzip"), headers_at_once=mode == "slowbody")
        if mode == "hang":
            self.server.release.wait(30)
            return
        if mode == "e500" or (mode == "flaky" and self.server.hits[mode] == 1):
            return self._send(503 if mode == "flaky" else 500, b"oops", "text/plain")
        body = {"corrupt": b"\x1f\x8b\x08\x00" + b"garbage" * 20, "truncated": MBOX_GZ[: len(MBOX_GZ) // 2],
                "html": b"<!DOCTYPE html><html><body>Please log in</body></html>", "e404": b""}.get(mode, MBOX_GZ)
        self._send(404 if mode == "e404" else 200, body, "text/html" if mode == "html" else "application/gzip")

    def _response(self, status: int, body: bytes, ctype: str) -> bytes:
        head = f"HTTP/1.1 {status} OK\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
        return head.encode() + body

    def _dribble(self, data: bytes, *, headers_at_once: bool) -> None:
        """One byte a second (after the headers, with HEADERS_AT_ONCE): every read returns well within any
        per-read timeout, and the whole answer would take many minutes."""
        self.close_connection = True
        start = data.index(b"\r\n\r\n") + 4 if headers_at_once else 0
        try:
            self.wfile.write(data[:start])
            self.wfile.flush()
            for i in range(start, len(data)):
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
                if self.server.release.wait(1):
                    return
        except OSError:  # the client gave up and closed the connection
            return

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
    assert err.decode().strip() == "review: interrupted, cleaning up"  # issue 13 item 3 (reviewer/run/ending.py)
    assert time.monotonic() - start < 3


DEADLINE = 2.0


@pytest.mark.parametrize("mode", ["slow", "slowbody"])
def test_a_byte_a_second_hits_the_deadline(fake: Fake, tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-read timeout (1 s here) never fires: each byte comes within it. The deadline ends the
    download, headers dribbled (slow) or only the body (slowbody), with its retries, in about DEADLINE s."""
    monkeypatch.setenv("REVIEWER_LORE_TIMEOUT", "1.5")
    monkeypatch.setenv("REVIEWER_LORE_DEADLINE", f"{DEADLINE:g}")
    start = time.monotonic()
    res = review(ID, "--lore-url", f"{fake.base}{mode}/", tmp=tmp_path)
    took = time.monotonic() - start
    res.assert_one_line_error(ExitStatus.FETCH, f"{_url(fake, mode)}: no complete answer within the 2 s deadline (REVIEWER_LORE_DEADLINE)")
    assert DEADLINE <= took < DEADLINE + 2.5, took  # the command's own start-up is most of the rest
    assert fake.hits[mode] == 1  # no retry after the deadline
    res.assert_nothing_left()


def test_a_slow_search_for_other_revisions_is_cut_and_the_thread_reviewed(fake: Fake, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """b4's searches (through liblore) use the same session: the whole search ends at the deadline, and
    the thread itself, which came at once, is still reviewed (one warning says the search failed)."""
    monkeypatch.setenv("REVIEWER_LORE_TIMEOUT", "1.5")
    monkeypatch.setenv("REVIEWER_LORE_DEADLINE", f"{DEADLINE:g}")
    start = time.monotonic()
    res = review(ID, "--lore-url", f"{fake.base}slowsearch/", "--format", "json", tmp=tmp_path)
    took = time.monotonic() - start
    assert res.rc == ExitStatus.OK, res.stderr
    assert res.json()["series"]["msgid"] == ID
    warning = [ln for ln in res.stderr.splitlines() if ln.startswith("review: warning: ")]
    assert warning == [f"review: warning: {fake.base}slowsearch/: the search for other revisions did not end within "
                       "the 2 s deadline (REVIEWER_LORE_DEADLINE)"], res.stderr
    assert fake.hits["slowsearch"] >= 2  # the thread, then a search
    assert took < 2 * DEADLINE + 2.5, took  # one deadline for the download, one for the whole search


@pytest.fixture
def tls_dribbler(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """lore as it really is, over TLS (a self-signed certificate for 127.0.0.1, made by openssl), sending
    its whole answer one byte a second. Yields the server's base URL and the certificate to trust."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def one(conn: socket.socket) -> None:
        with contextlib.suppress(OSError), ctx.wrap_socket(conn, server_side=True) as tls:
            tls.recv(65536)
            for byte in f"HTTP/1.1 200 OK\r\nContent-Length: {len(MBOX_GZ)}\r\n\r\n".encode() + MBOX_GZ:
                tls.sendall(bytes([byte]))
                if stop.wait(1):
                    return

    def serve() -> None:
        with contextlib.suppress(OSError):
            while not stop.is_set():
                threading.Thread(target=one, args=(listener.accept()[0],), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield f"https://127.0.0.1:{listener.getsockname()[1]}/all/", cert
    stop.set()
    listener.close()


def test_a_byte_a_second_over_tls_hits_the_deadline(tls_dribbler: tuple[str, Path], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The watchdog cuts the TLS socket too (the one that replaced the plain socket), headers dribbled."""
    url, cert = tls_dribbler
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    monkeypatch.setenv("REVIEWER_LORE_TIMEOUT", "1.5")
    monkeypatch.setenv("REVIEWER_LORE_DEADLINE", f"{DEADLINE:g}")
    start = time.monotonic()
    res = review(ID, "--lore-url", url, tmp=tmp_path)
    took = time.monotonic() - start
    res.assert_one_line_error(ExitStatus.FETCH, f"{url}{ID}/t.mbox.gz: no complete answer within the 2 s deadline (REVIEWER_LORE_DEADLINE)")
    assert DEADLINE <= took < DEADLINE + 2.5, took


@pytest.mark.parametrize(("name", "value", "expect"), [
    ("REVIEWER_LORE_DEADLINE", "soon", "expected a number of seconds above 0"),
    ("REVIEWER_LORE_DEADLINE", "0", "expected a number of seconds above 0"),
    ("REVIEWER_LORE_TIMEOUT", "-1", "expected a number of seconds above 0"),
    ("REVIEWER_LORE_TIMEOUT", "nan", "expected a number of seconds above 0"),
    ("REVIEWER_LORE_RETRIES", "2.5", "expected a whole number, 0 or more"),
    ("REVIEWER_LORE_BACKOFF", "fast", "expected a number of seconds, 0 or more"),
    ("REVIEWER_SMTP_DEADLINE", "inf", "expected a number of seconds above 0"),
    ("REVIEWER_BOOT_ACCEL", "kvm", "expected tcg"),
])
def test_bad_environment_is_a_config_error_before_any_request(fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              name: str, value: str, expect: str) -> None:
    monkeypatch.setenv(name, value)
    res = review(ID, "--lore-url", f"{fake.base}ok/", tmp=tmp_path)
    res.assert_one_line_error(ExitStatus.CONFIG, f"{name}={value!r}: {expect}")
    assert f"hint: fix or unset {name} in the environment" in res.stderr
    assert sum(fake.hits.values()) == 0
