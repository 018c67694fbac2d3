"""Ctrl-C: said at once, children stopped, worktrees gone, exit 130; a second Ctrl-C leaves only what the next run removes."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from bench._procs import our_worktrees, processes_in
from reviewer.errors import ExitStatus
from reviewer.run import ending
from tests.cli.interrupting import STUBBORN, VDSO, applying, reaper, start, started, wait_until  # noqa: F401 (reaper: an autouse fixture)
from tests.conftest import SERIES, git

PATCHES = 120
DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"


def _cache() -> Path:
    """Where the cached worktrees' shadow repository lives (the private HOME's XDG cache)."""
    return Path(os.environ["XDG_CACHE_HOME"])


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


def _stubborn_series(repo: Path, out: Path) -> Path:
    """A series whose vdso_test_gettimeofday ignores SIGTERM and never ends."""
    git(repo, "checkout", "-q", "-b", "stubborn")
    (repo / VDSO / "vdso_test_gettimeofday.c").write_text(STUBBORN)
    git(repo, "commit", "-q", "-s", "-am", "selftests/vDSO: Outlive SIGTERM")
    out.write_text(git(repo, "format-patch", "--stdout", "--base=HEAD~1", "HEAD~1"))
    git(repo, "checkout", "-q", "master")
    git(repo, "branch", "-q", "-D", "stubborn")
    return out


def _state(repo: Path) -> list[str]:
    return [git(repo, *a) for a in (("status", "--porcelain"), ("branch", "-a"), ("stash", "list"), ("worktree", "list"))]


def test_ctrl_c_during_apply(kernel_repo: Path, tmp_path: Path) -> None:
    mbox = tmp_path / "long.mbox"
    _long_series(kernel_repo, mbox)
    before = _state(kernel_repo)
    tmp = tmp_path / "tmp"
    run = start(mbox, "--tree", kernel_repo, "--format", "json", tmp=tmp)
    wait_until(run, lambda: bool(our_worktrees(kernel_repo, tmp)), what="the worktree")
    wait_until(run, lambda: applying(tmp, _cache()), what="git am")
    run.send(signal.SIGINT)
    rc, _ = run.finish()
    assert rc == ExitStatus.INTERRUPTED, run.stderr
    assert run.stderr.strip() == "review: interrupted, cleaning up"
    assert _state(kernel_repo) == before
    assert list(tmp.iterdir()) == []


def test_the_first_ctrl_c_is_said_at_once_and_a_stubborn_test_is_killed(kernel_repo: Path, tmp_path: Path) -> None:
    mbox = _stubborn_series(kernel_repo, tmp_path / "s.mbox")
    before = _state(kernel_repo)
    tmp = tmp_path / "tmp"
    run = start(mbox, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday", "--format", "json", tmp=tmp)
    wait_until(run, lambda: started(tmp), what="the selftest")
    run.send(signal.SIGINT)
    said = run.line("review: interrupted, cleaning up") - run.sent[0]
    rc, took = run.finish()
    assert rc == ExitStatus.INTERRUPTED, run.stderr
    assert said < 0.5, said  # before the test is given up on (it ignores the SIGTERM for ending.GRACE)
    assert took < ending.GRACE + 4, took
    assert processes_in(tmp) == []
    assert _state(kernel_repo) == before
    assert list(tmp.iterdir()) == []


def test_a_second_ctrl_c_leaves_only_what_the_next_run_removes(kernel_repo: Path, tmp_path: Path) -> None:
    mbox = _stubborn_series(kernel_repo, tmp_path / "s.mbox")
    before = _state(kernel_repo)
    tmp = tmp_path / "tmp"
    run = start(mbox, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday", "--format", "json", tmp=tmp)
    wait_until(run, lambda: started(tmp), what="the selftest")
    run.send(signal.SIGINT)
    run.line("review: interrupted, cleaning up")
    run.send(signal.SIGINT)  # while the first clean-up waits for the test that ignores SIGTERM
    rc, took = run.finish()
    assert rc == ExitStatus.INTERRUPTED, run.stderr
    assert "review: interrupted again: stopping now; the next run removes what is left" in run.stderr
    assert took < ending.GRACE + 4, took
    assert processes_in(tmp) == []  # the stubborn test was killed at the second Ctrl-C, not left running
    after = start(DEMO, "--tree", kernel_repo, "--no-tests", "--format", "json", tmp=tmp)
    rc, _ = after.finish()
    assert rc == ExitStatus.OK, after.stderr
    assert _state(kernel_repo) == before
    assert not (kernel_repo / ".git" / "worktrees").exists()
    assert list(tmp.iterdir()) == []


def test_two_quick_ctrl_cs_exit_130_whenever_the_second_comes(kernel_repo: Path, tmp_path: Path) -> None:
    """The second Ctrl-C may come during the first one's clean-up or just after it, as the process exits:
    either way the status is 130 (not a KeyboardInterrupt's death by SIGINT) and nothing stays."""
    mbox = tmp_path / "long.mbox"
    _long_series(kernel_repo, mbox)
    before = _state(kernel_repo)
    tmp = tmp_path / "tmp"
    for gap in (0.0, 0.03, 0.1, 0.3):
        run = start(mbox, "--tree", kernel_repo, "--format", "json", tmp=tmp)
        wait_until(run, lambda: applying(tmp, _cache()), what="git am")
        run.send(signal.SIGINT)
        time.sleep(gap)
        run.send(signal.SIGINT)
        rc, _ = run.finish()
        assert rc == ExitStatus.INTERRUPTED, (gap, rc, run.stderr)
    after = start(DEMO, "--tree", kernel_repo, "--no-tests", "--format", "json", tmp=tmp)
    assert after.finish()[0] == ExitStatus.OK, after.stderr
    assert _state(kernel_repo) == before
    assert list(tmp.iterdir()) == []
