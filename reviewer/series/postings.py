"""Which mails of a thread are the series: postings, reposts and follow-up patches.

A lore thread often holds one revision posted more than once (an unlabeled repost, a
`[RESEND PATCH]`, the same patch sent three times) and patches that are not part of the
series (an unnumbered `[PATCH]` fixup sent in reply to one of its patches). Handing all of
them to b4 merges them into an impossible series ("patch 4/2"), so they are told apart here,
before b4 threads the revisions, the way a reader of the thread tells them apart:

- a posting is a cover letter or a first patch with the patches threaded below it (shallow
  or deep threading) by the same sender, plus patches of the same sender, revision and size
  that were sent unthreaded and fill an empty slot of it;
- within a posting a later copy of a patch replaces an earlier one;
- of the postings of one revision the newest complete one is reviewed (else the newest);
- an unnumbered, unversioned patch sent in reply to a patch of another subject is a
  follow-up patch of that patch, not part of any posting.

This module works on plain records (no b4 objects): reviewer/series/fetch.py makes them.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum


class Kind(StrEnum):
    COVER = "cover"
    PATCH = "patch"
    OTHER = "other"  # a reply, a pull request, a mail without a diff


@dataclass(frozen=True)
class Mail:
    msgid: str
    references: tuple[str, ...]  # oldest first, In-Reply-To last
    sender: str  # the From: address, lower case
    date: dt.datetime
    subject: str  # without the [PATCH ...] prefixes
    kind: Kind
    revision: int = 1
    revision_inferred: bool = True
    counter: int = 1
    expected: int = 1
    counters_inferred: bool = True
    resend: bool = False


@dataclass
class PostingMails:
    root: Mail
    slots: dict[int, Mail] = field(default_factory=dict)  # counter -> the patch (0: the cover letter)
    replaced: list[Mail] = field(default_factory=list)  # earlier copies of a slot

    @property
    def revision(self) -> int:
        return self.root.revision

    @property
    def expected(self) -> int:
        return max((m.expected for m in self.slots.values()), default=1)

    @property
    def complete(self) -> bool:
        return all(n in self.slots for n in range(1, self.expected + 1))

    @property
    def members(self) -> list[Mail]:
        return [*self.slots.values(), *self.replaced]


@dataclass(frozen=True)
class Followup:
    mail: Mail
    of: str  # the msgid of the patch (or cover letter) it answers


@dataclass(frozen=True)
class Selection:
    postings: tuple[PostingMails, ...]  # every posting, oldest first
    chosen: frozenset[str]  # root msgids of the postings reviewed (one per revision)
    followups: tuple[Followup, ...]

    @property
    def left_out(self) -> set[str]:
        """Msgids b4 must not see: the postings not reviewed, replaced copies, follow-up patches."""
        out = {f.mail.msgid for f in self.followups}
        for p in self.postings:
            if p.root.msgid not in self.chosen:
                out |= {m.msgid for m in p.members}
            else:
                out |= {m.msgid for m in p.replaced}
        return out


def select(mails: Iterable[Mail]) -> Selection:
    """Split MAILS into postings and follow-up patches; choose a posting per revision."""
    by_id = {m.msgid: m for m in mails}
    patchlike = [m for m in by_id.values() if m.kind is not Kind.OTHER]
    followups = _followups(patchlike)
    skip = {f.mail.msgid for f in followups}
    members = {m.msgid: m for m in patchlike if m.msgid not in skip}
    postings = _postings(members)
    return Selection(tuple(postings), _choose(postings), tuple(followups))


def _parent(mail: Mail, among: dict[str, Mail]) -> Mail | None:
    """The nearest message MAIL answers that is in AMONG."""
    for ref in reversed(mail.references):
        if ref != mail.msgid and ref in among:
            return among[ref]
    return None


def _followups(patchlike: list[Mail]) -> list[Followup]:
    """Unnumbered, unversioned patches in reply to a patch of another subject (through replies too)."""
    found = []
    known = {m.msgid: m for m in patchlike}
    for mail in patchlike:
        if mail.kind is not Kind.PATCH or not (mail.counters_inferred and mail.revision_inferred):
            continue
        answered = _parent(mail, known)
        if answered is not None and _norm(answered.subject) != _norm(mail.subject):
            found.append(Followup(mail, answered.msgid))
    return found


def _norm(subject: str) -> str:
    return " ".join(subject.split()).casefold()


def _revision(mail: Mail, members: dict[str, Mail]) -> int:
    """An unversioned patch below a cover letter (or first patch) of the same sender takes its revision."""
    seen = {mail.msgid}
    while mail.revision_inferred:
        parent = _parent(mail, members)
        if parent is None or parent.msgid in seen or not _linked(parent, mail) or not (
                parent.kind is Kind.COVER or parent.counter == 1):
            break
        seen.add(parent.msgid)
        mail = parent
    return mail.revision


def _postings(members: dict[str, Mail]) -> list[PostingMails]:
    revision = {m.msgid: _revision(m, members) for m in members.values()}
    groups: dict[str, list[Mail]] = {}
    for mail in members.values():
        groups.setdefault(_thread_root(mail, members, revision).msgid, []).append(mail)
    postings: list[PostingMails] = []
    lone: list[Mail] = []
    for root_id, mails in groups.items():
        root = members[root_id]
        if len(mails) == 1 and root.kind is Kind.PATCH:
            lone.append(root)  # sent unthreaded: placed below, into the posting it belongs to
            continue
        posting = PostingMails(_as_root(root, revision[root_id]))
        for mail in sorted(mails, key=_by_date):
            _place(posting, mail)
        postings.append(posting)
    for mail in sorted(lone, key=_by_date):
        home = _unthreaded_home(mail, postings, revision)
        if home is None:
            home = PostingMails(_as_root(mail, revision[mail.msgid]))
            postings.append(home)
        _place(home, mail)
    return sorted(postings, key=lambda p: _by_date(p.root))


def _by_date(mail: Mail) -> tuple[dt.datetime, int]:
    return mail.date, 0 if mail.kind is Kind.COVER else mail.counter


def _as_root(mail: Mail, revision: int) -> Mail:
    return mail if mail.revision == revision else replace(mail, revision=revision)


def _linked(parent: Mail, mail: Mail) -> bool:
    """MAIL, sent in reply to PARENT, belongs to PARENT's posting: the same sender, or a numbered
    patch of the same size (`git format-patch` writes each patch From: its author, the cover
    letter From: whoever runs it)."""
    return parent.sender == mail.sender or (not mail.counters_inferred and parent.expected == mail.expected)


def _thread_root(mail: Mail, members: dict[str, Mail], revision: dict[str, int]) -> Mail:
    """The top of the chain of patches MAIL was sent below by its sender, in one revision."""
    seen = {mail.msgid}
    while True:
        parent = _parent(mail, members)
        if parent is None or parent.msgid in seen or not _linked(parent, mail) or revision[parent.msgid] != revision[mail.msgid]:
            return mail
        seen.add(parent.msgid)
        mail = parent


def _unthreaded_home(mail: Mail, postings: Iterable[PostingMails], revision: dict[str, int]) -> PostingMails | None:
    """The posting of the same sender, revision and size, with MAIL's slot free, nearest in time.

    Nearest, not only earlier: `git format-patch` dates a cover letter now and the patches
    with their commits' author dates, so an unthreaded cover letter may be the newest mail."""
    fits = [p for p in postings if p.root.sender == mail.sender and p.revision == revision[mail.msgid]
            and p.expected == mail.expected and mail.counter not in p.slots]
    return min(fits, key=lambda p: abs((p.root.date - mail.date).total_seconds()), default=None)


def _place(posting: PostingMails, mail: Mail) -> None:
    slot = 0 if mail.kind is Kind.COVER else mail.counter
    old = posting.slots.get(slot)
    if old is not None:
        posting.replaced.append(old)
    posting.slots[slot] = mail


def _choose(postings: list[PostingMails]) -> frozenset[str]:
    """Per revision, the newest complete posting, else the newest."""
    best: dict[int, PostingMails] = {}
    for p in postings:  # oldest first: a later one of the same standing wins
        have = best.get(p.revision)
        if have is None or p.complete or not have.complete:
            best[p.revision] = p
    return frozenset(p.root.msgid for p in best.values())


_LEADING = re.compile(r"^(\s*(?:\[[^\]]*\]\s*)+)")
_OF = re.compile(r"\b(\d{1,4}) of (\d{1,4})\b")


def plain_prefixes(subject: str) -> str | None:
    """SUBJECT with its [...] prefixes in the form b4 reads, or None when it is already.

    Patchwork and some tools separate prefixes with commas (`[net,v2,1/2]`, as Patchwork's own
    parser splits them); Mercurial's patchbomb numbers `[PATCH 1 of 2]`. b4 splits on spaces
    and reads only `N/M`, so both are rewritten: `[net v2 1/2]`, `[PATCH 1/2]`.
    """
    m = _LEADING.match(subject)
    if m is None:
        return None
    head = m.group(1)
    fixed = re.sub(r"\[([^\]]*)\]", lambda b: "[" + _OF.sub(r"\1/\2", " ".join(re.split(r"[\s,;]+", b.group(1).strip()))) + "]", head)
    return None if fixed == head else fixed + subject[len(head):]
