"""Commands to the bot in replies to a series, and who may give them.

A command is a line of a reply's plain text that starts with `reviewer-bot:` in its first column (any
case; a quoted `>` line, an indented one, or one below an `-----Original Message-----` line is someone
else's words and never a command), as `pw-bot:` and `#syz` work:

    reviewer-bot: stop             no more mail about this series
    reviewer-bot: stop author      no more mail about any series of this series' author
    reviewer-bot: rerun STAGE      run STAGE (static | apply | build | guest) of this series again

It counts only from the series' author or from a maintainer of the files the series touches (the `M:`
addresses of the MAINTAINERS entries covering them, THE REST aside, read by reviewer/tree/maintainers.py),
or from an address in the list's `maintainers` policy key. A command from anyone else, an unknown
command, or one in a mail that is no reply to the series is recorded as ignored, with who sent it.
Applying commands is the caller's state: `Stops` is the record of what was stopped.
"""
from __future__ import annotations

import email.utils
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from email.message import EmailMessage
from enum import StrEnum
from pathlib import Path

from reviewer.bot.assemble import Assembled
from reviewer.bot.policy import STAGES, Policy
from reviewer.errors import InputError
from reviewer.series.fetch import mail_facts, parse_bytes
from reviewer.series.patchparse import read_diff, split_message
from reviewer.tree import maintainers

PREFIX = "reviewer-bot:"
# In column 1 only: the bot's own footer shows the command indented, so a copy of its mail quoted without `>`
# (Outlook's "-----Original Message-----" style) never commands anything.
_COMMAND = re.compile(r"^reviewer-bot:[^\S\n]*(.*?)[^\S\n]*$", re.IGNORECASE | re.MULTILINE)
_ORIGINAL = re.compile(r"^-+ ?Original Message ?-+$", re.IGNORECASE | re.MULTILINE)


class Verb(StrEnum):
    STOP = "stop"
    STOP_AUTHOR = "stop author"
    RERUN = "rerun"


@dataclass(frozen=True)
class Command:
    verb: Verb
    series: str  # Assembled.key
    author: str  # the series' author (the address `stop author` stops)
    by: str  # who gave it (address)
    msgid: str  # the reply it was in
    stage: str | None = None  # rerun's


@dataclass(frozen=True)
class Ignored:
    line: str
    by: str
    msgid: str
    reason: str


@dataclass(frozen=True)
class Parsed:
    commands: tuple[Command, ...] = ()
    ignored: tuple[Ignored, ...] = ()


@dataclass(frozen=True)
class Authority:
    """Who may command the bot about one series: its author, and the maintainers of what it touches."""

    author: str
    maintainers: frozenset[str] = frozenset()

    def allows(self, address: str) -> bool:
        a = address.strip().lower()
        return a == self.author.lower() or a in self.maintainers


def touched(patches: Iterable[bytes]) -> tuple[str, ...]:
    """The paths (before and after) that the patch mails PATCHES change, in order, each once."""
    out: dict[str, None] = {}
    for n, data in enumerate(patches, start=1):
        body = _plain(parse_bytes(data, f"patch mail {n}"))
        for fc in read_diff(split_message(body)[1]).files:
            out.update(dict.fromkeys(p for p in (fc.old_path, fc.path) if p))
    return tuple(out)


def authority(series: Assembled, policy: Policy, paths: Sequence[str], tree: Path | None = None) -> Authority:
    """SERIES' author, POLICY's `maintainers`, and the M: addresses of TREE's MAINTAINERS entries covering PATHS."""
    found = set(policy.maintainers)
    text = _maintainers_text(tree)
    if text:
        parsed = maintainers.parse(text)
        assert tree is not None
        for path in paths:
            for entry in parsed.covering(path, lambda p: (tree / p).is_dir()):
                if entry.title != maintainers.CATCH_ALL:
                    found.update(email.utils.parseaddr(m)[1].lower() for m in entry.values("M"))
    return Authority(series.sender.lower(), frozenset(a for a in found if a))


def _maintainers_text(tree: Path | None) -> str:
    if tree is None or not (tree / "MAINTAINERS").is_file():
        return ""
    return (tree / "MAINTAINERS").read_text(encoding="utf-8", errors="replace")


def parse(data: bytes, series: Assembled, allowed: Authority) -> Parsed:
    """The commands in the reply DATA (a mail's bytes) about SERIES, those given by someone ALLOWED kept."""
    try:
        facts = mail_facts(data, "a reply")
    except InputError:
        return Parsed()
    msg = parse_bytes(data, "a reply")
    by, msgid = facts.mail.sender, facts.mail.msgid
    text = _plain(msg)
    quoted = _ORIGINAL.search(text)
    lines = [m[1] for m in _COMMAND.finditer(text[: quoted.start()] if quoted else text)]
    if not lines:
        return Parsed()
    if not set(facts.mail.references) & {series.root, *series.parts}:
        return Parsed(ignored=tuple(Ignored(line, by, msgid, "not a reply to this series") for line in lines))
    if not allowed.allows(by):
        return Parsed(ignored=tuple(Ignored(line, by, msgid, "not the author nor a maintainer of the touched files")
                                    for line in lines))
    commands: list[Command] = []
    ignored: list[Ignored] = []
    for line in lines:
        cmd = _command(line, series, by, msgid)
        if isinstance(cmd, Command):
            commands.append(cmd)
        else:
            ignored.append(Ignored(line, by, msgid, cmd))
    return Parsed(tuple(commands), tuple(ignored))


def _command(line: str, series: Assembled, by: str, msgid: str) -> Command | str:
    """LINE's command, or why it is none."""
    words = line.lower().split()
    if words == ["stop"]:
        return Command(Verb.STOP, series.key, series.sender.lower(), by, msgid)
    if words == ["stop", "author"]:
        return Command(Verb.STOP_AUTHOR, series.key, series.sender.lower(), by, msgid)
    if len(words) == 2 and words[0] == "rerun":
        if words[1] not in STAGES:
            return f"unknown stage {words[1]!r} (one of {', '.join(STAGES)})"
        return Command(Verb.RERUN, series.key, series.sender.lower(), by, msgid, words[1])
    return "unknown command (stop | stop author | rerun STAGE)"


def _plain(msg: EmailMessage) -> str:
    """The plain text of a parsed message (its text/plain body, else nothing)."""
    part = msg.get_body(preferencelist=("plain",))
    if part is None:
        return ""
    try:
        return str(part.get_content())
    except (LookupError, ValueError):  # an unknown charset or a damaged transfer encoding: no command read
        return ""


@dataclass(frozen=True)
class Stops:
    """What commands stopped: series (by key) and authors (by address)."""

    series: frozenset[str] = field(default_factory=frozenset)
    authors: frozenset[str] = field(default_factory=frozenset)

    def apply(self, commands: Iterable[Command]) -> Stops:
        out = self
        for c in commands:
            if c.verb is Verb.STOP:
                out = replace(out, series=out.series | {c.series})
            elif c.verb is Verb.STOP_AUTHOR:
                out = replace(out, authors=out.authors | {c.author})
        return out

    def stopped(self, series: Assembled) -> bool:
        return series.key in self.series or series.sender.lower() in self.authors
