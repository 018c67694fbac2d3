"""HTTP to a public-inbox server (lore): thread downloads, truncated ids, faults and retries.

Every request names its URL in the error it may raise. Transient faults (timeouts, 5xx,
429, a connection cut mid-body) are retried with exponential backoff; everything else
(connection refused, 404, a corrupt download, an HTML page instead of an mbox) fails at once.
The retry policy comes from the environment so that tests can make it fast:
REVIEWER_LORE_RETRIES (default 3), REVIEWER_LORE_BACKOFF (seconds, default 1, doubled
each time) and REVIEWER_LORE_TIMEOUT (seconds per connect/read, default 30).
"""
from __future__ import annotations

import gzip
import html
import os
import re
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import requests

from reviewer.errors import FetchError
from reviewer.msgid import MsgRef
from reviewer.proc import run

DEFAULT_URL = "https://lore.kernel.org/all/"
MAX_CANDIDATES = 25  # /raw look-ups for one truncated id; more means "type more of it"
_HREF = re.compile(r'<a\s+href="([^"]+)"', re.IGNORECASE)
_PATCH_SUBJECT = re.compile(r"^\s*\[[^\]]*\bPATCH\b[^\]]*\]", re.IGNORECASE)
_COUNTER = re.compile(r"\b(\d+)/(\d+)\s*\]")
_TRANSIENT = {429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Policy:
    retries: int = 3
    backoff: float = 1.0
    timeout: float = 30.0

    @classmethod
    def from_env(cls) -> Policy:
        env = os.environ
        return cls(
            retries=int(env.get("REVIEWER_LORE_RETRIES", cls.retries)),
            backoff=float(env.get("REVIEWER_LORE_BACKOFF", cls.backoff)),
            timeout=float(env.get("REVIEWER_LORE_TIMEOUT", cls.timeout)),
        )


class _Transient(Exception):
    """A fault worth another try; carries the error to raise when the tries run out."""

    def __init__(self, error: FetchError) -> None:
        super().__init__(error.message)
        self.error = error


def note(message: str) -> None:
    """One informational line on stderr (the report itself goes to stdout)."""
    print(f"review: {message}", file=sys.stderr, flush=True)


def base_url(ref: MsgRef, option: str | None, cwd: Path) -> str:
    """Where to ask: --lore-url, else the server of a pasted lore link, else git config, else lore."""
    if option:
        return _slash(option)
    if ref.base_url and ref.inbox:
        return f"{ref.base_url}{ref.inbox}/"
    configured = run(["git", "config", "--get", "reviewer.loreUrl"], cwd=cwd, check=False, timeout=10).stdout.strip()
    return _slash(configured or DEFAULT_URL)


def _slash(url: str) -> str:
    return url.rstrip("/") + "/"


@dataclass
class Server:
    """One public-inbox inbox (or lore's `all`), e.g. `https://lore.kernel.org/all/`."""

    url: str
    policy: Policy = field(default_factory=Policy.from_env)
    session: requests.Session = field(default_factory=requests.Session)

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
        """GET URL with retries; raise FetchError naming URL (MISSING for a 404)."""
        delay = self.policy.backoff
        for attempt in range(self.policy.retries + 1):
            try:
                return self._get_once(url, missing, ok)
            except _Transient as exc:
                if attempt == self.policy.retries:
                    tries = f" ({attempt + 1} tries)" if attempt else ""
                    raise FetchError(exc.error.message + tries, exc.error.hint) from None
            time.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")

    def _get_once(self, url: str, missing: str, ok: tuple[int, ...]) -> requests.Response:
        timeout = self.policy.timeout
        try:
            resp = self.session.get(url, timeout=(timeout, timeout), allow_redirects=True)
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
        raise FetchError(f"{url}: the download is corrupt ({exc or 'truncated gzip data'})", "try again later, or with --no-cache") from None


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
    note(f"resolved {partial} to {heads[0]}")
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
    from email.parser import BytesHeaderParser
    from email.policy import default

    msg = BytesHeaderParser(policy=default).parsebytes(raw)
    refs = f"{msg.get('In-Reply-To', '')} {msg.get('References', '')}"
    return {"subject": " ".join(str(msg.get("Subject", "")).split()), "references": refs}
