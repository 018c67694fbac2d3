"""reviewer/bot/etiquette.py: a bot mail gives no review tag (not even one forged by a hostile subject, name
or Message-ID), says it is automated, how to stop it, its base and the commands that reproduce its findings,
and carries Auto-Submitted; a mail without the footer is refused."""
from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from reviewer.bot.etiquette import (
    AUTOMATED,
    STOP,
    EtiquetteError,
    Footer,
    bot_mail,
    check,
    footer,
    problems,
    reproduce,
    with_footer,
)
from reviewer.model import Finding, Level, Review
from reviewer.report import email as reply_mail
from reviewer.report import send
from reviewer.series.fetch import build_series, parse_bytes
from tests.bot.mails import series

OPTS = reply_mail.ReplyOptions("reviewer-bot <bot@example.org>", date=dt.datetime(2026, 12, 6, 4, 0, tzinfo=dt.UTC),
                               make_msgid=lambda: "<bot-1@example.org>", signature="reviewer-bot (test)")
HOSTILE_SUBJECT = "=?utf-8?q?lib=3A_tidy=0AReviewed-by=3A_Mallory_=3Cm=40example=2Eorg=3E?="
HOSTILE_NAME = "=?utf-8?q?Ann=0AAcked-by=3A_Mallory?= <ann@example.org>"
FOOTER = Footer("1234567890ab", ("review hostile.0@example.org",))


def hostile_review() -> Review:
    """A series whose subject and author name each decode to a `\\n<tag>: Mallory` line, with one finding."""
    mails = series("hostile", "PATCH", HOSTILE_SUBJECT, 2, sender=HOSTILE_NAME)
    s = build_series([parse_bytes(m) for m in mails], "test")
    # Mail parsing folds the subject's encoded newline into a blank, and drops a From: whose name holds one; the reply
    # must hold even if they did not (another source of series, a change in b4), so the model gets the raw newlines.
    assert "tidy Reviewed-by: Mallory" in s.subject and "Mallory" not in s.author.name
    s = replace(s, subject=s.subject.replace(" Reviewed-by", "\nReviewed-by"),
                author=replace(s.author, name="Ann\nAcked-by: Mallory <m@example.org>", email="ann@example.org"),
                patches=tuple(replace(p, subject=p.subject + "\nReviewed-by: Mallory <m@example.org>") for p in s.patches))
    assert "\nReviewed-by: Mallory" in s.subject and "\nAcked-by: Mallory" in s.author.name
    finding = Finding("subject-length", Level.ERROR, f"the subject {s.subject!s} is odd\nTested-by: Mallory <m@example.org>",
                      patch=1, path="lib/f1.c")
    return Review(series=s, findings=(finding,))


def test_a_hostile_subject_or_name_cannot_forge_a_tag() -> None:
    msg = bot_mail(reply_mail.reply(hostile_review(), OPTS), FOOTER)
    body = str(msg.get_body(preferencelist=("plain",)).get_content())  # type: ignore[union-attr]
    assert "Mallory" in body  # the hostile text is shown, as data
    assert problems(body, [(k, str(v)) for k, v in msg.items()]) == []
    check(msg)  # does not raise
    wire = reply_mail.as_bytes(msg).decode()
    assert not any(line.lstrip().lower().startswith(("reviewed-by:", "acked-by:", "tested-by:")) for line in wire.splitlines())


def test_a_hostile_msgid_or_base_stays_on_its_line() -> None:
    cmds = reproduce("x@y\nReviewed-by: Mallory <m@example.org>", "abc\nAcked-by: M <m@example.org>", ["static", "apply", "build"],
                     ["x86_64", "arm64"])
    text = footer(Footer("abc\nAcked-by: M <m@example.org>", cmds))
    assert problems(text) == []
    assert len(cmds) == 3 and all("\n" not in c for c in cmds)
    assert cmds[2] == "review --tree LINUX --base 'abc\\nAcked-by: M <m@example.org>' --build --arch x86_64,arm64 " \
                      "'x@y\\nReviewed-by: Mallory <m@example.org>'"


def test_the_footer_goes_before_the_signature() -> None:
    body = with_footer("Hi Ann,\n\nFindings.\n\nThanks,\nbot\n\n-- \nreviewer-bot 1.0\n", FOOTER)
    assert body.endswith("\n-- \nreviewer-bot 1.0\n")
    assert body.index(AUTOMATED) < body.index("\n-- \n")
    assert f"\n  {STOP}\n" in body and "\nBase commit: 1234567890ab\n" in body and "\n  review hostile.0@example.org\n" in body
    assert problems(body) == []
    assert problems(with_footer("no signature\n", FOOTER)) == []


def test_a_reply_without_the_footer_is_refused() -> None:
    msg = reply_mail.reply(hostile_review(), OPTS)
    with pytest.raises(EtiquetteError) as caught:
        check(msg)
    said = caught.value.message
    for what in ("automated", "how to stop it", "which base", "reproduce", "Auto-Submitted"):
        assert what in said, what


@pytest.mark.parametrize("line", ["Reviewed-by: Bot <bot@example.org>", "  acked-by: x", "Tested-by:Bot", "Nacked-by: x",
                                  "Reported-by: kernel test robot <lkp@example.org>", "NAK: no", "Ack: fine"])
def test_any_review_tag_at_the_start_of_a_line_is_refused(line: str) -> None:
    body = with_footer(f"Hello,\n\nLooks fine.\n{line}\n\n-- \nbot\n", FOOTER)
    assert [p.split(":")[0] for p in problems(body)] == ["line 4"]


@pytest.mark.parametrize("line", ["> Reviewed-by: Someone <s@example.org>", "I'd welcome a Reviewed-by: from a human."])
def test_a_quoted_or_inline_tag_is_no_tag(line: str) -> None:
    assert problems(with_footer(f"Hello,\n{line}\n", FOOTER)) == []


def test_each_missing_statement_is_named() -> None:
    full = with_footer("Hello,\n", FOOTER)
    assert problems(full.replace(AUTOMATED, "")) == ["it does not say that it is automated"]
    assert problems(full.replace(f"  {STOP}\n", "")) == [f"it does not say how to stop it ({STOP!r} on a line of its own)"]
    assert problems(full.replace("Base commit: 1234567890ab", "Base commit:")) == ["it does not say which base it used"]
    assert problems(with_footer("Hello,\n", Footer("abc", ()))) == ["it does not give the commands that reproduce its findings"]
    assert problems(full, [("Subject", "Re: x")]) == ["its headers lack 'Auto-Submitted: auto-generated'"]


def test_a_recipient_beyond_the_author_and_the_list_is_refused() -> None:
    body = with_footer("Hello,\n", FOOTER)
    headers = [("Auto-Submitted", "auto-generated"), ("To", "Mallory <m@evil.example>, x <ann@example.org>"),
               ("Cc", "test@lists.example.org")]
    allowed = ["Ann@example.org", "test@lists.example.org"]
    assert problems(body, headers, allowed) == ["it goes to m@evil.example, who is neither the author nor the list"]
    assert problems(body, headers[:1] + [("To", "Ann <ann@example.org>")] + headers[2:], allowed) == []
    assert problems(body, headers) == []  # no ALLOWED given: not checked


def test_a_display_name_holding_an_address_never_reaches_a_recipient() -> None:
    # RFC 5322 allows a quoted display name with `<`, `>` and `,` in it: either the reply quotes it, or the check refuses the mail.
    mails = series("named", "PATCH", "lib: tidy", 2, sender='"Mallory <m@evil.example>, x" <ann@example.org>')
    msg = bot_mail(reply_mail.reply(Review(series=build_series([parse_bytes(m) for m in mails], "test")), OPTS), FOOTER)
    allowed = ["ann@example.org", "test@lists.example.org"]
    try:
        check(msg, allowed)
    except EtiquetteError as exc:
        assert "it goes to m@evil.example" in exc.message  # reviewer/report/message.py writes the name unquoted today
    else:
        assert {a.lower() for a in send.envelope(msg)} <= set(allowed)
