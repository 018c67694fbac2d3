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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import b4
import b4.mbox
import liblore
import requests

from reviewer.errors import FetchError, InputError
from reviewer.model import Cover, DroppedTrailer, FollowupPatch, Patch, Person, Posting, Series, Trailer, address
from reviewer.series import lore, mailnorm, mbox, postings, pullreq, trailers
from reviewer.series.mailmend import EMAIL_ERRORS, LENIENT, POLICY, UNREADABLE, mend
from reviewer.series.patchparse import notes, split_message

Message = email.message.EmailMessage
_PREREQ = re.compile(r"^prerequisite-(?:patch-id|message-id|change-id|base-commit):\s*(\S+)", re.MULTILINE | re.IGNORECASE)


@contextlib.contextmanager
def _b4_quiet(*, debug: bool = False) -> Iterator[None]:
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


def parse_bytes(data: bytes, where: str = "the mail") -> Message:
    """One message, its headers mended (reviewer/series/mailmend.py); WHERE names it in an error."""
    try:
        # The parser itself reads Content-Type: with POLICY, a charset name with a NUL byte in an
        # RFC 2231 parameter would raise before the message could be mended.
        msg = cast(Message, email.parser.BytesParser(policy=LENIENT, _class=Message).parsebytes(data))
    except EMAIL_ERRORS as exc:  # not seen: the parser records defects rather than raise
        raise InputError(f"{where}: cannot be read as a mail ({type(exc).__name__}: {exc})", UNREADABLE) from exc
    except RecursionError as exc:  # the parser recurses once per multipart level (mailmend.MAX_DEPTH)
        raise InputError(f"{where}: its MIME parts are nested too deeply to be read", UNREADABLE) from exc
    mend(msg, where)
    for part in msg.walk():
        part.policy = POLICY
    return msg


def read_mbox(path: Path) -> list[Message]:
    """Messages of an mbox file, a single .eml/.patch mail, or a maildir."""
    if path.is_dir():
        box: mailbox.Mailbox[Any] = mailbox.Maildir(str(path), factory=None, create=False)
    else:
        data = path.read_bytes()
        if not data.startswith(b"From "):
            return [parse_bytes(data, str(path))] if data.strip() else []
        box = mailbox.mbox(str(path), create=False)
    return [parse_bytes(box.get_bytes(key), f"{path}: message {n}") for n, key in enumerate(box.iterkeys(), start=1)]


def ensure_msgids(msgs: list[Message]) -> list[Message]:
    """Mend every message (those from lore and git too), and give those without a usable
    Message-Id (plain format-patch output, a damaged id) a stable synthetic one."""
    for n, msg in enumerate(msgs, start=1):
        mend(msg, f"mail {n} of {len(msgs)}")
        if not b4.LoreMessage.get_clean_msgid(msg):
            digest = hashlib.sha1(msg.as_bytes()).hexdigest()[:20]
            del msg["Message-Id"]
            msg["Message-Id"] = f"<{digest}@reviewer.invalid>"
    return msgs


def _msgid(msg: Message) -> str:
    return b4.LoreMessage.get_clean_msgid(msg) or ""


def _plain_prefixes(msgs: list[Message]) -> dict[str, str]:
    """Rewrite `[net,v2,1/2]` and `[PATCH 1 of 2]` subjects in place for b4; return msgid -> the subject as sent."""
    sent = {}
    for msg in msgs:
        subject = str(msg.get("Subject", ""))
        fixed = postings.plain_prefixes(subject) if "[" in subject else None
        if fixed is not None:
            sent[_msgid(msg)] = subject
            msg.replace_header("Subject", fixed)
    return sent


def _mailbox(msgs: list[Message]) -> b4.LoreMailbox:
    mbx = b4.LoreMailbox()
    for msg in msgs:
        mbx.add_message(msg)
    return mbx


@dataclass(frozen=True)
class _Thread:
    """What the whole input says beyond the revision b4 threads: postings, follow-ups, subjects as sent."""

    lmsgs: dict[str, b4.LoreMessage]
    selection: postings.Selection
    sent: dict[str, str]

    def subject(self, lmsg: b4.LoreMessage) -> str:
        return self.sent.get(lmsg.msgid, lmsg.full_subject)

    def carried(self, lser: b4.LoreSeries) -> dict[str, list[Trailer]]:
        """Reviewed patch msgid -> trailers that replies gave an identical copy of it (same patch-id)
        in a posting not reviewed, such as the original of a RESEND: b4 carries trailers across
        revisions that way, and never saw the other posting."""
        left = self.selection.left_out - {f.mail.msgid for f in self.selection.followups}
        mine = {lm.git_patch_id: lm.msgid for lm in lser.patches[1:] if lm is not None and lm.git_patch_id} if left else {}
        out: dict[str, list[Trailer]] = {}
        for reply in self.lmsgs.values():
            answered = next((r for r in reversed(reply.references) if r in left), None) if reply.reply and reply.trailers else None
            if answered is not None and (pid := self.lmsgs[answered].git_patch_id) in mine:
                good, _mismatched = reply.get_trailers()
                out.setdefault(mine[pid], []).extend(_trailer(t, reply.msgid) for t in good)
        return out


def build_series(msgs: list[Message], source: str, revision: int | None = None, *, debug: bool = False) -> Series:
    """Thread MSGS with b4, pick REVISION (default: newest), convert to a Series.

    Postings b4 would merge (reposts, resends) and follow-up patches are told apart first
    (reviewer/series/postings.py); b4 then sees only the posting reviewed of each revision.
    """
    with _b4_quiet(debug=debug):
        msgs = ensure_msgids(msgs)
        for msg in msgs:
            mailnorm.normalise(msg)
        sent = _plain_prefixes(msgs)
        mbx = _mailbox(msgs)
        selection = postings.select(_record(lmsg) for lmsg in mbx.msgid_map.values())
        thread = _Thread(dict(mbx.msgid_map), selection, sent)
        if selection.left_out:
            mbx = _mailbox([m for m in msgs if _msgid(m) not in selection.left_out])
        revisions = tuple(sorted(mbx.series))
        if not revisions:
            pull = _pull_request(thread, source)
            if pull is not None:
                return pull
            raise InputError(f"{source}: no patches found", "give an mbox, a format-patch directory or a git range that holds patches")
        if revision is not None and revision not in revisions:
            have = ", ".join(f"v{r}" for r in revisions)
            raise InputError(f"{source}: there is no v{revision} of this series (found {have})",
                             "pick one of the revisions found with --revision")
        lser = mbx.get_series(revision, codereview_trailers=False)
        if lser is None:
            raise InputError(f"{source}: every patch of the series is missing", "fetch the whole thread")
        return _convert(lser, revisions, source, thread)


def _record(lmsg: b4.LoreMessage) -> postings.Mail:
    ls = lmsg.lsubject
    if lmsg.reply:
        kind = postings.Kind.OTHER
    elif lmsg.counter == 0 and (not lmsg.counters_inferred or lmsg.has_diffstat):
        kind = postings.Kind.COVER
    else:
        kind = postings.Kind.PATCH if lmsg.has_diff else postings.Kind.OTHER
    return postings.Mail(lmsg.msgid, tuple(lmsg.references), lmsg.fromemail.lower(), lmsg.date, lmsg.subject, kind,
                         ls.revision, ls.revision_inferred, lmsg.counter, lmsg.expected, lmsg.counters_inferred, ls.resend)


@dataclass(frozen=True)
class MailFacts:
    """What the bot's series assembly needs of one message, read by b4 as `b4 am` reads it."""

    mail: postings.Mail
    change_id: str | None  # a cover letter's (or first patch's) `change-id:` line, as b4 reads it
    patch_id: str | None  # `git patch-id --stable` of the diff, None for a mail without one
    rfc: bool


_CHANGE_ID = re.compile(r"^change-id:\s+(\S+)", re.MULTILINE | re.IGNORECASE)  # b4's LoreSeries.add_patch reads it so


def mail_facts(data: bytes, where: str = "the mail") -> MailFacts:
    """DATA (one message as an archive holds it) as assembly reads it; InputError when it is no mail."""
    msg = parse_bytes(data, where)
    with _b4_quiet():
        ensure_msgids([msg])
        mailnorm.normalise(msg)
        _plain_prefixes([msg])
        lmsg = b4.LoreMessage(msg)
        found = _CHANGE_ID.search(lmsg.body) if lmsg.counter < 2 and not lmsg.reply else None
        patch_id = lmsg.git_patch_id if lmsg.has_diff and not lmsg.reply else None
        return MailFacts(_record(lmsg), found.group(1) if found else None, patch_id, bool(lmsg.lsubject.rfc))


def _pull_request(thread: _Thread, source: str) -> Series | None:
    """A thread with no patches whose first mail that is not a reply is a `git request-pull`."""
    for lmsg in sorted(thread.lmsgs.values(), key=lambda m: m.date):
        pull = None if lmsg.reply else pullreq.parse(lmsg.body)
        if pull is not None:
            # The request itself stands where a cover letter would: replies thread below it.
            return Series(subject=lmsg.subject, version=lmsg.revision, msgid=lmsg.msgid, author=Person(lmsg.fromname, lmsg.fromemail),
                          date=lmsg.date, total=0, patches=(), cover=_cover(lmsg, thread), source=source, pull_request=pull,
                          base_commit=pull.base)
    return None


def _convert(lser: b4.LoreSeries, revisions: tuple[int, ...], source: str, thread: _Thread) -> Series:
    total = max(lser.expected, len(lser.patches) - 1)
    carried = thread.carried(lser)
    patches, missing = [], []
    for index, lmsg in enumerate(lser.patches[1:], start=1):
        if lmsg is None:
            missing.append(index)
        else:
            patches.append(_patch(lmsg, index, total, lser.revision, thread, carried.get(lmsg.msgid, [])))
    cover_msg = lser.patches[0] if lser.has_cover else None
    cover = _cover(cover_msg, thread) if cover_msg is not None else None
    first = cover_msg or next(p for p in lser.patches[1:] if p is not None)
    body = cover.body if cover else patches[0].message + patches[0].diff if patches else ""
    reviewed = {lm.msgid for lm in lser.patches if lm is not None}
    pull = pullreq.parse(first.body)
    return Series(
        subject=lser.subject or first.subject,
        version=lser.revision,
        msgid=first.msgid,
        # The cover letter's sender posted the series; without one, the first patch's author wrote it.
        author=cover.author if cover else patches[0].author if patches else Person(first.fromname, first.fromemail),
        date=first.date,
        total=total,
        patches=tuple(patches),
        cover=cover,
        missing=tuple(missing),
        base_commit=lser.base_commit or (pull.base if pull else None),
        change_id=lser.change_id,
        prerequisites=tuple(_PREREQ.findall(body)),
        revisions=revisions,
        source=source,
        postings=_postings(thread, reviewed),
        followup_patches=_followup_patches(thread, reviewed),
        pull_request=pull,
        dropped_trailers=tuple(DroppedTrailer(n, v, Person(fn, fe)) for n, v, fn, fe in sorted(lser.trailer_mismatches)),
        rfc=any(lm.lsubject.rfc for lm in lser.patches if lm is not None),
    )


def _postings(thread: _Thread, reviewed: set[str]) -> tuple[Posting, ...]:
    out = []
    for p in thread.selection.postings:
        root = thread.lmsgs[p.root.msgid]
        out.append(Posting(root.msgid, thread.subject(root), Person(root.fromname, root.fromemail), root.date, p.revision,
                           p.expected, tuple(sorted(n for n in p.slots if n)), root.msgid in reviewed,
                           tuple(m.msgid for m in p.replaced)))
    return tuple(out)


def _followup_patches(thread: _Thread, reviewed: set[str]) -> tuple[FollowupPatch, ...]:
    """Follow-up patches answering a mail of the reviewed posting (or a copy it replaced)."""
    counters: dict[str, int] = {}
    for p in thread.selection.postings:
        if p.root.msgid in reviewed:
            counters |= {m.msgid: (0 if n == 0 else m.counter) for n, m in p.slots.items()}
            counters |= {m.msgid: m.counter if m.kind is postings.Kind.PATCH else 0 for m in p.replaced}
    out = []
    for f in thread.selection.followups:
        if f.of in counters:
            lmsg = thread.lmsgs[f.mail.msgid]
            author = trailers.in_body_headers(lmsg.body).author or Person(lmsg.fromname, lmsg.fromemail)
            out.append(FollowupPatch(lmsg.msgid, thread.subject(lmsg), author, lmsg.date, counters[f.of]))
    return tuple(out)


def _patch(lmsg: b4.LoreMessage, index: int, total: int, revision: int, thread: _Thread, carried: list[Trailer]) -> Patch:
    message, diff = split_message(lmsg.body)
    inbody = trailers.in_body_headers(message)
    message = trailers.without_in_body_headers(message)
    sender = Person(lmsg.fromname, lmsg.fromemail)
    author = inbody.author or sender
    note = None
    if "\ufffd" in lmsg.body and not lmsg.msg.get_content_charset():
        note = "the mail has bytes that are not UTF-8 and declares no charset"
    own = trailers.trailer_block(message)
    reroll = lmsg.reroll_from_revision if lmsg.reroll_from_revision not in (None, revision) else None
    return Patch(
        index=index,
        total=total,
        subject=_in_body_subject(inbody.subject) or lmsg.subject,
        msgid=lmsg.msgid,
        author=author,
        date=lmsg.date,
        message=message,
        diff=diff,
        trailers=own + _followups(lmsg, own, carried),
        encoding_note=note,
        to=_addresses(lmsg.msg, "To"),
        cc=_addresses(lmsg.msg, "Cc"),
        notes=notes(lmsg.body),
        attestation=_attestation(lmsg),
        mail_subject=thread.subject(lmsg),
        references=_references(lmsg),
        sender=sender if author.email.lower() != sender.email.lower() else None,
        carried_from=reroll,
    )


def _in_body_subject(subject: str | None) -> str | None:
    """An in-body Subject: overrides the mail's (git mailinfo), its [PATCH] prefixes dropped."""
    return b4.LoreSubject(subject).subject if subject else None


def _attestation(lmsg: b4.LoreMessage) -> tuple[str, ...]:
    """b4's verdict on the message's patatt signatures (and DKIM, which needs the network):
    one "<status> <identity>" per attestor, status signed | badsig | nokey."""
    try:
        found, _passing, _critical = lmsg.get_attestation_status("softfail")
    except (ValueError, OSError, KeyError, RuntimeError) as exc:  # a malformed signature header (patatt: RuntimeError)
        return (f"badsig unreadable signature ({exc})",)
    return tuple(f"{a['status']} {a['identity']}" + (f" (From: {a['mismatch']})" if a.get("mismatch") else "") for a in found)


def _cover(lmsg: b4.LoreMessage, thread: _Thread) -> Cover:
    return Cover(
        subject=lmsg.subject,
        msgid=lmsg.msgid,
        author=Person(lmsg.fromname, lmsg.fromemail),
        body=lmsg.body.replace("\r\n", "\n"),
        trailers=_followups(lmsg, ()),
        to=_addresses(lmsg.msg, "To"),
        cc=_addresses(lmsg.msg, "Cc"),
        mail_subject=thread.subject(lmsg),
        references=_references(lmsg),
    )


def _references(lmsg: b4.LoreMessage) -> tuple[str, ...]:
    return tuple(r for r in lmsg.references if r != lmsg.msgid)


def _addresses(msg: Message, header: str) -> tuple[str, ...]:
    """`Name <addr>` strings of HEADER (every occurrence), for a reply-all."""
    pairs = email.utils.getaddresses([str(v) for v in msg.get_all(header, [])])
    return tuple(address(n, a) for n, a in pairs if "@" in a)


def _followups(lmsg: b4.LoreMessage, own: tuple[Trailer, ...], carried: list[Trailer] | None = None) -> tuple[Trailer, ...]:
    """The trailers replies gave LMSG (and CARRIED ones), each once, without those its own trailer block has.

    b4 appends a reply's trailers to the (shared) message each time a revision is threaded,
    e.g. once for v1 and again for a partial v2 reroll that reuses v1's patches: keep one.
    """
    have = {_trailer_key(t) for t in own}
    out: dict[tuple[str, str], Trailer] = {}
    given = [_trailer(t, t.lmsg.msgid if t.lmsg is not None else None) for t in lmsg.followup_trailers]
    for t in [*given, *(carried or ())]:
        key = _trailer_key(t)
        if key not in have and key not in out:
            out[key] = t
    return tuple(out.values())


def _trailer(t: b4.LoreTrailer, msgid: str | None) -> Trailer:
    return Trailer(t.name, t.value, "followup", msgid, comment=(t.extinfo or "").strip())


def _trailer_key(t: Trailer) -> tuple[str, str]:
    return t.name.lower(), " ".join(t.value.split()).lower()


# --- lore threads (the HTTP itself is reviewer/series/lore.py's) ------------------------------

_ANY_OLDER = list(range(1, 1000))  # get_extra_series(direction=-1) wants the revisions to keep


def split_thread(data: bytes) -> list[Message]:
    """A public-inbox thread mbox (mboxrd) -> messages, deduplicated as b4 does."""
    with _b4_quiet():
        return list(b4.split_and_dedupe_pi_results(data))


def to_mbox(msgs: list[Message]) -> bytes:
    """Messages -> mboxrd bytes that split_thread reads back unchanged (for the cache)."""
    # One line end each: liblore gives a message back with the blank line that ended it, and a
    # message read back and written again must not grow by it.
    return mbox.write(msg.as_bytes(policy=liblore.emlpolicy).rstrip(b"\n") + b"\n" for msg in msgs)


def with_other_revisions(msgs: list[Message], url: str, session: lore.Session, timeout: float) -> list[Message]:
    """MSGS plus the newer and older revisions b4 finds by searching URL (change-id, or subject + author).

    A failed search is not fatal: the thread itself is what the user asked for.
    Raises FetchError only to say the search failed, with MSGS' revisions still usable.
    Every request b4 makes goes through SESSION, and the whole search ends within its deadline.
    """
    node = liblore.LoreNode(url.rstrip("/"), cache_dir=None, request_timeout=(timeout, timeout))
    node.set_requests_session(session)
    saved = b4.LORENODE
    b4.LORENODE = node
    try:
        with _b4_quiet(), session.budget() as watch:
            found = b4.mbox.get_extra_series(list(msgs), direction=1, nocache=True)
            found = b4.mbox.get_extra_series(found, direction=-1, wantvers=_ANY_OLDER, nocache=True)
    except (liblore.LibloreError, requests.RequestException, OSError, EOFError, zlib.error, InputError) as exc:
        raise FetchError(f"{url}: the search for other revisions failed: {exc}") from exc
    finally:
        b4.LORENODE = saved
    if watch.expired():  # b4 logs a failed search and goes on: say that it was cut short
        raise FetchError(f"{url}: the search for other revisions did not end within the {watch.seconds:g} s deadline "
                         "(REVIEWER_LORE_DEADLINE)")
    return list(found)
