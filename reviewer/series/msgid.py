"""Parse every form in which people paste a Message-ID, and tell targets apart.

Forms: `<id@host>`, `id@host`, `id:id@host` (notmuch/mutt), lore URLs (`/<list>/<id>/`,
`/<list>/<id>/T/`, `/r/<id>`, `.../raw`, `.../t.mbox.gz`), patchwork links that carry the
id, and a *truncated* id cut before its `@host` (`20240816110717.10249-1-xry111`), which only
a public-inbox server can resolve (it answers HTTP 300 with the candidates).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

# Path components of lore/public-inbox URLs that follow the id and are not part of it.
_URL_SUFFIXES = {"", "t", "T", "raw", "t.mbox.gz", "t.atom", "#r", "2-a.txt"}
_ID_CHARS = re.compile(r"^[^\s<>@/]+@[^\s<>@/]+$")
# A truncated id: at least 15 characters of message-id alphabet and no '@', shaped like
# the ids git send-email, b4 and mail clients generate (digits, dots, dashes).
_TRUNCATED = re.compile(r"^(?=[^@/\s]*\d)(?=[^@/\s]*[.-])[A-Za-z0-9][A-Za-z0-9._+=$-]{14,}$")
MIN_TRUNCATED = 15


@dataclass(frozen=True)
class MsgRef:
    """A Message-ID as the user named it, normalised (no angle brackets)."""

    msgid: str
    truncated: bool = False
    inbox: str | None = None  # the list name from a lore URL, e.g. "loongarch"
    base_url: str | None = None  # scheme://host/ from a URL the user gave


def parse(text: str) -> MsgRef | None:
    """Return the Message-ID TEXT names, or None if TEXT is not a message-id form."""
    text = text.strip()
    if text.startswith(("http://", "https://")):
        return _from_url(text)
    for prefix in ("id:", "mid:", "msgid:"):
        if text.lower().startswith(prefix):
            text = text[len(prefix) :]
            break
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1].strip()
    if _ID_CHARS.match(text):
        return MsgRef(text)
    if _TRUNCATED.match(text):
        return MsgRef(text, truncated=True)
    return None


def _from_url(url: str) -> MsgRef | None:
    parts = urlsplit(url)
    segments = [unquote(s) for s in parts.path.split("/")]
    base = f"{parts.scheme}://{parts.netloc}/"
    if parts.fragment.startswith(("r", "m")) and "@" in parts.fragment:
        return MsgRef(parts.fragment[1:], base_url=base)
    # patchwork: /project/<p>/patch/<msgid>/ or /project/<p>/cover/<msgid>/
    for kind in ("patch", "cover", "series"):
        if kind in segments:
            at = segments.index(kind)
            if at + 1 < len(segments) and "@" in segments[at + 1]:
                return MsgRef(segments[at + 1], base_url=base)
    ids = [i for i, s in enumerate(segments) if "@" in s]
    if ids:
        at = ids[0]
        tail = [s for s in segments[at + 1 :] if s]
        if all(s in _URL_SUFFIXES for s in tail):
            inbox = segments[at - 1] if at >= 2 and segments[at - 1] not in ("r", "") else None
            return MsgRef(segments[at], inbox=inbox, base_url=base)
    # A truncated id inside a URL: /<inbox>/<partial>/
    named = [s for s in segments if s and s not in _URL_SUFFIXES]
    if len(named) >= 2 and _TRUNCATED.match(named[1]):
        return MsgRef(named[1], truncated=True, inbox=named[0], base_url=base)
    return None


def looks_like_range(text: str) -> bool:
    """A git revision range (`A..B`, `A...B`, `A..`, `..B`)."""
    return ".." in text and "://" not in text
