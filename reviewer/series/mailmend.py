"""Mending what Python's email package and b4 cannot read, before they read it.

On some malformed headers they raise instead of recording a defect: IndexError on
`Message-Id: <>`, ValueError on a charset name with a NUL byte (in a Content-Type or an
RFC 2047 word), ValueError or OverflowError on a year 99999, and ValueError wherever a value
with a line break (a vertical tab, a form feed; a CR or U+2028 from an encoded word) is set again.
`mend` reads such a message as git mailinfo and b4 read the rest: an unknown charset as UTF-8,
a bad date as no date, a control character as a space, an id without brackets as that id;
a header still unreadable is dropped (reviewer/series/fetch.py then makes up a missing Message-Id).
Headers that need none of this are left byte for byte (patatt signs them). Found and kept
honest by the fuzz tests in tests/fuzz/.
"""
from __future__ import annotations

import codecs
import datetime as dt
import email.message
import email.policy
import email.utils
import re
import weakref
from collections.abc import Callable
from typing import Any, cast

from reviewer.errors import InputError

Message = email.message.EmailMessage
POLICY = email.policy.EmailPolicy(utf8=True, linesep="\n")

EMAIL_ERRORS = (ArithmeticError, LookupError, ValueError, TypeError, AttributeError, AssertionError)
UNREADABLE = "the file is damaged or not a mail; save the thread again (e.g. `b4 mbox MSGID`)"
# Postfix's header_size_limit: no list server passes a longer header field, and Python's
# address parser takes time quadratic in its length (20,000 Cc addresses: minutes).
MAX_FIELD = 102_400
# Multiparts inside multiparts: a mail needs a few levels (a signed digest of forwarded mails), and
# Python's parser, walk() and b4 recurse once per level (the parser fails at about 900).
MAX_DEPTH = 64
_MENDED: weakref.WeakSet[Message] = weakref.WeakSet()  # parse_bytes mends, ensure_msgids need not again


class _LenientPolicy(email.policy.EmailPolicy):
    """POLICY, but a header it cannot parse reads as its raw text (as with compat32): for the parser only."""

    def header_fetch_parse(self, name: str, value: str) -> Any:
        try:
            return super().header_fetch_parse(name, value)
        except EMAIL_ERRORS:
            return value.replace("\r", "").replace("\n", "")


LENIENT = _LenientPolicy(utf8=True, linesep="\n")
# What str.splitlines() (and so EmailPolicy.header_store_parse) takes for a line break, and the other controls.
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")
_SURROGATES = re.compile("[\udc80-\udcff]")
_ENCODED_WORD = re.compile(r"=\?([^?]*)\?([bBqQ])\?")
_ID_HEADERS = ("message-id", "in-reply-to")


def mend(msg: Message, where: str) -> None:
    """Mend MSG's headers in place (once); WHERE (and its Message-Id) names it in an error."""
    if msg in _MENDED:
        return
    if (depth := _depth(msg)) > MAX_DEPTH:
        raise InputError(f"{_named(msg, where)}: its MIME parts are nested {depth} deep (a mail needs a few levels at most)",
                         "the mail is damaged or made up: remove it from the mbox, or save the thread again")
    for part in msg.walk():
        _mend_fields(part, lambda: _named(msg, where))
        _mend_charset(part)
        _mend_unsplit(part)
    _MENDED.add(msg)


def _depth(msg: Message) -> int:
    """How deep MSG's multiparts nest, counted without recursion (walk() and b4 recurse per level)."""
    deepest, todo = 0, [(cast(email.message.Message, msg), 1)]
    while todo:
        part, level = todo.pop()
        deepest = max(deepest, level)
        if part.is_multipart():  # get_payload() of a text part decodes it, and can raise (a NUL in its charset)
            todo += [(p, level + 1) for p in part.get_payload() if isinstance(p, email.message.Message)]
    return deepest


def _named(msg: Message, where: str) -> str:
    """WHERE, and the message's Message-Id when it has one."""
    msgid = next((str(v).strip() for n, v in msg.raw_items() if n.lower() == "message-id" and len(v) < 200), "")
    return f"{where} {msgid}" if msgid else where


def _mend_fields(part: Message, where: Callable[[], str]) -> None:
    fields = list(part.raw_items())
    for name, value in fields:
        if len(value) > MAX_FIELD:
            raise InputError(f"{where()}: its {name[:40]} header is {len(value):,} bytes long (mail servers pass at most {MAX_FIELD:,})",
                             "the mail is damaged or made up: remove it from the mbox, or save the thread again")
    mended = [(name, _mend_field(name, value)) for name, value in fields]
    if mended != fields:
        for name in {name.lower() for name, _ in fields}:
            del part[name]
        for name, value in mended:
            if value is not None:
                part.set_raw(name, value)


# Values of these shapes (printable ASCII, as mailers write them) the email package reads without
# fail (tests/fuzz/test_mail_regressions.py generates them to check): they skip the parse that
# _mend_field would do (0.1-0.4 ms a header, several times what the rest of the reading costs).
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_ADDR = rf"{_ATOM}(?:\.{_ATOM})*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
_MAILBOX = rf"(?>{_ADDR}|(?:[A-Za-z0-9][A-Za-z0-9 .'_-]*|\"[^\"\\]*\")?\s*<{_ADDR}>)"
_TOKEN = r"[A-Za-z0-9!#$&^_.+-]+"
_PARAMS = rf"(?:\s*;\s*{_TOKEN}=(?:{_TOKEN}|\"[^\"\\]*\"))*\s*;?"
_ADDRESSES = re.compile(rf"\s*{_MAILBOX}(?:\s*,\s*{_MAILBOX})*\s*")
_SHAPES = {
    **dict.fromkeys(("from", "to", "cc", "reply-to", "sender"), _ADDRESSES),
    "message-id": re.compile(rf"\s*<{_ATOM}(?:\.{_ATOM})*@[A-Za-z0-9.-]+>\s*"),
    "in-reply-to": re.compile(r".*<[^>]+>.*"),  # what b4 reads of it (else _mend_field may find a bare id)
    "content-type": re.compile(rf"\s*{_TOKEN}/{_TOKEN}{_PARAMS}\s*"),
    "content-disposition": re.compile(rf"\s*{_TOKEN}{_PARAMS}\s*"),
    "content-transfer-encoding": re.compile(rf"\s*{_TOKEN}\s*"),
    "mime-version": re.compile(r"\s*\d\.\d\s*"),
}
# The structured headers of email.headerregistry (Subject is unstructured text there too).
_STRUCTURED = {"date", "resent-date", "orig-date", "sender", "resent-sender", "to", "resent-to", "cc", "resent-cc", "bcc",
               "resent-bcc", "from", "resent-from", "reply-to", "mime-version", "content-type", "content-disposition",
               "content-transfer-encoding", "message-id"}
_PRINTABLE = re.compile(r"[\x20-\x7e\t]{0,2000}")


def _plainly_fine(name: str, raw: str) -> bool:
    """RAW is printable ASCII of a shape the email package is known to read (and b4 to date)."""
    value = raw.replace("\r", "").replace("\n", "")
    if not _PRINTABLE.fullmatch(value) or "=?" in value:
        return False
    lname = name.lower()
    if lname == "date":
        return _usable_date(value)
    shape = _SHAPES.get(lname)
    return shape.fullmatch(value) is not None if shape is not None else lname not in _STRUCTURED


def _mend_field(name: str, raw: str) -> str | None:
    """RAW as it can be read, unchanged if it can; None: unreadable, drop the header."""
    if _plainly_fine(name, raw):
        return raw
    # Undeclared 8-bit bytes (kept by the parser as surrogates, which b4 passes on in ids and names
    # and which would reach the report as bytes that are not UTF-8): read as UTF-8 with replacement.
    value = raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace") if _SURROGATES.search(raw) else raw
    value = _ENCODED_WORD.sub(_utf8_unless_known, value) if "=?" in value else value
    try:
        text = str(POLICY.header_fetch_parse(name, value))
        if _CONTROLS.search(text):
            value = text = " ".join(_CONTROLS.sub(" ", text).split())
            str(POLICY.header_fetch_parse(name, value))
    except EMAIL_ERRORS:
        return None
    lname = name.lower()
    if lname in _ID_HEADERS and "<" not in text and len(text.split()) == 1 and "@" in text:
        return _bracketed(name, text.strip())
    if lname == "date" and text and not _usable_date(text):
        return None
    return value


def _bracketed(name: str, bare: str) -> str | None:
    """A bare id in brackets, as public-inbox reads it; None when the email package cannot read even
    that (`Message-Id:@` would become `<@>`, an IndexError in its parser)."""
    try:
        str(POLICY.header_fetch_parse(name, f"<{bare}>"))
    except EMAIL_ERRORS:
        return None
    return f"<{bare}>"


def _utf8_unless_known(word: re.Match[str]) -> str:
    charset = word.group(1).partition("*")[0]  # RFC 2231 allows a language after '*'
    return word.group(0) if _known_charset(charset) else f"=?utf-8?{word.group(2)}?"


def _known_charset(name: str) -> bool:
    try:
        codecs.lookup(name)
    except (LookupError, ValueError):  # ValueError: a NUL byte in the name
        return False
    return True


def _usable_date(text: str) -> bool:
    """TEXT reads as a Date the way b4 reads one (b4 raises on a year 99999 or a 31 February)."""
    try:
        parsed = email.utils.parsedate_tz(text)
        if parsed is None:
            return True  # b4 reads an unparseable date as none already
        if parsed[-1] is not None and abs(parsed[-1]) > 86400:  # b4 reads a zone of +9999 as UTC
            dt.datetime(*parsed[:6], tzinfo=dt.UTC)
        else:
            email.utils.parsedate_to_datetime(text)
    except EMAIL_ERRORS:
        return False
    return True


def _mend_unsplit(part: Message) -> None:
    """A multipart whose first boundary never comes keeps its body as text, which the email package
    cannot write as bytes when it holds an undeclared 8-bit byte: as_bytes() raises UnicodeEncodeError
    (fetch.py hashes a mail without a Message-Id; the thread cache writes mail). Neither git mailinfo
    nor b4 reads a word of that body (both skip to the first boundary), so its non-ASCII characters
    are written as escapes (`\\xf6`), and the mail is refused as having no patch, like any other."""
    raw = part.get_payload(decode=True) if part.get_content_maintype() == "multipart" and not part.is_multipart() else None
    if isinstance(raw, bytes) and not raw.isascii():
        part.set_payload(raw.decode("utf-8", "replace").encode("ascii", "backslashreplace").decode("ascii"))


def _mend_charset(part: Message) -> None:
    """A part whose charset no codec knows (or named with a NUL byte) is read as UTF-8, as b4 does."""
    charset = part.get_content_charset()
    if charset is not None and not _known_charset(charset):
        part.set_param("charset", "utf-8")
