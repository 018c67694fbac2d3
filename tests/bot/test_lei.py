"""The lei feed: a maildir read for real (written by Python's mailbox.Maildir, and by Debian's lei from a real
public-inbox inbox when lei is installed), remembered across restarts in the bot's store."""
from __future__ import annotations

import mailbox
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench._lore import make_inbox
from reviewer.bot import assemble, config, lei, loop, operate
from reviewer.bot.assemble import Seen
from reviewer.bot.store import Store
from reviewer.errors import FetchError
from tests.bot.mails import mail, series

T = 1_800_000_000.0

LIST = "laptop"


def msgids(seen: list[Seen]) -> list[str]:
    return [s.msgid for s in seen]


def poll(home: Path, maildir: Path) -> list[Seen]:
    """One poll by a bot started afresh (its own Store connection), as after a restart."""
    store = Store.in_home(home)
    try:
        return lei.poll(store, LIST, maildir, at=1000.0)
    finally:
        store.close()


def test_a_maildir_is_read_once_across_restarts(tmp_path: Path) -> None:
    box = mailbox.Maildir(tmp_path / "md", create=True)
    for m in series("a", "PATCH", "lib: Do it", 2):
        box.add(mailbox.MaildirMessage(m))
    assert msgids(poll(tmp_path, tmp_path / "md")) == ["a.0@example.org", "a.1@example.org", "a.2@example.org"]
    assert poll(tmp_path, tmp_path / "md") == []  # a restart reads nothing again

    # A mail client moves one message to cur/ and marks it seen: the same file, not a new message.
    first = next(iter(box.keys()))
    seen = box[first]
    seen.set_subdir("cur")
    seen.add_flag("S")
    box[first] = seen
    assert sorted(p.parent.name for p in lei.files(tmp_path / "md")).count("cur") == 1
    box.add(mailbox.MaildirMessage(mail("b.0@example.org", "[PATCH] net: Another", "body\n")))
    (tmp_path / "md" / "new" / "not-a-mail").write_bytes(b"\x00\x01 garbage")
    assert "b.0@example.org" in msgids(poll(tmp_path, tmp_path / "md"))  # with the garbage, read as what mail_facts makes of it
    assert poll(tmp_path, tmp_path / "md") == []  # the garbage is remembered too: not read at every poll


def test_a_crash_between_the_messages_and_the_cursor_repeats_nothing(tmp_path: Path) -> None:
    box = mailbox.Maildir(tmp_path / "md", create=True)
    box.add(mailbox.MaildirMessage(mail("c.0@example.org", "[PATCH] mm: One", "body\n")))
    store = Store.in_home(tmp_path)
    try:  # what poll does, killed before it marks the files read
        store.record(LIST, assemble.read(LIST, lei.new_messages(tmp_path / "md", set()), 1.0), {})
    finally:
        store.close()
    assert poll(tmp_path, tmp_path / "md") == []
    store = Store.in_home(tmp_path)
    try:
        assert lei.Cursor(store, LIST).read() == {lei.key(p.name) for p in lei.files(tmp_path / "md")}
        assert msgids(store.messages(LIST)) == ["c.0@example.org"]
    finally:
        store.close()


def test_the_commands() -> None:
    md = Path("/home/me/Mail/mm")
    assert lei.search_command(md, "l:linux-mm.kvack.org AND dfn:mm/dmapool.c") == [
        "lei", "q", "-q", "-o", "maildir:/home/me/Mail/mm", "l:linux-mm.kvack.org AND dfn:mm/dmapool.c"]
    assert lei.update_command(md) == ["lei", "up", "-q", "/home/me/Mail/mm"]
    assert lei.key("47cb=99:2,S") == "47cb=99" and lei.key("1733.M1P2.host") == "1733.M1P2.host"


def test_a_missing_lei_is_a_fetch_error(tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="command not found"):
        lei.follow(tmp_path / "md", "s:x", env={"PATH": str(tmp_path)})


@pytest.fixture
def lei_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """lei's own HOME and runtime directory; its daemon (which lei starts on first use) is stopped at the end."""
    if shutil.which("lei") is None:
        pytest.skip("lei is not installed (Debian: apt-get install lei)")
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    env = {**os.environ, "HOME": str(tmp_path / "lei-home"), "XDG_RUNTIME_DIR": str(run)}
    env.pop("XDG_CONFIG_HOME", None), env.pop("XDG_DATA_HOME", None), env.pop("XDG_CACHE_HOME", None), env.pop("XDG_STATE_HOME", None)
    yield env
    pid = subprocess.run(["lei", "daemon-pid"], env=env, capture_output=True, text=True, timeout=60, check=False).stdout.strip()
    subprocess.run(["lei", "daemon-kill"], env=env, capture_output=True, timeout=60, check=False)
    if pid.isdigit():
        _gone(int(pid))


def _gone(pid: int) -> None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return
    stat = Path(f"/proc/{pid}/stat")
    for _ in range(100):
        if not stat.exists() or stat.read_text().split(") ")[1].startswith("Z"):  # a zombie: gone, waiting for its parent
            return
        subprocess.run(["sleep", "0.1"], check=True)
    raise AssertionError(f"lei-daemon {pid} still running")


def test_lei_follows_a_real_inbox(tmp_path: Path, lei_env: dict[str, str]) -> None:
    inbox = make_inbox(tmp_path / "archive")
    for m in series("d", "PATCH", "mm: Follow me", 1):
        inbox.deliver(m)
    inbox.deliver(mail("other@example.org", "[PATCH] net: Not followed", "body\n"))
    subprocess.run(["lei", "add-external", str(tmp_path / "archive" / "test")], env=lei_env, check=True, capture_output=True, timeout=120)
    md = tmp_path / "md"
    lei.follow(md, "s:mm", env=lei_env)  # lei q
    assert sorted(msgids(poll(tmp_path, md))) == ["d.0@example.org", "d.1@example.org"]
    inbox.deliver(mail("d.2@example.org", "Re: [PATCH 1/1] mm: part 1", "a reply\n", reply_to="d.1@example.org"))
    lei.follow(md, "s:mm", env=lei_env)  # lei up
    assert msgids(poll(tmp_path, md)) == ["d.2@example.org"]
    assert poll(tmp_path, md) == []


def test_the_bot_follows_a_lei_search_and_reviews_its_series(tmp_path: Path, lei_env: dict[str, str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`[lists.NAME] lei = QUERY` instead of a mirror: the loop runs lei q, then lei up, reads the maildir in its home,
    and a series that came through the search is reviewed once; one the search leaves out is not."""
    for key, value in lei_env.items():
        monkeypatch.setenv(key, value)  # the bot's lei: the test's HOME and runtime directory
    inbox = make_inbox(tmp_path / "archive")
    for m in series("d", "PATCH", "mm: Follow me", 2):
        inbox.deliver(m)
    inbox.deliver(mail("other@example.org", "[PATCH] net: Not followed", "body\n"))
    subprocess.run(["lei", "add-external", str(tmp_path / "archive" / "test")], check=True, capture_output=True, timeout=120)
    cfg = tmp_path / "bot.toml"
    cfg.write_text('[bot]\nhome = "state"\n\n[lists.mine]\nlei = "s:mm"\nsettle = 0\n')
    lp = loop.Loop(config.load(cfg))
    try:
        assert loop.tick(lp, T) == ["mine/d.0@example.org: run static: ready"]
        (job,) = lp.bot.jobs.select()
        assert (job.list, job.stage) == ("mine", "static") and Path(job.payload["mbox"]).read_bytes().count(b"\nMessage-ID: <d.") == 3
        inbox.deliver(mail("d.3@example.org", "Re: [PATCH 1/2] mm: part 1", "a reply\n", reply_to="d.1@example.org"))
        assert loop.tick(lp, T + 60) == []  # lei up brought the reply: no new series, nothing queued again
        assert sorted(m.msgid for m in lp.store.messages("mine")) == [f"d.{k}@example.org" for k in range(4)]
    finally:
        lp.close()
    assert operate.text(operate.status(config.load(cfg))).splitlines()[1] == "list mine (lei search s:mm)"
