"""HTTP to a public-inbox server (lore): thread downloads, truncated ids, faults and retries.

Every request names its URL in the error it may raise. Transient faults (timeouts, 5xx,
429, a connection cut mid-body) are retried with exponential backoff; everything else
(connection refused, 404, a corrupt download, an HTML page instead of an mbox) fails at once.
The retry policy comes from the environment so that tests can make it fast:
REVIEWER_LORE_RETRIES (default 3), REVIEWER_LORE_BACKOFF (seconds, default 1, doubled
each time) and REVIEWER_LORE_TIMEOUT (seconds per connect/read, default 30).

A per-read timeout never ends a download from a server that sends a byte a second, so every
request also has a deadline, REVIEWER_LORE_DEADLINE (seconds, default 120): one download with
all its retries and backoff, or b4's whole search for other revisions (which goes through the
same Session), ends within it. The body is streamed and the clock checked between chunks, and
a watchdog shuts the socket when the time is up, so a slow answer's headers are cut too.
"""
from __future__ import annotations

import contextlib
import gzip
import html
import logging
import re
import socket
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser
from email.policy import default
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import requests
import urllib3
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from reviewer import config
from reviewer.errors import ConfigError, FetchError
from reviewer.run import deadline
from reviewer.series.msgid import MsgRef, parse
from reviewer.tree import git as tree_git

DEFAULT_URL = "https://lore.kernel.org/all/"
MAX_CANDIDATES = 25  # /raw look-ups for one truncated id; more means "type more of it"
_HREF = re.compile(r'<a\s+href="([^"]+)"', re.IGNORECASE)
_PATCH_SUBJECT = re.compile(r"^\s*\[[^\]]*\bPATCH\b[^\]]*\]", re.IGNORECASE)
_COUNTER = re.compile(r"\b(\d+)/(\d+)\s*\]")
_TRANSIENT = {429, 500, 502, 503, 504}


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = int(config.NUMBERS["REVIEWER_LORE_RETRIES"].default)
    backoff: float = config.NUMBERS["REVIEWER_LORE_BACKOFF"].default
    timeout: float = config.NUMBERS["REVIEWER_LORE_TIMEOUT"].default  # per connect, per read
    deadline: float = config.NUMBERS["REVIEWER_LORE_DEADLINE"].default  # per download, retries included

    @classmethod
    def from_env(cls) -> RetryPolicy:
        """The environment's policy; a bad value is a ConfigError naming the variable (config.py checks them all first)."""
        return cls(
            retries=int(config.env_number("REVIEWER_LORE_RETRIES")),
            backoff=config.env_number("REVIEWER_LORE_BACKOFF"),
            timeout=config.env_number("REVIEWER_LORE_TIMEOUT"),
            deadline=config.env_number("REVIEWER_LORE_DEADLINE"),
        )


class DeadlineExceeded(requests.Timeout):
    """A request (with its retries, or a whole search) ran past its deadline. A Timeout, so that
    liblore takes it for a failed server, as it takes any other."""

    def __init__(self, url: str, seconds: float) -> None:
        super().__init__(f"{url}: no complete answer within the {seconds:g} s deadline (REVIEWER_LORE_DEADLINE)")


class _Watched:
    """urllib3 connections that give their sockets to the thread's deadline watch (reviewer/run/deadline.py):
    a new one as it connects, again once TLS wraps it (the wrapped socket takes the plain one's place),
    a reused one as each request starts."""

    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        _watch(sock)
        return sock

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        _watch(getattr(self, "sock", None))

    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch(getattr(self, "sock", None))
        super().request(*args, **kwargs)  # type: ignore[misc]


def _watch(sock: socket.socket | None) -> None:
    watch = deadline.current()
    if watch is not None and sock is not None:
        watch.add(sock)


class _HTTPConnection(_Watched, HTTPConnection):
    pass


class _HTTPSConnection(_Watched, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class _Adapter(HTTPAdapter):
    """requests' adapter with our pools (directly, or through an HTTP proxy; SOCKS keeps its own)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> urllib3.PoolManager:
        manager: urllib3.PoolManager = super().proxy_manager_for(proxy, **kwargs)
        if isinstance(manager, urllib3.ProxyManager):
            manager.pool_classes_by_scheme = _POOLS
        return manager


_POOLS: dict[str, type[HTTPConnectionPool]] = {"http": _HTTPPool, "https": _HTTPSPool}


_CHUNK = 64 * 1024


class Session(requests.Session):
    """requests with a deadline: each request ends within DEADLINE seconds, or inside `budget()`
    all of them together (retries, redirects, b4's searches) within the budget's."""

    def __init__(self, deadline_s: float) -> None:
        super().__init__()
        self.deadline = deadline_s
        for prefix in ("http://", "https://"):
            self.mount(prefix, _Adapter())

    @contextlib.contextmanager
    def budget(self, seconds: float | None = None) -> Iterator[deadline.Watch]:
        """One deadline for every request inside (a nested budget keeps the outer one)."""
        outer = deadline.current()
        if outer is not None:
            yield outer
            return
        with deadline.watching(deadline.Watch(self.deadline if seconds is None else seconds)) as watch:
            yield watch

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        url = request.url or ""
        with self.budget() as watch:
            if watch.expired():
                raise DeadlineExceeded(url, watch.seconds)
            kwargs["timeout"] = _capped(kwargs.get("timeout"), watch.left())
            stream = kwargs.pop("stream", False)
            try:
                resp = super().send(request, stream=True, **kwargs)
                if not stream:
                    _read_body(resp, watch)
            except requests.RequestException:
                if watch.expired():
                    raise DeadlineExceeded(url, watch.seconds) from None
                raise
            return resp


def _capped(timeout: object, left: float) -> tuple[float, float]:
    """requests' (connect, read) timeout, neither beyond the time left (none given: the time left)."""
    pair = timeout if isinstance(timeout, tuple) and len(timeout) == 2 else (timeout, timeout)
    return (_at_most(pair[0], left), _at_most(pair[1], left))


def _at_most(value: object, left: float) -> float:
    return min(float(value), left) if isinstance(value, (int, float)) else left


def _read_body(resp: requests.Response, watch: deadline.Watch) -> None:
    """The whole body, one socket read at a time (read1), the clock checked between them; as
    `Response.content` would read it, with requests' errors."""
    raw = resp.raw
    chunks = []
    try:
        while not watch.expired():
            chunk = raw.read1(_CHUNK, decode_content=True)
            if not chunk:
                break
            chunks.append(chunk)
    except urllib3.exceptions.ReadTimeoutError as exc:
        raise requests.exceptions.ReadTimeout(exc, response=resp) from None
    except urllib3.exceptions.DecodeError as exc:
        raise requests.exceptions.ContentDecodingError(exc, response=resp) from None
    except (urllib3.exceptions.ProtocolError, urllib3.exceptions.SSLError, OSError) as exc:
        raise requests.exceptions.ChunkedEncodingError(exc, response=resp) from None
    if watch.expired():  # a cut socket reads as the end of the body: never return half of it
        resp.close()
        raise requests.exceptions.ChunkedEncodingError("the deadline cut the download", response=resp)
    resp._content = b"".join(chunks)
    resp._content_consumed = True
    raw.release_conn()


class _Transient(Exception):
    """A fault worth another try; carries the error to raise when the tries run out."""

    def __init__(self, error: FetchError) -> None:
        super().__init__(error.message)
        self.error = error


# What a fetch tells on the way (the id a truncated one resolved to): a log record, never a print; the CLI
# shows reviewer.* records on stderr. The NullHandler keeps logging's last resort from printing for a
# caller that set up no logging.
log = logging.getLogger(__name__)
log.addHandler(logging.NullHandler())


def server_url(ref: MsgRef, option: str | None, configured: str | None, cwd: Path | None = None) -> str:
    """Where to ask: --lore-url, else the server of a pasted lore link, else CONFIGURED (git config
    reviewer.loreUrl, read and checked by config.py), else (with CWD) the archive b4 fetches from
    there (b4.midmask), else lore."""
    if option:
        return _slash(option)
    if ref.base_url and ref.inbox:
        return f"{ref.base_url}{ref.inbox}/"
    return _slash(configured or (b4_url(cwd) if cwd is not None else None) or DEFAULT_URL)


def base_url(ref: MsgRef, option: str | None, cwd: Path) -> str:
    """server_url with reviewer.loreUrl as git config gives it in CWD, for a caller without a loaded config.Config."""
    return server_url(ref, option, config.from_git(cwd).lore_url, cwd)


def b4_setting(cwd: Path, key: str) -> str | None:
    """b4.KEY as b4 reads it in CWD: git config, else the `.b4-config` file at the top of the work tree
    (where b4 takes a project's `*mask` keys from); None when neither sets it."""
    value = tree_git.config_value(cwd, f"b4.{key}")
    if not value:
        from reviewer.tree.repo import top_of  # GitPython: only a Message-ID's review asks

        top = top_of(cwd)
        if top and (top / ".b4-config").is_file():
            value = tree_git.read(cwd, "config", "-f", str(top / ".b4-config"), "--get", f"b4.{key}", timeout=10)
    return value or None


def b4_url(cwd: Path) -> str | None:
    """The archive b4 fetches threads from, from b4.midmask as b4 makes it: `https://lore.kernel.org/all/%s`
    gives `https://lore.kernel.org/all/`, and a mask with no list in it (`https://lore.example.org/%s`) asks
    that server's `all`. None: b4.midmask is not set."""
    mask = b4_setting(cwd, "midmask")
    if mask is None:
        return None
    url = mask.replace("/%s", "").rstrip("/")
    if not config.is_http_url(url):
        raise ConfigError(f"git config b4.midmask: expected an http:// or https:// URL ending in /%s, got {mask!r}",
                          "e.g. git config b4.midmask https://lore.kernel.org/all/%s (or give --lore-url)")
    return url + "/" if urlsplit(url).path.strip("/") else url + "/all/"


def link_msgid(text: str, cwd: Path) -> MsgRef | None:
    """The Message-ID in TEXT when it is a link made with b4.linkmask (the `Link:` b4 adds to each patch it
    applies, e.g. `https://patch.msgid.link/%s`) of a form msgid.parse does not know, e.g. `...?id=%s`."""
    mask = b4_setting(cwd, "linkmask") if text.startswith(("http://", "https://")) else None
    if mask is None or mask.count("%s") != 1:
        return None
    head, tail = mask.split("%s")
    found = re.fullmatch(re.escape(head) + r"([^\s/?#&]+?)/?" + re.escape(tail), text.strip())
    ref = parse(unquote(found.group(1))) if found else None  # `%40` for the @ too
    return ref if ref is not None and not ref.truncated else None


def _slash(url: str) -> str:
    return url.rstrip("/") + "/"


@dataclass
class Server:
    """One public-inbox inbox (or lore's `all`), e.g. `https://lore.kernel.org/all/`."""

    url: str
    policy: RetryPolicy = field(default_factory=RetryPolicy.from_env)
    session: Session = field(init=False)

    def __post_init__(self) -> None:
        self.session = Session(self.policy.deadline)

    def msg_url(self, msgid: str, tail: str = "") -> str:
        return f"{_slash(self.url)}{quote(msgid, safe='@+=$!*,;:')}/{tail}"

    def thread_mbox(self, msgid: str) -> bytes:
        """The whole thread of MSGID as mbox bytes (public-inbox's `t.mbox.gz`, unpacked)."""
        url = self.msg_url(msgid, "t.mbox.gz")
        resp = self.get(url, f"no message <{msgid}> on {self.url}")
        return _mbox(url, _gunzip(url, resp.content))

    def raw(self, msgid: str) -> bytes:
        url = self.msg_url(msgid, "raw")
        return self.get(url, f"no message <{msgid}> on {self.url}").content

    def candidates(self, partial: str) -> list[str]:
        """Full ids that start with PARTIAL: public-inbox answers HTTP 300 with a list of links."""
        url = self.msg_url(partial)
        resp = self.get(url, f"no message matches {partial!r} on {self.url}", ok=(200, 300))
        if resp.status_code == 200:  # the "partial" id is a whole id after all
            return [partial]
        ids = [unquote(urlsplit(h).path.rstrip("/").rsplit("/", 1)[-1]) for h in _HREF.findall(resp.text)]
        return list(dict.fromkeys(i for i in (html.unescape(x) for x in ids) if i.startswith(partial) and "@" in i))

    def get(self, url: str, missing: str, ok: tuple[int, ...] = (200,)) -> requests.Response:
        """GET URL with retries, all within the deadline; raise FetchError naming URL (MISSING for a 404)."""
        delay = self.policy.backoff
        with self.session.budget(self.policy.deadline) as watch:
            for attempt in range(self.policy.retries + 1):
                try:
                    return self._get_once(url, missing, ok)
                except _Transient as exc:
                    last = attempt == self.policy.retries
                    if last or watch.left() <= delay:  # no time for another try
                        raise FetchError(exc.error.message + _tries(attempt + 1, None if last else watch.seconds), exc.error.hint) from None
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def _get_once(self, url: str, missing: str, ok: tuple[int, ...]) -> requests.Response:
        timeout = self.policy.timeout
        try:
            resp = self.session.get(url, timeout=(timeout, timeout), allow_redirects=True)
        except DeadlineExceeded as exc:
            raise FetchError(str(exc), _HINT_NET) from None
        except requests.Timeout:
            raise _Transient(FetchError(f"{url}: no answer within {timeout:g} s", _HINT_NET)) from None
        except requests.exceptions.ChunkedEncodingError:
            raise _Transient(FetchError(f"{url}: the connection broke off during the download", _HINT_NET)) from None
        except requests.ConnectionError as exc:
            raise FetchError(f"{url}: cannot connect: {_reason(exc)}", _HINT_NET) from None
        except requests.RequestException as exc:
            raise FetchError(f"{url}: {_reason(exc)}", _HINT_NET) from None
        if resp.status_code in ok:
            return resp
        if resp.status_code == 404:
            raise FetchError(f"{missing} ({url}: 404 Not Found)", "check the Message-ID, or point --lore-url at the list's archive")
        error = FetchError(f"{url}: the server answered {resp.status_code} {resp.reason}", _HINT_NET)
        if resp.status_code in _TRANSIENT:
            raise _Transient(error)
        raise error


def _tries(n: int, deadline_s: float | None) -> str:
    """" (3 tries)", and why there were no more when the deadline (DEADLINE_S) stopped them."""
    cut = f"; the {deadline_s:g} s deadline (REVIEWER_LORE_DEADLINE) left no time for more" if deadline_s is not None else ""
    return f" ({n} tr{'ies' if n > 1 else 'y'}{cut})" if n > 1 or cut else ""


_HINT_NET = "check the network and --lore-url (or git config reviewer.loreUrl); `--offline` reviews a cached thread"


def _reason(exc: Exception) -> str:
    text = str(exc)
    for known in ("Connection refused", "Name or service not known", "No route to host", "Connection reset"):
        if known in text:
            return known.lower()
    return " ".join(text.split())[:200]


def _gunzip(url: str, data: bytes) -> bytes:
    if _looks_like_html(data):
        raise FetchError(f"{url}: the server sent an HTML page, not a gzipped mbox", "check --lore-url: it must be a public-inbox archive")
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise FetchError(f"{url}: the download is corrupt ({exc or 'truncated gzip data'})",
                         "try again later, or with --no-cache") from None


def _mbox(url: str, data: bytes) -> bytes:
    if _looks_like_html(data):
        raise FetchError(f"{url}: the server sent an HTML page, not an mbox", "check --lore-url: it must be a public-inbox archive")
    if not data.startswith(b"From "):
        raise FetchError(f"{url}: the download is not an mbox", "check --lore-url: it must be a public-inbox archive")
    return data


def _looks_like_html(data: bytes) -> bool:
    head = data[:512].lstrip().lower()
    return head.startswith((b"<!doctype", b"<html", b"<head", b"<body"))


def resolve(server: Server, partial: str) -> str:
    """The one series (cover letter or first patch) whose Message-ID starts with PARTIAL."""
    ids = server.candidates(partial)
    if len(ids) > MAX_CANDIDATES:
        raise FetchError(f"{partial!r}: {len(ids)} messages on {server.url} start with it", "give more of the Message-ID")
    heads = _series_heads({i: server.raw(i) for i in ids})
    if not heads:
        raise FetchError(f"{partial!r}: no patch or cover letter on {server.url} starts with it (found: {', '.join(ids)})",
                         "give the Message-ID of a patch or of the cover letter")
    if len(heads) > 1:
        raise FetchError(f"{partial!r} is ambiguous: {len(heads)} series match: {', '.join(heads)}", "give more of the Message-ID")
    log.info("resolved %s to %s", partial, heads[0])
    return heads[0]


def _series_heads(raws: dict[str, bytes]) -> list[str]:
    """Ids of cover letters and first patches, without a 1/N whose cover letter is also there."""
    heads = {i: _headers(raw) for i, raw in raws.items()}
    heads = {i: h for i, h in heads.items() if _is_series_head(h.get("subject", ""))}
    return [i for i, h in heads.items() if not any(f"<{other}>" in h.get("references", "") for other in heads if other != i)]


def _is_series_head(subject: str) -> bool:
    if subject.lower().startswith(("re:", "aw:", "fwd:")) or not _PATCH_SUBJECT.match(subject):
        return False
    counter = _COUNTER.search(subject.split("]", 1)[0] + "]")
    return counter is None or int(counter.group(1)) <= 1


def _headers(raw: bytes) -> dict[str, str]:

    msg = BytesHeaderParser(policy=default).parsebytes(raw)
    refs = f"{msg.get('In-Reply-To', '')} {msg.get('References', '')}"
    return {"subject": " ".join(str(msg.get("Subject", "")).split()), "references": refs}
