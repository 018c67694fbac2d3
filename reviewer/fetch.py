"""Local inputs and lore threads -> Series. The ONLY module that imports b4.

b4's Python API is not stable (we pin b4==0.16.0): every call into it lives here, its
objects are converted to our frozen dataclasses before they leave, and its `sys.exit`
calls become our errors.
"""
from __future__ import annotations

import contextlib
import email.message
import email.parser
import email.policy
import email.utils
import hashlib
import logging
import mailbox
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import b4
import b4.mbox
import liblore
import requests

from reviewer.errors import FetchError, InputError
from reviewer.model import Cover, Patch, Person, Series, Trailer
from reviewer.patchparse import notes, split_message

Message = email.message.EmailMessage
_POLICY = email.policy.EmailPolicy(utf8=True, linesep="\n")
_PREREQ = re.compile(r"^prerequisite-(?:patch-id|message-id|change-id|base-commit):\s*(\S+)", re.MULTILINE | re.IGNORECASE)


@contextlib.contextmanager
def _b4_quiet(debug: bool = False) -> Iterator[None]:
    """Keep b4 off the network and quiet, and turn its sys.exit into InputError."""
    logger = logging.getLogger("b4")
    saved = (b4.can_network, logger.level, logger.propagate)
    b4.can_network = False
    if not b4.get_main_config():  # b4's defaults and the user's b4.* git config (attestation policy, keyrings)
        b4._setup_main_config()
    logger.setLevel(logging.DEBUG if debug else logging.CRITICAL + 1)
    logger.propagate = debug
    try:
        yield
    except SystemExit as exc:
        raise InputError(f"b4 gave up reading the series (exit {exc.code})", "run with --debug to see b4's log") from exc
    finally:
        b4.can_network, _, logger.propagate = saved[0], None, saved[2]
        logger.setLevel(saved[1])


def parse_bytes(data: bytes) -> Message:
    msg: Message = email.parser.BytesParser(policy=_POLICY, _class=Message).parsebytes(data)
    return msg


def read_mbox(path: Path) -> list[Message]:
    """Messages of an mbox file, a single .eml/.patch mail, or a maildir."""
    if path.is_dir():
        box: mailbox.Mailbox[Any] = mailbox.Maildir(str(path), factory=None, create=False)
    else:
        data = path.read_bytes()
        if not data.startswith(b"From "):
            return [parse_bytes(data)] if data.strip() else []
        box = mailbox.mbox(str(path), create=False)
    return [parse_bytes(box.get_bytes(key)) for key in box.iterkeys()]


def ensure_msgids(msgs: list[Message]) -> list[Message]:
    """Give messages without a Message-Id (plain format-patch output) a stable synthetic one."""
    for msg in msgs:
        if not msg.get("Message-Id"):
            digest = hashlib.sha1(msg.as_bytes()).hexdigest()[:20]
            msg["Message-Id"] = f"<{digest}@reviewer.invalid>"
    return msgs


def build_series(msgs: list[Message], source: str, revision: int | None = None, debug: bool = False) -> Series:
    """Thread MSGS with b4, pick REVISION (default: newest), convert to a Series."""
    with _b4_quiet(debug):
        mbx = b4.LoreMailbox()
        for msg in ensure_msgids(msgs):
            mbx.add_message(msg)
        revisions = tuple(sorted(mbx.series))
        if not revisions:
            raise InputError(f"{source}: no patches found", "give an mbox, a format-patch directory or a git range that holds patches")
        if revision is not None and revision not in revisions:
            have = ", ".join(f"v{r}" for r in revisions)
            raise InputError(f"{source}: there is no v{revision} of this series (found {have})", "pick one of the revisions found with --revision")
        lser = mbx.get_series(revision, codereview_trailers=False)
        if lser is None:
            raise InputError(f"{source}: every patch of the series is missing", "fetch the whole thread")
        return _convert(lser, revisions, source)


def _convert(lser: b4.LoreSeries, revisions: tuple[int, ...], source: str) -> Series:
    patches, missing = [], []
    for index, lmsg in enumerate(lser.patches[1:], start=1):
        if lmsg is None:
            missing.append(index)
        else:
            patches.append(_patch(lmsg, index, lser.expected))
    cover_msg = lser.patches[0] if lser.has_cover else None
    cover = _cover(cover_msg) if cover_msg is not None else None
    first = cover_msg or next(p for p in lser.patches[1:] if p is not None)
    body = cover.body if cover else patches[0].message + patches[0].diff if patches else ""
    return Series(
        subject=lser.subject or first.subject,
        version=lser.revision,
        msgid=first.msgid,
        author=Person(lser.fromname or first.fromname, lser.fromemail or first.fromemail),
        date=first.date,
        total=lser.expected,
        patches=tuple(patches),
        cover=cover,
        missing=tuple(missing),
        base_commit=lser.base_commit,
        change_id=lser.change_id,
        prerequisites=tuple(_PREREQ.findall(body)),
        revisions=revisions,
        source=source,
    )


def _patch(lmsg: b4.LoreMessage, index: int, total: int) -> Patch:
    message, diff = split_message(lmsg.body)
    note = None
    if "\ufffd" in lmsg.body and not lmsg.msg.get_content_charset():
        note = "the mail has bytes that are not UTF-8 and declares no charset"
    return Patch(
        index=index,
        total=total,
        subject=lmsg.subject,
        msgid=lmsg.msgid,
        author=Person(lmsg.fromname, lmsg.fromemail),
        date=lmsg.date,
        message=message,
        diff=diff,
        trailers=_own_trailers(message) + _followups(lmsg),
        encoding_note=note,
        to=_addresses(lmsg.msg, "To"),
        cc=_addresses(lmsg.msg, "Cc"),
        notes=notes(lmsg.body),
        attestation=_attestation(lmsg),
        mail_subject=lmsg.full_subject,
        references=_references(lmsg),
    )


def _attestation(lmsg: b4.LoreMessage) -> tuple[str, ...]:
    """b4's verdict on the message's patatt signatures (and DKIM, which needs the network):
    one "<status> <identity>" per attestor, status signed | badsig | nokey."""
    try:
        found, _passing, _critical = lmsg.get_attestation_status("softfail")
    except (ValueError, OSError, KeyError) as exc:  # a malformed signature header
        return (f"badsig unreadable signature ({exc})",)
    return tuple(f"{a['status']} {a['identity']}" + (f" (From: {a['mismatch']})" if a.get("mismatch") else "") for a in found)


def _cover(lmsg: b4.LoreMessage) -> Cover:
    return Cover(
        subject=lmsg.subject,
        msgid=lmsg.msgid,
        author=Person(lmsg.fromname, lmsg.fromemail),
        body=lmsg.body.replace("\r\n", "\n"),
        trailers=_followups(lmsg),
        to=_addresses(lmsg.msg, "To"),
        cc=_addresses(lmsg.msg, "Cc"),
        mail_subject=lmsg.full_subject,
        references=_references(lmsg),
    )


def _references(lmsg: b4.LoreMessage) -> tuple[str, ...]:
    return tuple(r for r in lmsg.references if r != lmsg.msgid)


def _addresses(msg: Message, header: str) -> tuple[str, ...]:
    """`Name <addr>` strings of HEADER (every occurrence), for a reply-all."""
    pairs = email.utils.getaddresses([str(v) for v in msg.get_all(header, [])])
    return tuple(email.utils.formataddr((n, a)) if n.isascii() else f"{n} <{a}>" for n, a in pairs if "@" in a)


def _own_trailers(message: str) -> tuple[Trailer, ...]:
    found, _ = b4.LoreMessage.find_trailers(message)
    return tuple(Trailer(t.name, t.value, "patch") for t in found)


def _followups(lmsg: b4.LoreMessage) -> tuple[Trailer, ...]:
    # b4 appends a reply's trailers to the (shared) message each time a revision is threaded,
    # e.g. once for v1 and again for a partial v2 reroll that reuses v1's patches: keep one.
    return tuple(dict.fromkeys(
        Trailer(t.name, t.value, "followup", t.lmsg.msgid if t.lmsg is not None else None)
        for t in lmsg.followup_trailers
    ))


# --- lore threads (the HTTP itself is reviewer/lore.py's) ------------------------------

_ANY_OLDER = list(range(1, 1000))  # get_extra_series(direction=-1) wants the revisions to keep


def split_thread(data: bytes) -> list[Message]:
    """A public-inbox thread mbox (mboxrd) -> messages, deduplicated as b4 does."""
    with _b4_quiet():
        return list(b4.split_and_dedupe_pi_results(data))


def to_mbox(msgs: list[Message]) -> bytes:
    """Messages -> mboxrd bytes that split_thread reads back unchanged (for the cache)."""
    out = []
    for msg in msgs:
        raw = re.sub(rb"(?m)^(>*From )", rb">\1", msg.as_bytes(policy=liblore.emlpolicy))
        out.append(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + raw.rstrip(b"\n") + b"\n\n")
    return b"".join(out)


def with_other_revisions(msgs: list[Message], url: str, session: requests.Session, timeout: float) -> list[Message]:
    """MSGS plus the newer and older revisions b4 finds by searching URL (change-id, or subject + author).

    A failed search is not fatal: the thread itself is what the user asked for.
    Raises FetchError only to say the search failed, with MSGS' revisions still usable.
    """
    node = liblore.LoreNode(url.rstrip("/"), cache_dir=None, request_timeout=(timeout, timeout))
    node.set_requests_session(session)
    saved = b4.LORENODE
    b4.LORENODE = node
    try:
        with _b4_quiet():
            found = b4.mbox.get_extra_series(list(msgs), direction=1, nocache=True)
            return list(b4.mbox.get_extra_series(found, direction=-1, wantvers=_ANY_OLDER, nocache=True))
    except (liblore.LibloreError, requests.RequestException, OSError, EOFError, zlib.error, InputError) as exc:
        raise FetchError(f"{url}: the search for other revisions failed: {exc}") from exc
    finally:
        b4.LORENODE = saved
