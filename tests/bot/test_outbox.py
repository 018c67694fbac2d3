"""reviewer.bot.outbox against a real SMTP server on 127.0.0.1 (aiosmtpd, tests/mail's), with the table on SQLite
and on a real PostgreSQL cluster (tests/bot/servers.py). Times are passed in, so backoffs and leases end when
the test says."""
from __future__ import annotations

import email
import email.policy
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest

from reviewer.bot.jobs import Jobs, Spec
from reviewer.bot.outbox import Delivery, Item, Mail, Outbox, Row, message_id
from reviewer.bot.patchwork import Check
from reviewer.report import send
from tests.mail.test_send import REFUSED, Inbox

Server = tuple[Inbox, int]


def running(jobs: Jobs, n: int = 1) -> int:
    """A job of series N, claimed by worker w."""
    job = jobs.add(Spec(list="netdev", series=f"s{n}", stage="static"), now=0)
    assert jobs.claim("static", "w", 60, now=0, job_id=job.id) is not None
    return job.id


def reply(key: str, to: str = "author@example.org") -> Mail:
    msg = EmailMessage()
    msg["From"] = "Review Bot <bot@example.org>"
    msg["To"] = to
    msg["Subject"] = "Re: [PATCH] net: a fix"
    msg["Message-ID"] = "<random-1@example.org>"  # replaced by one made from the key
    msg.set_content("This is an automated review.\n")
    return Mail.of(key, msg)


def delivery(server: Server, tmp_path: Path) -> Delivery:
    return Delivery(send.Transport(server="127.0.0.1", port=server[1]), tmp_path)


def received_ids(server: Server) -> list[str]:
    return [str(email.message_from_bytes(data, policy=email.policy.default)["Message-ID"]) for _, _, data in server[0].received]


def test_one_mail_is_delivered_once_even_if_drain_runs_twice(jobs: Jobs, smtp: Server, tmp_path: Path) -> None:
    outbox = Outbox(jobs.db)
    job = running(jobs)
    assert outbox.put_with_result(job, "w", {"status": 0}, [reply("k1")], now=1)
    sent = outbox.drain(delivery(smtp, tmp_path), now=2)
    assert [(r.state, r.attempts, r.error) for r in sent] == [("sent", 1, None)]
    assert outbox.drain(delivery(smtp, tmp_path), now=3) == []
    assert outbox.put([reply("k1")], now=4) == 0  # the same result queued again adds nothing
    assert not outbox.put_with_result(job, "w", {"status": 0}, [reply("k2")], now=5)  # done: a second result is refused
    assert outbox.drain(delivery(smtp, tmp_path), now=6) == []
    assert received_ids(smtp) == [message_id("k1", "bot@example.org")]
    assert smtp[0].received[0][1] == ["author@example.org"]
    assert outbox.counts() == {"queued": 0, "sent": 1, "failed": 0}
    assert jobs.get(job).state == "done"  # type: ignore[union-attr]


class Crash(BaseException):
    """The sender's process dying: nothing after it runs (a BaseException, as SystemExit or a signal's is)."""


def test_a_crash_between_send_and_mark_sends_the_same_message_again_after_the_lease(jobs: Jobs, smtp: Server, tmp_path: Path) -> None:
    outbox = Outbox(jobs.db, lease=300)
    outbox.put([reply("k1")], list_name="netdev", now=0)
    real = delivery(smtp, tmp_path)

    def dies_after_sending(row: Row) -> None:
        real(row)
        raise Crash

    with pytest.raises(Crash):
        outbox.drain(dies_after_sending, now=10)
    (row,) = outbox.select()
    assert (row.state, row.attempts, row.not_before) == ("queued", 1, 310)  # sent, but not marked: leased
    assert outbox.drain(real, now=100) == []  # another drain within the lease leaves it alone
    assert [r.state for r in outbox.drain(real, now=310)] == ["sent"]
    assert received_ids(smtp) == [message_id("k1", "bot@example.org")] * 2  # the window: at least once, the same Message-ID


def test_the_result_and_its_outbox_rows_are_one_transaction(jobs: Jobs) -> None:
    outbox = Outbox(jobs.db)
    job = running(jobs)

    def items() -> Iterator[Item]:
        yield reply("k1")
        raise RuntimeError("the report failed half-way")

    with pytest.raises(RuntimeError):
        outbox.put_with_result(job, "w", {"status": 1}, items(), now=1)
    assert (jobs.get(job).state, jobs.get(job).result, outbox.select()) == ("running", None, [])  # type: ignore[union-attr]
    check = ("k2", Check("https://pw.example/api/1.1/", 7, "fail", "reviewer-static", "2 errors"))
    assert outbox.put_with_result(job, "w", {"status": 1}, [reply("k1"), check], now=2)
    assert (jobs.get(job).state, jobs.get(job).result) == ("done", {"status": 1})  # type: ignore[union-attr]
    rows = outbox.select()
    assert [(r.kind, r.list, r.job, r.state) for r in rows] == [("mail", "netdev", job, "queued"), ("check", "netdev", job, "queued")]
    assert rows[1].check() == check[1]
    assert not outbox.put_with_result(running(jobs, 2), "someone-else", {}, [reply("k3")])  # not its job: nothing written
    assert len(outbox.select()) == 2


def test_a_failing_send_is_retried_with_backoff_then_failed(jobs: Jobs, smtp: Server, tmp_path: Path) -> None:
    outbox = Outbox(jobs.db, attempts=3, backoff=10)
    outbox.put([reply("k1", to=REFUSED)], now=0)
    sender = delivery(smtp, tmp_path)
    (row,) = outbox.drain(sender, now=0)
    assert (row.state, row.attempts, row.not_before) == ("queued", 1, 10)
    assert row.error is not None and f"refused the recipient {REFUSED}" in row.error
    assert outbox.drain(sender, now=9) == []
    assert [(r.state, r.not_before) for r in outbox.drain(sender, now=10)] == [("queued", 30)]
    assert [(r.state, r.attempts) for r in outbox.drain(sender, now=30)] == [("failed", 3)]
    assert outbox.drain(sender, now=1000) == []
    assert outbox.counts() == {"queued": 0, "sent": 0, "failed": 1}
    assert [r.key for r in outbox.errors()] == ["k1"]
    assert smtp[0].received == []


def test_the_message_id_is_made_from_the_key() -> None:
    a, b = reply("k1"), reply("k1")
    assert a.message == b.message
    msg = email.message_from_bytes(a.message, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    msg.replace_header("Message-ID", "<theirs@example.org>")
    assert Mail.of("k2", msg).message != a.message and msg["Message-ID"] == "<theirs@example.org>"  # the caller's is untouched
    parsed = email.message_from_bytes(a.message, policy=email.policy.default)
    assert parsed["Message-ID"] == message_id("k1", "bot@example.org") != message_id("k2", "bot@example.org")
    assert parsed["Message-ID"].endswith("@example.org>")
