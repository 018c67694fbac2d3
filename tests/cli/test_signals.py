"""SIGTERM and SIGHUP end a run as Ctrl-C does (exit 143, 129); a run killed outright is cleaned up by the next."""
from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from bench._procs import our_worktrees, processes_in, registrations_of
from reviewer.run import ending
from tests.cli.interrupting import (  # noqa: F401 (reaper: an autouse fixture)
    SIGNALS,
    applying,
    gone,
    reaper,
    start,
    started,
    wait_until,
)
from tests.cli.test_interrupt import DEMO, _long_series, _state, _stubborn_series
from tests.conftest import git


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_during_apply(name: str, kernel_repo: Path, tmp_path: Path) -> None:
    mbox = tmp_path / "long.mbox"
    _long_series(kernel_repo, mbox)
    before = _state(kernel_repo)
    tmp = tmp_path / "tmp"
    run = start(mbox, "--tree", kernel_repo, "--format", "json", tmp=tmp)
    wait_until(run, lambda: applying(tmp, _cache()), what="git am")
    run.send(SIGNALS[name])
    rc, _ = run.finish()
    assert rc == 128 + SIGNALS[name], run.stderr
    assert run.stderr.strip() == f"review: interrupted ({name}), cleaning up"
    assert processes_in(tmp) == []  # no git am (or its children) left running in a worktree
    assert _state(kernel_repo) == before
    assert not (kernel_repo / ".git" / "worktrees").exists()
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_during_a_selftest(name: str, kernel_repo: Path, tmp_path: Path) -> None:
    mbox = _stubborn_series(kernel_repo, tmp_path / "s.mbox")
    before = _state(kernel_repo)
    tmp = tmp_path / "tmp"
    run = start(mbox, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday", "--format", "json", tmp=tmp)
    wait_until(run, lambda: started(tmp), what="the selftest")
    run.send(SIGNALS[name])
    rc, took = run.finish()
    assert rc == 128 + SIGNALS[name], run.stderr
    assert took < ending.GRACE + 4, took
    assert processes_in(tmp) == []  # the test that ignores SIGTERM was killed, not orphaned
    assert _state(kernel_repo) == before
    assert list(tmp.iterdir()) == []


def _cache() -> Path:
    """Where the cached worktrees' shadow repository lives (the private HOME's XDG cache)."""
    return Path(os.environ["XDG_CACHE_HOME"])


def test_a_run_killed_outright_is_cleaned_up_by_the_next(kernel_repo: Path, tmp_path: Path) -> None:
    """SIGKILL: no clean-up at all. The next run finds the run's temporary directory (its worktree and
    shadow repository in it; nothing in the tree) by its owner's name, sees that owner gone, removes
    it and says so in one line."""
    mbox = tmp_path / "long.mbox"
    _long_series(kernel_repo, mbox)
    before = _state(kernel_repo)
    tmp = tmp_path / "tmp"
    killed = start(mbox, "--tree", kernel_repo, "--format", "json", tmp=tmp)
    wait_until(killed, lambda: applying(tmp, _cache()), what="git am")
    killed.send(signal.SIGKILL)
    killed.finish()
    assert gone(lambda: processes_in(tmp)) == []  # git am, orphaned, finishes on its own
    assert our_worktrees(kernel_repo, tmp) and not registrations_of(kernel_repo, killed.proc.pid)  # left behind, in TMPDIR only
    after = start(DEMO, "--tree", kernel_repo, "--no-tests", "--format", "json", tmp=tmp)
    rc, _ = after.finish()
    assert rc == 0, after.stderr
    (line,) = after.stderr.splitlines()
    assert re.fullmatch(rf"review: removed what an interrupted run \(pid {killed.proc.pid}\) left behind: .*1 temporary directory",
                        line), line
    assert _state(kernel_repo) == before
    assert not (kernel_repo / ".git" / "worktrees").exists()
    assert list(tmp.iterdir()) == []


def test_a_signal_while_a_cached_worktree_is_in_use(kernel_repo: Path, tmp_path: Path) -> None:
    """git config reviewer.reuseWorktrees: the slot is left as the signal found it (no slow reset on the way
    out) and the next review resets it on entry (am --abort, checkout -f, clean)."""
    mbox = tmp_path / "long.mbox"
    _long_series(kernel_repo, mbox)
    git(kernel_repo, "config", "reviewer.reuseWorktrees", "true")
    tmp = tmp_path / "tmp"
    run = start(mbox, "--tree", kernel_repo, "--format", "json", tmp=tmp)
    wait_until(run, lambda: applying(tmp, _cache()), what="git am")
    run.send(signal.SIGTERM)
    rc, _ = run.finish()
    assert rc == 143, run.stderr
    assert processes_in(tmp) == [] and list(tmp.iterdir()) == []
    after = start(mbox, "--tree", kernel_repo, "--format", "json", "--no-cache", tmp=tmp)
    rc, _ = after.finish()
    assert rc == 0, after.stderr
    assert list(tmp.iterdir()) == []
