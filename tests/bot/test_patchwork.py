"""reviewer.bot.patchwork: the requests the client sends, captured by a real HTTP server on 127.0.0.1 (http.server in
a thread) that checks them against the fields Patchwork documents for its checks API, and how the client takes
the errors a Patchwork answers with (401, 404) or none at all (a timeout). No Patchwork runs here: this tests our
side of the conversation only (docs/bot.md says so)."""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from reviewer.bot.jobs import Jobs
from reviewer.bot.outbox import Delivery, Outbox
from reviewer.bot.patchwork import Check, Client, PatchworkError, per_patch
from reviewer.errors import ExitStatus
from reviewer.report import send

TOKEN = "2f3e4d5c6b7a"
FIELDS = {"state", "context", "target_url", "description"}  # https://patchwork.readthedocs.io/en/latest/api/rest/schemas/v1.1/
PATH = re.compile(r"^/api/1\.1/patches/(\d+)/checks/$")


@dataclass
class Patchwork:
    """What the loopback server saw, and what it answers: 201 and the check, or the status a patch id is mapped to."""

    url: str = ""
    seen: list[tuple[str, str, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    answers: dict[int, int] = field(default_factory=dict)  # patch id: HTTP status
    hang: threading.Event = field(default_factory=threading.Event)  # set at the end: a hanging answer returns


def handler(pw: Patchwork) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            pw.seen.append(("POST", self.path, dict(self.headers), body))
            match = PATH.match(self.path)
            if self.headers["Authorization"] != f"Token {TOKEN}":
                return self.answer(401, {"detail": "Invalid token."})
            if match is None or self.headers["Content-Type"] != "application/json" or not set(body) <= FIELDS:
                return self.answer(400, {"detail": "bad request"})
            patch = int(match.group(1))
            if pw.answers.get(patch) == 0:
                pw.hang.wait(30)
                return None
            if pw.answers.get(patch, 201) != 201:
                return self.answer(pw.answers[patch], {"detail": "Not found."})
            return self.answer(201, {"id": 1, "url": f"{pw.url}/patches/{patch}/checks/1/", "user": {"username": "bot"}, **body})

        def answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def patchwork() -> Iterator[Patchwork]:
    pw = Patchwork()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(pw))
    server.daemon_threads = True
    pw.url = f"http://127.0.0.1:{server.server_address[1]}/api/1.1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield pw
    pw.hang.set()
    server.shutdown()
    server.server_close()
    thread.join()


def test_a_check_is_posted_with_patchworks_fields(patchwork: Patchwork) -> None:
    check = Check(patchwork.url + "/", 7, "warning", "reviewer-static", "1 warning", "https://ci.example/r/7")
    made = Client(TOKEN).post(check)
    ((method, path, headers, body),) = patchwork.seen
    assert (method, path, headers["Authorization"], headers["Content-Type"]) == ("POST", "/api/1.1/patches/7/checks/",
                                                                                    f"Token {TOKEN}", "application/json")
    assert body == {"state": "warning", "context": "reviewer-static", "description": "1 warning", "target_url": "https://ci.example/r/7"}
    assert made["state"] == "warning"


def test_a_series_result_is_one_check_per_patch(patchwork: Patchwork) -> None:
    client = Client(TOKEN)
    for check in per_patch(patchwork.url, [11, 12, 13], "success", "reviewer-build_x86_64", "built"):
        client.post(check)
    assert [p for _, p, _, _ in patchwork.seen] == [f"/api/1.1/patches/{n}/checks/" for n in (11, 12, 13)]
    assert {b["state"] for *_, b in patchwork.seen} == {"success"}


def test_errors_name_the_url_and_why(patchwork: Patchwork) -> None:
    patchwork.answers.update({404: 404, 500: 0})
    with pytest.raises(PatchworkError, match=r"patches/1/checks/: 401: the token was refused: .*Invalid token") as e:
        Client("wrong").post(Check(patchwork.url, 1, "fail", "ctx"))
    assert e.value.status is ExitStatus.FETCH
    with pytest.raises(PatchworkError, match=r"patches/404/checks/: 404: no such patch"):
        Client(TOKEN).post(Check(patchwork.url, 404, "fail", "ctx"))
    with pytest.raises(PatchworkError, match=r"patches/500/checks/: no answer within 0.5 s"):
        Client(TOKEN, timeout=0.5).post(Check(patchwork.url, 500, "fail", "ctx"))


def test_a_check_patchwork_would_refuse_is_not_made() -> None:
    with pytest.raises(ValueError, match="state 'ok'"):
        Check("u", 1, "ok", "ctx")
    with pytest.raises(ValueError, match="context 'a b'"):
        Check("u", 1, "fail", "a b")
    with pytest.raises(ValueError, match="201 characters"):
        Check("u", 1, "fail", "ctx", target_url="x" * 201)
    assert Check("u", 1, "pending", "Aa-0_9", target_url="x" * 200).context == "Aa-0_9"


def test_the_outbox_posts_its_checks_with_the_apis_token(patchwork: Patchwork, tmp_path: Path) -> None:
    with Jobs(tmp_path / "jobs.db") as jobs:
        outbox = Outbox(jobs.db, attempts=1)
        outbox.put([(f"r/{c.patch}", c) for c in per_patch(patchwork.url, [1, 2], "fail", "reviewer-static")], now=0)
        outbox.put([("elsewhere", Check("http://127.0.0.1:9/api/1.1", 3, "fail", "reviewer-static"))], now=0)
        sender = Delivery(send.Transport(), tmp_path, {patchwork.url: TOKEN})
        rows = outbox.drain(sender, now=1)
    assert [(r.key, r.state, r.error) for r in rows] == [("r/1", "sent", None), ("r/2", "sent", None),
                                                         ("elsewhere", "failed", "no Patchwork token for http://127.0.0.1:9/api/1.1")]
    assert len(patchwork.seen) == 2
