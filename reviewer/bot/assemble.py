"""A list's messages grouped into series as b4 groups them, and when each series is ready to review.

Postings (a cover letter 0/N or a first patch with the patches threaded below it, or sent unthreaded
beside it) are told apart by reviewer/series/postings.py, as for `review MSGID`. Then, per posting:

- ready when all N patches are there; or, once SETTLE seconds passed after its last part arrived,
  ready as *incomplete* (reviewed statically only, never mailed);
- its identity is b4's change-id (the `change-id:` line of the cover letter or first patch) when it
  has one, else the list, the sender's address and the subject without its [PATCH ...] prefixes;
  its revision is the vN of its subjects;
- a RESEND of a revision already posted, or a posting whose patches have the same `git patch-id
  --stable` as an earlier posting of the same identity, is a duplicate of that one (its results are
  reused, nothing new is sent);
- a higher revision of an identity supersedes the newest lower one that is not a duplicate.

Everything here is a pure function of the messages and NOW: tests pass the time in.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from reviewer.bot.feed import RawMail
from reviewer.errors import InputError
from reviewer.series import postings
from reviewer.series.fetch import MailFacts, mail_facts

log = logging.getLogger(__name__)


class Readiness(StrEnum):
    WAITING = "waiting"  # parts missing, settle time not over
    READY = "ready"  # all N parts there
    INCOMPLETE = "incomplete"  # parts missing after the settle time: static review only, no mail


@dataclass(frozen=True)
class Seen:
    """A message of LIST as the bot read it, at SEEN_AT (seconds, the bot's clock)."""

    facts: MailFacts
    list: str
    seen_at: float
    epoch: int = 0
    commit: str = ""

    @property
    def msgid(self) -> str:
        return self.facts.mail.msgid


@dataclass(frozen=True)
class Assembled:
    key: str  # LIST/ROOT: one posting of one list
    list: str
    identity: str
    revision: int
    root: str  # the msgid of the cover letter (or first patch)
    subject: str
    sender: str
    expected: int
    parts: tuple[str, ...]  # msgids, the cover letter (if any) first, then by patch number
    missing: tuple[int, ...]
    rfc: bool
    resend: bool
    patch_ids: tuple[str, ...]  # by patch number, "" where missing or without a diff
    last_part_at: float
    state: Readiness
    duplicate_of: str | None = None  # the key of the earlier posting whose results this one reuses
    supersedes: str | None = None  # the key of the older revision this one replaces


def read(listname: str, mails: Iterable[RawMail], at: float) -> list[Seen]:
    """MAILS (from LISTNAME's feed, read AT) as assembly reads them; one that is no mail is skipped with a warning."""
    out = []
    for m in mails:
        try:
            out.append(Seen(mail_facts(m.data, f"{listname}: epoch {m.epoch} commit {m.commit}"), listname, at, m.epoch, m.commit))
        except InputError as exc:
            log.warning("%s; skipped", exc.message)
    return out


def assemble(seen: Iterable[Seen], now: float, settle: float) -> list[Assembled]:
    """The series of SEEN (one list's messages, in the order the feed read them), oldest posting first (by
    its first message read), each with its readiness at NOW."""
    by_id: dict[str, Seen] = {}
    for s in seen:
        by_id.setdefault(s.msgid, s)
    order = {msgid: n for n, msgid in enumerate(by_id)}
    selection = postings.select(s.facts.mail for s in by_id.values())
    shaped = [_shape(p, by_id, now, settle) for p in selection.postings]
    shaped.sort(key=lambda a: min(order[m] for m in a.parts))
    return _relate(shaped)


def _shape(p: postings.PostingMails, by_id: dict[str, Seen], now: float, settle: float) -> Assembled:
    facts = {n: by_id[m.msgid].facts for n, m in p.slots.items()}
    head = facts.get(0) or facts[min(facts)]
    listname = by_id[p.root.msgid].list
    missing = tuple(n for n in range(1, p.expected + 1) if n not in p.slots)
    last = max(by_id[m.msgid].seen_at for m in p.slots.values())
    state = Readiness.READY if not missing else Readiness.INCOMPLETE if now - last >= settle else Readiness.WAITING
    change_id = next((f.change_id for _, f in sorted(facts.items()) if f.change_id), None)
    return Assembled(
        key=f"{listname}/{p.root.msgid}", list=listname, identity=identity(listname, head.mail.sender, head.mail.subject, change_id),
        revision=p.revision, root=p.root.msgid, subject=head.mail.subject, sender=head.mail.sender, expected=p.expected,
        parts=tuple(facts[n].mail.msgid for n in sorted(facts)), missing=missing, rfc=any(f.rfc for f in facts.values()),
        resend=any(f.mail.resend for f in facts.values()),
        patch_ids=tuple((facts[n].patch_id or "") if n in facts else "" for n in range(1, p.expected + 1)),
        last_part_at=last, state=state)


def identity(listname: str, sender: str, subject: str, change_id: str | None) -> str:
    """What stays the same across a series' revisions and reposts."""
    if change_id:
        return f"change-id:{change_id}"
    return f"{listname}|{sender.lower()}|{' '.join(subject.split()).casefold()}"


def _relate(series: Sequence[Assembled]) -> list[Assembled]:
    """Mark duplicates and supersessions, each posting against the earlier ones (SERIES: oldest first)."""
    out: list[Assembled] = []
    for s in series:
        earlier = [e for e in out if e.identity == s.identity and e.duplicate_of is None]
        same = next((e for e in reversed(earlier) if _same(s, e)), None)
        if same is not None:
            out.append(replace(s, duplicate_of=same.key))
            continue
        older = [e for e in earlier if e.revision < s.revision]
        out.append(replace(s, supersedes=max(older, key=lambda e: e.revision).key) if older else s)
    return out


def _same(s: Assembled, e: Assembled) -> bool:
    """S repeats E: a RESEND of E's revision, or the same patches (all known, same patch-ids)."""
    if s.resend and s.revision == e.revision:
        return True
    return not s.missing and "" not in s.patch_ids and s.patch_ids == e.patch_ids

