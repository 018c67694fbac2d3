"""reviewer/bot/loop.py in this process, the time passed in: a real public-inbox v2 inbox read in place (its
git/N.git are what a mirror holds), the static stage run by Bot.run as a consumer would, an aiosmtpd server."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench._lore import INBOX, Inbox, make_inbox
from reviewer.bot import config, loop
from reviewer.bot.outbox import Delivery
from reviewer.report import send
from tests.bot.mails import mail, series
from tests.mail.test_send import Inbox as SmtpInbox

T = 1_800_000_000.0
BOT = "reviewer-bot <bot@example.org>"


def _loop(tmp_path: Path, inbox: Inbox, policy: str) -> loop.Loop:
    path = tmp_path / "bot.toml"
    settle = "" if "settle" in policy else "settle = 0\n"
    path.write_text(f'[bot]\nhome = "state"\n\n[lists.test]\nmirror = "{inbox.root / INBOX}"\n{settle}quiet_on_clean = false\n{policy}')
    return loop.Loop(config.load(path), fetch=False)


@pytest.fixture
def inbox(tmp_path: Path) -> Inbox:
    box = make_inbox(tmp_path / "archive")
    box.deliver(mail("first@example.org", "the list's first mail", "hello\n"))
    return box


@pytest.fixture
def delivery(smtp: tuple[SmtpInbox, int], tmp_path: Path) -> Iterator[Delivery]:
    smtp[0].refuse.clear()
    yield Delivery(send.Transport(server="127.0.0.1", port=smtp[1]), tmp_path)


def _work(lp: loop.Loop) -> None:
    """Run the queued jobs as a consumer of their pool would."""
    for job in lp.bot.jobs.select(state="queued"):
        if job.pool != loop.REPORT:
            lp.bot.run(job.pool, job.id)


def test_an_embargoed_mail_waits_until_the_embargo_ends(tmp_path: Path, inbox: Inbox, delivery: Delivery,
                                                        smtp: tuple[SmtpInbox, int]) -> None:
    for m in series("emb", "PATCH", "lib: embargoed", 2):
        inbox.deliver(m)
    lp = _loop(tmp_path, inbox, 'mail = "author"\nembargo_hours = 1\n')
    try:
        assert loop.tick(lp, T) == ["test/emb.0@example.org: run static: ready"]
        _work(lp)
        assert loop.report(lp, BOT, T + 5) == [f"test/emb.0@example.org: mail queued (not before {T + 3600:.0f}: embargo of 1 hours)"]
        assert loop.drain(lp, delivery, T + 60) == []  # not yet
        assert [r.state for r in loop.drain(lp, delivery, T + 3600)] == ["sent"]
        assert len(smtp[0].received) == 1 and smtp[0].received[0][1] == ["ann@example.org"]  # mail = "author": the list is not in Cc
        assert loop.tick(lp, T + 4000) == [] and loop.report(lp, BOT, T + 4000) == []  # nothing new, nothing again
    finally:
        lp.close()


def test_a_maintainer_named_by_the_policy_may_stop_a_series(tmp_path: Path, inbox: Inbox, delivery: Delivery) -> None:
    for m in series("m", "PATCH", "lib: maintained", 2):
        inbox.deliver(m)
    inbox.deliver(mail("r1@example.org", "Re: [PATCH 0/2] lib: maintained", "reviewer-bot: stop\n", sender="M <maint@example.org>",
                       reply_to="m.1@example.org"))
    lp = _loop(tmp_path, inbox, 'mail = "author+list"\nmaintainers = ["maint@example.org"]\n')
    try:
        lines = loop.tick(lp, T)
        assert "test/m.0@example.org: stop by maint@example.org (r1@example.org)" in lines
        _work(lp)
        assert loop.report(lp, BOT, T) == ["test/m.0@example.org: no mail: stopped by a command"]
        assert loop.drain(lp, delivery, T) == []
    finally:
        lp.close()


def test_the_rate_limit_counts_the_mails_queued_as_well_as_those_sent(tmp_path: Path, inbox: Inbox, delivery: Delivery) -> None:
    for tag in ("r1", "r2"):
        for m in series(tag, "PATCH", f"lib: rated {tag}", 2):
            inbox.deliver(m)
    lp = _loop(tmp_path, inbox, 'mail = "author"\nmax_mails_per_day = 1\n')
    try:
        loop.tick(lp, T)
        _work(lp)
        lines = loop.report(lp, BOT, T)  # both reported in one tick, before either mail is sent
        assert sorted(lines) == ["test/r1.0@example.org: mail queued",
                                 f"test/r2.0@example.org: mail queued (not before {T + 86400:.0f}: max_mails_per_day = 1 reached)"]
        assert [r.state for r in loop.drain(lp, delivery, T + 1)] == ["sent"]  # one today, the other tomorrow
    finally:
        lp.close()


def test_a_rerun_from_the_author_runs_the_stage_again_and_reports_again(tmp_path: Path, inbox: Inbox, delivery: Delivery) -> None:
    for m in series("rr", "PATCH", "lib: again", 2):
        inbox.deliver(m)
    lp = _loop(tmp_path, inbox, 'mail = "author"\n')
    try:
        loop.tick(lp, T)
        _work(lp)
        assert loop.report(lp, BOT, T) == ["test/rr.0@example.org: mail queued"]
        inbox.deliver(mail("again@example.org", "Re: [PATCH 0/2] lib: again", "reviewer-bot: rerun static\n", reply_to="rr.0@example.org"))
        inbox.deliver(mail("x@example.org", "Re: [PATCH 0/2] lib: again", "reviewer-bot: rerun static\n", sender="Eve <eve@example.org>",
                           reply_to="rr.0@example.org"))
        lines = loop.tick(lp, T + 60)
        assert "test/rr.0@example.org: rerun by ann@example.org (again@example.org)" in lines
        assert any(line.startswith("test/rr.0@example.org: ignored 'rerun static' by eve@example.org: not the author") for line in lines)
        assert [j.config for j in lp.bot.jobs.select(state="queued")] == ["rerun again@example.org"]  # one rerun, not two
        _work(lp)
        assert loop.report(lp, BOT, T + 120) == ["test/rr.0@example.org: mail queued"]  # the rerun's round: its own report
        assert [r.state for r in loop.drain(lp, delivery, T + 120)] == ["sent", "sent"]
    finally:
        lp.close()


def test_a_series_whose_missing_part_comes_late_is_reviewed_again_complete_and_mailed_once(tmp_path: Path, inbox: Inbox,
                                                                                              delivery: Delivery) -> None:
    parts = series("late", "PATCH", "lib: held in moderation", 3)
    for m in (parts[0], parts[1], parts[3]):
        inbox.deliver(m)
    lp = _loop(tmp_path, inbox, 'mail = "author"\nsettle = 60\n')
    try:
        assert loop.tick(lp, T) == []  # waiting for part 2
        assert loop.tick(lp, T + 100) == ["test/late.0@example.org: run static: incomplete (parts 2 missing): static only, never mailed"]
        _work(lp)
        assert loop.report(lp, BOT, T + 100) == ["test/late.0@example.org: no mail: incomplete series are never mailed"]
        inbox.deliver(parts[2])  # an hour later, out of the moderation queue
        assert loop.tick(lp, T + 3700) == ["test/late.0@example.org: run static: ready"]
        _work(lp)
        assert loop.report(lp, BOT, T + 3700) == ["test/late.0@example.org: mail queued"]
        assert [r.state for r in loop.drain(lp, delivery, T + 3700)] == ["sent"]
        assert loop.tick(lp, T + 4000) == [] and loop.report(lp, BOT, T + 4000) == []  # decided complete once
    finally:
        lp.close()
