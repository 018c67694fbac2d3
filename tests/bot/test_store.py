"""The bot's SQLite state: one transaction per batch and cursor, messages once, each series decided once."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bench._lore import Httpd, Inbox
from reviewer.bot import feed
from reviewer.bot.assemble import Readiness, Seen, assemble
from reviewer.bot.store import Store
from reviewer.series.fetch import mail_facts
from tests.bot.conftest import clone
from tests.bot.mails import series


def _seen(mails: list[bytes], at: float) -> list[Seen]:
    return [Seen(mail_facts(m), "test", at + k, 0, f"{k:040x}") for k, m in enumerate(mails)]


def test_the_database_is_in_wal_mode(tmp_path: Path) -> None:
    Store.in_home(tmp_path).close()
    with sqlite3.connect(tmp_path / "bot.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_message_is_recorded_once_and_comes_back_as_it_was(tmp_path: Path) -> None:
    store = Store.in_home(tmp_path)
    seen = _seen(series("once", "PATCH v2", "net: add once", 1), 10.0)
    assert store.record("test", seen, {0: "a" * 40}) == seen
    assert store.record("test", seen, {0: "b" * 40}) == []  # delivered twice: seen once
    store.close()
    again = Store.in_home(tmp_path)
    assert again.messages("test") == seen
    assert again.cursor("test") == {0: "b" * 40}
    assert again.messages("other") == [] and again.cursor("other") == {}


def test_a_failed_batch_moves_neither_messages_nor_cursor(tmp_path: Path) -> None:
    store = Store.in_home(tmp_path)
    store.record("test", [], {0: "a" * 40})
    good = _seen(series("fail", "PATCH", "net: fail", 1), 10.0)
    broken = Seen(None, "test", 11.0)  # type: ignore[arg-type]  # a batch that breaks half way
    with pytest.raises(AttributeError):
        store.record("test", [*good, broken], {0: "b" * 40})
    assert store.messages("test") == []
    assert store.cursor("test") == {0: "a" * 40}


def test_a_series_is_decided_once_and_survives_a_restart(tmp_path: Path) -> None:
    store = Store.in_home(tmp_path)
    store.record("test", _seen(series("one", "PATCH", "net: one", 2, parts=(1,)), 100.0), {})
    waiting = assemble(store.messages("test"), now=150.0, settle=100.0)
    assert store.save_ready(waiting, now=150.0) == []  # waiting: nothing decided
    settled = assemble(store.messages("test"), now=300.0, settle=100.0)
    assert [s.state for s in store.save_ready(settled, now=300.0)] == [Readiness.INCOMPLETE]
    assert store.save_ready(settled, now=350.0) == []  # decided already
    store.record("test", _seen(series("one", "PATCH", "net: one", 2, parts=(2,))[1:], 400.0), {})
    complete = assemble(store.messages("test"), now=400.0, settle=100.0)
    assert [s.state for s in store.save_ready(complete, now=400.0)] == [Readiness.READY]  # the late part: decided again, complete
    assert store.save_ready(complete, now=500.0) == []  # and only once
    store.close()
    again = Store.in_home(tmp_path)
    assert again.series("test") == complete and again.save_ready(complete, now=600.0) == []


def test_from_the_archive_to_series(archive: Inbox, server: Httpd, tmp_path: Path) -> None:
    """The whole way on real parts: mail delivered to the list, fetched into the mirror, read, recorded, assembled."""
    mirror = clone(server, tmp_path / "mirror")
    store = Store.in_home(tmp_path / "home")
    store.record("test", [], feed.tip(mirror))
    for m in series("e2e", "PATCH", "net: end to end", 2) + series("e2e-r", "RESEND PATCH", "net: end to end", 2):
        archive.deliver(m)
    feed.fetch(mirror)
    mails, cursor = feed.new_messages(mirror, store.cursor("test"))
    store.record("test", [Seen(mail_facts(m.data), "test", 1000.0, m.epoch, m.commit) for m in mails], cursor)
    found = store.save_ready(assemble(store.messages("test"), now=1001.0, settle=600.0), now=1001.0)
    assert [(s.root, s.state, s.duplicate_of) for s in found] == [
        ("e2e.0@example.org", Readiness.READY, None), ("e2e-r.0@example.org", Readiness.READY, "test/e2e.0@example.org")]
