"""Logs and unsent mail are the user's only: directories 700, files 600, never written through a symlink."""
from __future__ import annotations

import os
import stat
from email.message import EmailMessage
from pathlib import Path

import pytest

from reviewer import ktap, private
from reviewer.model import TestRun
from reviewer.report import send as mail
from reviewer.selftests.stage import save_logs


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_made_directories_are_700_and_files_600_whatever_the_umask(tmp_path: Path) -> None:
    before = _mode(tmp_path)
    old = os.umask(0o002)
    try:
        deep = private.make_dir(tmp_path / "a" / "b" / "c")
        private.write_private(deep / "log", b"secret\n")
    finally:
        os.umask(old)
    assert [_mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", deep)] == [0o700] * 3
    assert _mode(deep / "log") == 0o600 and _mode(tmp_path) == before  # a parent that was there is left as it was


def test_a_file_that_was_there_becomes_600_and_a_symlink_is_refused(tmp_path: Path) -> None:
    old = tmp_path / "old.log"
    old.write_text("before\n")
    old.chmod(0o644)
    private.write_private(old, b"after\n")
    assert _mode(old) == 0o600 and old.read_text() == "after\n"
    target = tmp_path / "elsewhere"
    target.write_text("not ours\n")
    (tmp_path / "link.log").symlink_to(target)
    with pytest.raises(OSError):
        private.write_private(tmp_path / "link.log", b"through the link\n")
    assert target.read_text() == "not ours\n"


def test_selftest_logs_are_private(tmp_path: Path) -> None:
    runs = [TestRun("vDSO:t", "patched", "plain", ktap.Result.PASS, 0.1, log="# read /etc/shadow: root:$y$...\n")]
    logs = tmp_path / "run" / "selftests"
    assert save_logs(runs, logs) == 1
    (saved,) = logs.iterdir()
    assert (_mode(tmp_path / "run"), _mode(logs), _mode(saved)) == (0o700, 0o700, 0o600)


def test_unsent_mail_is_private() -> None:
    msg = EmailMessage()
    msg["Subject"] = "Re: [PATCH] x"
    msg.set_content("review of unpublished work\n")
    path = mail.save_unsent(msg)
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
    assert "review of unpublished work" in path.read_text()
