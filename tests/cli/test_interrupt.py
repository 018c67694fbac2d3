"""Ctrl-C while the series is being applied: exit 130, worktree gone, the user's tree untouched."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from reviewer.errors import ExitStatus
from tests.conftest import git

PATCHES = 120


def _long_series(repo: Path, out: Path) -> None:
    """PATCHES small commits exported as one mbox, then dropped again from the branch."""
    git(repo, "checkout", "-q", "-b", "long")
    for i in range(PATCHES):
        (repo / "mm" / f"gen{i}.c").write_text(f"// SPDX-License-Identifier: GPL-2.0\nint gen{i};\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-s", "-m", f"mm: add gen{i}")
    out.write_text(git(repo, "format-patch", "--stdout", f"HEAD~{PATCHES}"))
    git(repo, "checkout", "-q", "master")
    git(repo, "branch", "-q", "-D", "long")


def test_ctrl_c_during_apply(kernel_repo: Path, tmp_path: Path) -> None:
    mbox = tmp_path / "long.mbox"
    _long_series(kernel_repo, mbox)
    state = lambda: [git(kernel_repo, *a) for a in (("status", "--porcelain"), ("branch", "-a"), ("stash", "list"))]  # noqa: E731
    before = state()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reviewer", str(mbox), "--tree", str(kernel_repo), "--format", "json"],
        env={**os.environ, "TMPDIR": str(tmp)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while git(kernel_repo, "worktree", "list").count("\n") < 2:
        assert proc.poll() is None and time.monotonic() < deadline, "the worktree never appeared"
        time.sleep(0.02)
    time.sleep(0.3)  # well inside the git am loop
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == ExitStatus.INTERRUPTED, err
    assert err.decode().strip() == "review: interrupted"
    assert git(kernel_repo, "worktree", "list").count("\n") == 1
    assert state() == before
    assert list(tmp.iterdir()) == []
