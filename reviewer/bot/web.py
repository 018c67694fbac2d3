"""`review bot serve`: a read-only dashboard of the bot's home, and the same data as JSON (docs/bot.md, "Dashboard").

    /                                 the lists, their series and jobs counted
    /lists/NAME                       the list's series, newest first
    /lists/NAME/series/ROOT-MSGID     the merged review, the earlier revisions, what changed from the previous one
    /queue                            per pool and state, the oldest waiting, the last errors, the outbox

`?format=json` (or `Accept: application/json`) answers the data the page shows (dashboard.py). The standard
library's ThreadingHTTPServer and Jinja2 (already a dependency): no new package, and nothing here writes. It has
no authentication: it binds the loopback by default; put a real web server in front of it to show it to others.
Every page is made with autoescape and report/html.py's finalize (control characters shown, never acted on), has no
script, and its Content-Security-Policy forbids scripts and every request but inline styles and data: images: the
page never fetches anything a series named.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import json
import logging
import signal
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import jinja2

from reviewer.bot import dashboard
from reviewer.bot.config import BotConfig
from reviewer.errors import ConfigError
from reviewer.report import html

log = logging.getLogger(__name__)
LISTEN = ("127.0.0.1", 8470)
TEMPLATES = Path(__file__).parent / "templates"
PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"  # in the page too
CSP = PAGE_CSP + "; frame-ancestors 'none'"  # the header's: a <meta> element may not say frame-ancestors (browsers warn)
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY", "Cache-Control": "no-store"}


def listen(text: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets); ConfigError otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ConfigError(f"--listen {text}: not HOST:PORT", f"e.g. --listen {LISTEN[0]}:{LISTEN[1]}")
    return host.strip("[]"), int(port)


@functools.cache
def _environment() -> jinja2.Environment:
    loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(TEMPLATES), jinja2.FileSystemLoader(html.TEMPLATES)])
    env = jinja2.Environment(loader=loader, autoescape=True, finalize=html.finalize, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["when"] = _when
    env.filters["took"] = _took
    env.globals["diff_class"] = diff_class
    return env


def diff_class(line: str, kind: str) -> str:
    """How a line of a revisions' diff is coloured: a range-diff's own lines are indented by four spaces."""
    if kind == "range-diff":
        if line[:1].isdigit() or line[:1] == "-" and line[1:2] == ":":  # `1:  abc = 1:  def subject`, `-:  ------- > 2:  ...`
            return "hdr"
        line = line[4:]
    if line.startswith(("@@", "---", "+++")):
        return "hdr"
    return {"+": "add", "-": "del"}.get(line[:1], "ctx")


def _when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t))


def _took(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = max(0, round(seconds))
    return f"{s // 3600}h {s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m {s % 60:02d}s" if s >= 60 else f"{s}s"


@dataclass(frozen=True)
class Answer:
    status: int
    data: Any  # what ?format=json returns
    template: str = ""
    context: dict[str, Any] | None = None  # beside the data (the series page: the review's)


def answer(cfg: BotConfig, path: str) -> Answer:
    """What GET PATH (the path alone, still %-quoted) answers."""
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
    if parts == ["queue"]:
        return Answer(200, dashboard.queue(cfg), "queue.html")
    home = dashboard.Home.open(cfg)
    try:
        return _route(home, parts)
    finally:
        home.close()


def _route(home: dashboard.Home, parts: list[str]) -> Answer:
    if not parts:
        return Answer(200, dashboard.lists(home), "lists.html")
    if len(parts) == 2 and parts[0] == "lists" and (data := dashboard.list_view(home, parts[1])) is not None:
        return Answer(200, data, "list.html")
    if len(parts) == 4 and parts[0] == "lists" and parts[2] == "series":
        page = dashboard.series_view(home, parts[1], parts[3])
        if page is not None:
            return Answer(200, page.data, "series.html", html.context(page.review))
    return Answer(404, {"error": "not found", "path": "/" + "/".join(parts)}, "missing.html")


def render(a: Answer) -> str:
    return _environment().get_template(a.template).render({**(a.context or {}), "d": a.data, "csp": PAGE_CSP})


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "reviewer-bot"
    cfg: BotConfig  # set on the class made for one server (make())

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self._answer(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        url = urllib.parse.urlsplit(self.path)
        wants_json = "json" in urllib.parse.parse_qs(url.query).get("format", []) or _accepts_json(self.headers.get("Accept", ""))
        try:
            a = answer(self.cfg, url.path)
            payload, kind = (json.dumps(a.data, indent=1), "application/json") if wants_json else (render(a), "text/html")
        except Exception:  # a database away, a damaged document: this request's 500, never the server's end
            log.exception("GET %s", self.path)
            a, payload, kind = Answer(500, None), "internal error: see the server's log\n", "text/plain"
        data = payload.encode()
        self.send_response(a.status)
        for name, value in {**HEADERS, "Content-Type": f"{kind}; charset=utf-8", "Content-Length": str(len(data))}.items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        log.info("%s %s", self.address_string(), format % args)


def _accepts_json(accept: str) -> bool:
    kinds = [k.split(";")[0].strip() for k in accept.split(",")]
    return "application/json" in kinds and "text/html" not in kinds


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the request threads: nothing is left running
    block_on_close = True


def make(cfg: BotConfig, host: str, port: int) -> Server:
    """The server bound to HOST:PORT (0: any free port); ConfigError when it cannot listen there."""
    handler = type("BoundHandler", (Handler,), {"cfg": cfg})
    try:
        return Server((host, port), handler)
    except (OSError, OverflowError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"--listen {host}:{port}: cannot listen there: {why}", "give a free port on an address of this host") from None


@contextlib.contextmanager
def running(server: Server) -> Iterator[str]:
    """SERVER answering from a thread of its own; its base URL. At the end it stops, and its threads are joined."""
    thread = threading.Thread(target=server.serve_forever, name="reviewer-bot-web", kwargs={"poll_interval": 0.2})
    thread.start()
    try:
        host, port = str(server.server_address[0]), int(server.server_address[1])
        yield f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def serve(cfg: BotConfig, host: str, port: int, say: Callable[[str], None] = log.info) -> None:
    """Serve the dashboard until SIGTERM or SIGINT; then return (exit 0) with no thread left."""
    server = make(cfg, host, port)
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 (signal's signature)
        stop.set()

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with running(server) as url:
            say(f"serving {cfg.home} on {url}/ (read-only, no authentication)")
            while not stop.wait(0.5):
                pass
        say("stopped")
    finally:
        for s, h in old.items():
            signal.signal(s, h)
