"""A loopback stand-in for Patchwork's REST API (http.server in a thread on 127.0.0.1): it checks the requests
against the fields Patchwork documents for checks, answers the patch list's msgid filter (API 1.2), and records
what it saw. It is not Patchwork: docs/bot.md says what was not tested."""
from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

TOKEN = "2f3e4d5c6b7a"
FIELDS = {"state", "context", "target_url", "description"}  # https://patchwork.readthedocs.io/en/latest/api/rest/schemas/v1.1/
PATH = re.compile(r"^/api/1\.[12]/patches/(\d+)/checks/$")
LIST = re.compile(r"^/api/1\.2/patches/\?(.*)$")  # the patch list, filtered by project and msgid (API 1.2)


@dataclass
class Patchwork:
    """What the loopback server saw, and what it answers: 201 and the check, or the status a patch id is mapped to."""

    url: str = ""
    seen: list[tuple[str, str, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    answers: dict[int, int] = field(default_factory=dict)  # patch id: HTTP status
    patches: dict[tuple[str, str], int] = field(default_factory=dict)  # (project, Message-ID with <>): patch id
    hang: threading.Event = field(default_factory=threading.Event)  # set at the end: a hanging answer returns


def handler(pw: Patchwork) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            pw.seen.append(("GET", self.path, dict(self.headers), {}))
            match = LIST.match(self.path)
            if match is None:
                return self.answer(404, {"detail": "Not found."})
            query = {k: v[0] for k, v in urllib.parse.parse_qs(match.group(1)).items()}
            # Patchwork's msgid filter adds the <> itself (patchwork/api/filters.py, msgid_filter)
            found = pw.patches.get((query.get("project", ""), f"<{query.get('msgid', '')}>"))
            return self.answer(200, [{"id": found, "msgid": f"<{query['msgid']}>"}] if found else [])

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

        def answer(self, status: int, body: dict[str, Any] | list[dict[str, Any]]) -> None:
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
