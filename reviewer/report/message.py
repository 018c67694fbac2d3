"""The reply as a message: its options, its headers (folded as RFC 5322 asks, threaded under
the series), and its bytes. The text of its body is email.py's."""
from __future__ import annotations

import datetime as dt
import email.policy
import email.utils
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from enum import StrEnum

from reviewer.model import Series, address
from reviewer.report import escape
from reviewer.series import mbox
from reviewer.store.results import version

# fetch.ensure_msgids gives a mail without a usable Message-ID one of its own, in this domain
# (RFC 2606 keeps .invalid unused): no real reply can answer it.
INVENTED = "@reviewer.invalid"
HEADER_WIDTH = 78  # RFC 5322 2.1.1: lines "SHOULD" stay within 78 characters, and MUST within 998
_MAX_LINE = 998
_IDS = {"message-id", "in-reply-to", "references"}


class _Policy(email.policy.EmailPolicy):
    """Headers folded at 78 columns, the long Cc: after its commas and the Subject at its spaces; but a
    Message-ID is never cut, and an ASCII Subject never becomes encoded words (Python's folder encodes
    a word longer than the line, and In-Reply-To as a whole): those are folded here at their spaces."""

    def fold(self, name: str, value: str) -> str:
        return self._by_words(name, value) or super().fold(name, value)

    def fold_binary(self, name: str, value: str) -> bytes:
        folded = self._by_words(name, value)
        return folded.encode("ascii") if folded else super().fold_binary(name, value)

    def _by_words(self, name: str, value: str) -> str | None:
        text = str(value)
        if not text.isascii() or (name.lower() not in _IDS and name.lower() != "subject"):
            return None
        lines = fold_words(f"{name}: {text}", HEADER_WIDTH, len(name) + 2)
        if any(len(line) > _MAX_LINE for line in lines):  # a word longer than SMTP allows: encoded words cut it
            return None
        return self.linesep.join(lines) + self.linesep


POLICY = _Policy(linesep="\n", max_line_length=HEADER_WIDTH)  # email.policy.SMTP, with our folding


def fold_words(text: str, width: int, start: int = 0) -> list[str]:
    """TEXT cut into lines before spaces (each later line starts with the space: RFC 5322 folding, so
    joining them back gives TEXT), as few as keep each within WIDTH; a longer word stays whole. Spaces
    before START (after `Name:`) are not break points."""
    lines, begin, last = [], 0, None
    for i, ch in enumerate(text):
        if ch != " " or i < start:
            continue
        if i - begin > width and last is not None:
            lines.append(text[begin:last])
            begin = last
        last = i if i > begin else None
    if len(text) - begin > width and last is not None:
        lines.append(text[begin:last])
        begin = last
    return [*lines, text[begin:]]


class ReplyPolicy(StrEnum):
    AUTHOR = "author"  # To: the author only
    LIST = "list"  # To: the author, Cc: the thread's To: (where the lists go)
    ALL = "all"  # To: the author, Cc: the thread's To: and Cc:


@dataclass(frozen=True)
class ReplyOptions:
    sender: str  # `Name <addr>`
    policy: ReplyPolicy = ReplyPolicy.ALL
    trailers: tuple[str, ...] = ()  # e.g. "Tested-by: Name <addr>", only when the user asks
    date: dt.datetime | None = None  # fixed in tests; default now
    make_msgid: Callable[[], str] | None = None  # fixed in tests; default email.utils.make_msgid
    signature: str = field(default_factory=lambda: f"reviewer {version() or '(unknown version)'}")
    in_reply_to: str | None = None  # --in-reply-to: the real Message-ID to answer (without <>)
    infos: bool = False  # --reply-infos: the infos too (by default they stay in the terminal and JSON reports)


def recipients(s: Series, to: tuple[str, ...], cc: tuple[str, ...], policy: ReplyPolicy, sender: str) -> tuple[list[str], list[str]]:
    """(To, Cc): the author first (and whoever sent a patch on an author's behalf); then the
    thread's To/Cc as POLICY says, without duplicates or the sender."""
    seen = {email.utils.parseaddr(sender)[1].lower()}
    people = [s.author, *(p.sender for p in s.patches if p.sender), *(p.author for p in s.patches if p.sender)]
    out_to = _unique([address(p.name, p.email) for p in people if p is not None], seen)
    wanted = {ReplyPolicy.AUTHOR: (), ReplyPolicy.LIST: to, ReplyPolicy.ALL: (*to, *cc)}[policy]
    return [escape.text(a) for a in out_to], [escape.text(a) for a in _unique([address(*email.utils.parseaddr(a)) for a in wanted], seen)]


def _unique(addrs: list[str], seen: set[str]) -> list[str]:
    out = []
    for a in addrs:
        key = email.utils.parseaddr(a)[1].lower()
        if key and key not in seen:
            seen.add(key)
            out.append(a)
    return out


def invented_parent(msg: EmailMessage) -> str | None:
    """The Message-ID MSG answers when the tool made it up (the mail had none), else None."""
    parent = str(msg.get("In-Reply-To", "")).strip()
    return parent if parent.endswith(f"{INVENTED}>") else None


def threading_ids(parent: str, refs: tuple[str, ...], given: str | None) -> tuple[str, tuple[str, ...]]:
    """(In-Reply-To, References) ids: GIVEN (--in-reply-to) replaces the parent, and then no made-up
    id stays in References. Without it a made-up parent is kept, for invented_parent to find."""
    if given is None:
        return parent, refs
    return given, (*(r for r in refs if not r.endswith(INVENTED) and r not in (parent, given)), given)


def message(opts: ReplyOptions, s: Series, subject: str, text: str, parent: str,
            refs: tuple[str, ...], to: tuple[str, ...], cc: tuple[str, ...]) -> EmailMessage:
    """The reply: every header value that comes from the series (Subject, the addresses, the
    Message-IDs) through escape.text, so no control character reaches a header raw."""
    parent, refs = threading_ids(escape.text(parent), tuple(escape.text(r) for r in refs), opts.in_reply_to)
    msg = EmailMessage(policy=POLICY)
    out_to, out_cc = recipients(s, to, cc, opts.policy, opts.sender)
    msg["From"] = opts.sender
    msg["To"] = ", ".join(out_to)
    if out_cc:
        msg["Cc"] = ", ".join(out_cc)
    msg["Subject"] = escape.text(subject)
    msg["Date"] = email.utils.format_datetime(opts.date or dt.datetime.now().astimezone())
    msg["Message-ID"] = opts.make_msgid() if opts.make_msgid else email.utils.make_msgid(domain=_domain(opts.sender))
    msg["In-Reply-To"] = f"<{parent}>"
    msg["References"] = " ".join(f"<{r}>" for r in refs)
    msg.set_content(text, charset="utf-8", cte=_cte(text))
    return msg


def _cte(text: str) -> str:
    """7bit or 8bit, unless a line (a quoted hunk line is never wrapped) is longer than SMTP's 998
    octets: then quoted-printable, which may cut it."""
    if any(len(line.encode()) > _MAX_LINE for line in text.splitlines()):
        return "quoted-printable"
    return "7bit" if text.isascii() else "8bit"


def _domain(sender: str) -> str:
    addr = email.utils.parseaddr(sender)[1]
    return addr.rpartition("@")[2] or "localhost"


def as_bytes(msg: EmailMessage) -> bytes:
    return msg.as_bytes(policy=POLICY)


def as_mbox(msgs: list[EmailMessage]) -> bytes:
    """Several messages as one mbox (mboxrd: `From ` lines in bodies get a `>`), for --per-patch."""
    return mbox.write(as_bytes(msg).rstrip(b"\n") + b"\n" for msg in msgs)  # one line end each, as before

