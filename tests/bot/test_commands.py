"""reviewer/bot/commands.py: commands at the start of a reply's line, from the series' author or a maintainer
of the files it touches (MAINTAINERS in a tree, or the policy's `maintainers`); anyone else's, quoted ones,
and those in mails about another series are ignored and recorded with who sent them."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reviewer.bot.assemble import Assembled, assemble, read
from reviewer.bot.commands import Authority, Command, Stops, Verb, authority, parse, touched
from reviewer.bot.feed import RawMail
from reviewer.bot.policy import Policy
from tests.bot.mails import mail, series

MAINTAINERS = """\
List of maintainers

LIB F1 HELPERS
M:\tLib Keeper <keeper@example.org>
R:\tRita Reviewer <rita@example.org>
L:\tlib@lists.example.org
S:\tMaintained
F:\tlib/f1.c

NET DRIVERS
M:\tNed Net <ned@example.org>
S:\tMaintained
F:\tdrivers/net/

THE REST
M:\tTop Penguin <penguin@example.org>
S:\tBuried alive in reporters
F:\t*
F:\t*/
"""
ROOT = "cmd.0@example.org"


@pytest.fixture
def posted() -> tuple[Assembled, list[bytes]]:
    mails = series("cmd", "PATCH", "lib: tidy the helpers", 2)
    seen = read("test", [RawMail(0, f"c{n}", m) for n, m in enumerate(mails)], 0.0)
    (s,) = assemble(seen, 10.0, 1800)
    return s, mails


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "MAINTAINERS").write_text(MAINTAINERS)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "f1.c").write_text("int f1;\n")
    return tmp_path


def reply(body: str, sender: str, *, to: str = ROOT, msgid: str = "r1@example.org") -> bytes:
    return mail(msgid, "Re: [PATCH 0/2] lib: tidy the helpers", body, sender=sender, reply_to=to, minute=30)


def test_touched_reads_the_paths_of_the_patch_mails(posted: tuple[Assembled, list[bytes]]) -> None:
    assert touched(posted[1][1:]) == ("lib/f1.c", "lib/f2.c")


def test_maintainers_of_touched_files_come_from_the_tree(posted: tuple[Assembled, list[bytes]], tree: Path) -> None:
    s, mails = posted
    who = authority(s, Policy("test"), touched(mails[1:]), tree)
    assert who == Authority("ann@example.org", frozenset({"keeper@example.org"}))  # not R:, not THE REST, not drivers/net
    assert authority(s, Policy("test", maintainers=("boss@example.org",)), ["lib/f2.c"], None).maintainers == {"boss@example.org"}


def test_a_command_from_the_author_is_accepted(posted: tuple[Assembled, list[bytes]], tree: Path) -> None:
    s, mails = posted
    who = authority(s, Policy("test"), touched(mails[1:]), tree)
    got = parse(reply("Thanks, but\n\nreviewer-bot: stop\n", "Ann Author <ann@example.org>"), s, who)
    assert got.commands == (Command(Verb.STOP, s.key, "ann@example.org", "ann@example.org", "r1@example.org"),)
    assert got.ignored == ()


def test_a_command_from_a_maintainer_of_the_touched_files_is_accepted(posted: tuple[Assembled, list[bytes]], tree: Path) -> None:
    s, mails = posted
    who = authority(s, Policy("test"), touched(mails[1:]), tree)
    got = parse(reply("Reviewer-Bot:  rerun build\nreviewer-bot: stop author\n", "Lib Keeper <Keeper@example.org>"), s, who)
    assert [(c.verb, c.stage, c.by) for c in got.commands] == [(Verb.RERUN, "build", "keeper@example.org"),
                                                              (Verb.STOP_AUTHOR, None, "keeper@example.org")]


def test_the_policy_maintainers_are_accepted_without_a_tree(posted: tuple[Assembled, list[bytes]]) -> None:
    s, _ = posted
    who = authority(s, Policy("test", maintainers=("mai@example.org",)), [], None)
    assert parse(reply("reviewer-bot: stop\n", "mai@example.org"), s, who).commands[0].verb is Verb.STOP


@pytest.mark.parametrize("sender", ["Eve Stranger <eve@example.org>", "Ned Net <ned@example.org>", "Top Penguin <penguin@example.org>",
                                    "Rita Reviewer <rita@example.org>"])
def test_a_command_from_anyone_else_is_ignored_and_recorded(posted: tuple[Assembled, list[bytes]], tree: Path, sender: str) -> None:
    s, mails = posted
    who = authority(s, Policy("test"), touched(mails[1:]), tree)
    got = parse(reply("reviewer-bot: stop\n", sender), s, who)
    assert got.commands == ()
    (ignored,) = got.ignored
    assert (ignored.line, ignored.by, ignored.msgid) == ("stop", sender.split("<")[1].rstrip(">"), "r1@example.org")
    assert "not the author" in ignored.reason


def test_a_quoted_command_is_no_command(posted: tuple[Assembled, list[bytes]]) -> None:
    s, _ = posted
    who = Authority("ann@example.org")
    body = ("On Sunday Ann wrote:\n> reviewer-bot: stop\n>reviewer-bot: stop\nI agree. Say reviewer-bot: stop to stop it.\n"
            "The footer said:\n  reviewer-bot: stop\n-----Original Message-----\nreviewer-bot: stop\n")
    assert parse(reply(body, "ann@example.org"), s, who) == parse(reply("nothing here\n", "ann@example.org"), s, who)
    assert parse(reply(body, "ann@example.org"), s, who).commands == ()


def test_a_reply_to_another_series_and_unknown_commands_are_ignored(posted: tuple[Assembled, list[bytes]]) -> None:
    s, _ = posted
    who = Authority("ann@example.org")
    other = parse(reply("reviewer-bot: stop\n", "ann@example.org", to="elsewhere@example.org"), s, who)
    assert other.commands == () and other.ignored[0].reason == "not a reply to this series"
    below_a_patch = parse(reply("reviewer-bot: stop\n", "ann@example.org", to="cmd.2@example.org"), s, who)
    assert below_a_patch.commands[0].verb is Verb.STOP
    odd = parse(reply("reviewer-bot: rerun boot\nreviewer-bot: go away\n", "ann@example.org"), s, who)
    assert odd.commands == ()
    assert [i.reason.split(" (")[0] for i in odd.ignored] == ["unknown stage 'boot'", "unknown command"]


def test_stops_record_series_and_authors(posted: tuple[Assembled, list[bytes]]) -> None:
    s, _ = posted
    who = Authority("ann@example.org")
    stops = Stops()
    assert not stops.stopped(s)
    once = stops.apply(parse(reply("reviewer-bot: stop\n", "ann@example.org"), s, who).commands)
    assert once.series == {s.key} and once.authors == frozenset() and once.stopped(s)
    other_series = replace_key(s, "test/other@example.org")
    assert not once.stopped(other_series)
    author = stops.apply(parse(reply("reviewer-bot: stop author\n", "ann@example.org"), s, who).commands)
    assert author.authors == {"ann@example.org"} and author.stopped(other_series)
    rerun = stops.apply(parse(reply("reviewer-bot: rerun static\n", "ann@example.org"), s, who).commands)
    assert rerun == stops


def replace_key(s: Assembled, key: str) -> Assembled:
    return replace(s, key=key)


def test_kernel_mini_maintainers(posted: tuple[Assembled, list[bytes]]) -> None:
    tree = Path(__file__).resolve().parents[2] / "fixtures" / "kernel-mini"
    who = authority(posted[0], Policy("test"), ["arch/loongarch/include/asm/vdso/getrandom.h"], tree)
    assert who.maintainers == {"chenhuai@example.org", "jrandom@example.org"}
