"""The feed on a real archive: a public-inbox v2 inbox, mirrored over HTTP, mail delivered, public-inbox-fetch run."""
from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest

from bench._lore import Httpd, Inbox
from reviewer.bot import feed
from reviewer.bot.assemble import Seen
from reviewer.bot.store import Store
from reviewer.errors import FetchError
from reviewer.series.fetch import mail_facts
from tests.bot.conftest import clone
from tests.bot.mails import mail


def _ids(mails: list[feed.RawMail]) -> list[str]:
    return [mail_facts(m.data).mail.msgid for m in mails]


def _deliver(archive: Inbox, tag: str, n: int) -> list[str]:
    ids = [f"{tag}.{k}@example.org" for k in range(n)]
    for k, msgid in enumerate(ids):
        archive.deliver(mail(msgid, f"note {tag} {k}", f"body {k}\n", minute=k))
    return ids


def test_the_feed_yields_exactly_the_new_messages_in_order(archive: Inbox, server: Httpd, tmp_path: Path) -> None:
    _deliver(archive, "before", 2)
    mirror = clone(server, tmp_path / "mirror")
    cursor = feed.tip(mirror)
    assert feed.new_messages(mirror, cursor) == ([], cursor)
    sent = _deliver(archive, "order", 3)
    assert feed.new_messages(mirror, cursor)[0] == []  # not fetched yet: the mirror is all the feed reads
    assert feed.fetch(mirror) is True
    mails, after = feed.new_messages(mirror, cursor)
    assert _ids(mails) == sent
    assert after != cursor
    assert feed.new_messages(mirror, after) == ([], after)
    assert feed.fetch(mirror) is False  # nothing new on the server


def test_the_whole_archive_from_an_empty_cursor(archive: Inbox, server: Httpd, tmp_path: Path) -> None:
    sent = _deliver(archive, "whole", 2)
    mails, cursor = feed.new_messages(clone(server, tmp_path / "mirror"), {})
    assert _ids(mails)[-2:] == sent
    assert len(set(_ids(mails))) == len(mails) >= 2
    assert set(cursor) == set(feed.epochs(tmp_path / "mirror"))


def test_a_restart_from_the_stored_cursor_neither_loses_nor_repeats(archive: Inbox, server: Httpd, tmp_path: Path) -> None:
    mirror = clone(server, tmp_path / "mirror")
    store = Store.in_home(tmp_path / "home")
    store.record("test", [], feed.tip(mirror))
    first = _deliver(archive, "restart-a", 2)
    feed.fetch(mirror)
    mails, cursor = feed.new_messages(mirror, store.cursor("test"))
    store.record("test", _seen(mails, 1.0), cursor)
    store.close()  # the bot stops
    second = _deliver(archive, "restart-b", 2)
    feed.fetch(mirror)
    read_but_not_recorded, _ = feed.new_messages(mirror, Store.in_home(tmp_path / "home").cursor("test"))
    assert _ids(read_but_not_recorded) == second  # a bot killed before recording reads them again

    store = Store.in_home(tmp_path / "home")  # the bot starts again
    mails, cursor = feed.new_messages(mirror, store.cursor("test"))
    assert _ids(mails) == second
    assert [s.msgid for s in store.record("test", _seen(mails, 2.0), cursor)] == second
    assert [s.msgid for s in store.messages("test")] == first + second
    assert feed.new_messages(mirror, store.cursor("test"))[0] == []


def test_a_new_epoch_is_read_whole(archive: Inbox, server: Httpd, tmp_path: Path) -> None:
    mirror = clone(server, tmp_path / "mirror")
    cursor = feed.tip(mirror)
    # public-inbox starts a new epoch once the newest one's packs pass 1 GiB (V2Writable's rotate_bytes):
    # a sparse file of that size, which git ignores (no .idx), makes the next mail start one.
    latest = max(feed.epochs(archive.root / "test").values())
    with (latest / "objects" / "pack" / "pack-rotate.pack").open("wb") as f:
        f.truncate(1 << 30)
    sent = _deliver(archive, "epoch", 2)
    (latest / "objects" / "pack" / "pack-rotate.pack").unlink()
    assert len(feed.epochs(archive.root / "test")) == len(cursor) + 1
    assert feed.fetch(mirror) is True
    mails, after = feed.new_messages(mirror, cursor)
    assert _ids(mails) == sent
    assert {m.epoch for m in mails} == {max(after)} and max(after) not in cursor


def test_a_damaged_message_is_skipped_with_a_note(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # An epoch made by hand, as public-inbox lays it out: one commit a message, blob m; git keeps loose objects.
    repo = tmp_path / "mirror" / "git" / "0.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    blobs = []
    for k in range(3):
        blob = _git(repo, "hash-object", "-w", "--stdin", data=mail(f"hand.{k}@example.org", f"hand {k}", "x\n"))
        tree = _git(repo, "mktree", data=f"100644 blob {blob}\tm\n".encode())
        parent = ["-p", _git(repo, "rev-parse", "HEAD")] if k else []
        _git(repo, "update-ref", "HEAD", _git(repo, "commit-tree", tree, *parent, "-m", f"hand {k}"))
        blobs.append(blob)
    loose = repo / "objects" / blobs[1][:2] / blobs[1][2:]
    loose.chmod(0o644)
    loose.write_bytes(b"not zlib at all")
    with caplog.at_level(logging.WARNING, logger="reviewer.bot.feed"):
        mails, cursor = feed.new_messages(tmp_path / "mirror", {})
    assert _ids(mails) == ["hand.0@example.org", "hand.2@example.org"]
    assert cursor == {0: _git(repo, "rev-parse", "HEAD")}  # past the damaged one: it is not read again
    assert "skipped" in caplog.text and "no message read" in caplog.text


def test_fetch_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / "not-a-mirror").mkdir()
    with pytest.raises(FetchError, match="public-inbox-fetch exited"):
        feed.fetch(tmp_path / "not-a-mirror", timeout=60)


def test_fetch_stops_at_its_timeout(server: Httpd, tmp_path: Path) -> None:
    mirror = clone(server, tmp_path / "mirror")
    with pytest.raises(FetchError, match=r"timed out after 0\.01s"):
        feed.fetch(mirror, timeout=0.01)


def test_a_cursor_the_history_no_longer_has_is_an_error(server: Httpd, tmp_path: Path) -> None:
    mirror = clone(server, tmp_path / "mirror")
    with pytest.raises(FetchError, match="no longer in the epoch's history"):
        feed.new_messages(mirror, {0: "0123456789" * 4})


def _seen(mails: list[feed.RawMail], at: float) -> list[Seen]:
    return [Seen(mail_facts(m.data), "test", at, m.epoch, m.commit) for m in mails]


def _git(repo: Path, *args: str, data: bytes | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], input=data, check=True, capture_output=True).stdout.decode().strip()
