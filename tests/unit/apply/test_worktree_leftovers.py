"""What a killed run leaves is recognised by its owner's name and removed by the next run; nobody else's is.

Also: a cached worktree slot and the boot stage's source checkout get over the lock files a
killed git leaves, and the first signal of a session stops the children and removes the run's
temporary directory.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from reviewer.apply import worktree
from reviewer.kernel import srctree
from reviewer.run import ending, leftovers
from tests.conftest import git


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "linux"
    git(tmp_path, "init", "-q", str(repo))
    (repo / "a.c").write_text("one\n")
    (repo / "b.c").write_text("same\n" * 100)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    git(repo, "tag", "one")
    (repo / "a.c").write_text("two\n")
    git(repo, "commit", "-qam", "two")
    git(repo, "tag", "two")
    return repo


def _named(where: Path, kind: str, owner: leftovers.Owner) -> Path:
    path = where / f"reviewer-{kind}-{owner}-x1y2z3"
    path.mkdir()
    (path / "file").write_text("left\n")
    return path


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_names_carry_the_pid_the_start_time_and_the_tag(tmp_path: Path) -> None:
    made = leftovers.make("wt", tmp_path)
    assert made.is_dir() and list(made.iterdir()) == []
    assert leftovers.owner_of(made.name) == ("wt", leftovers.me())
    assert not leftovers.is_stale(leftovers.me())
    assert leftovers.owner_of("reviewer-wt-abc") is None and leftovers.owner_of("reviewer-wt-1-2-cafe-x") is None


def test_only_what_runs_that_are_gone_left_is_swept(tmp_path: Path) -> None:
    me = leftovers.me()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        start = leftovers.start_time(sleeper.pid)
        assert start is not None
        alive = leftovers.Owner(sleeper.pid, start, me.tag)
        keep = [_named(tmp_path, "tmp", me), _named(tmp_path, "wt", alive),
                _named(tmp_path, "trash", leftovers.Owner(_dead_pid(), 5, "0badf00d"))]  # another boot or PID namespace: not ours to judge
        (tmp_path / "reviewer-wt-k2j3h4").mkdir()  # not named by us (an older version's): left alone
        gone = [_named(tmp_path, "tmp", leftovers.Owner(me.pid, me.start - 1, me.tag)),  # our pid, reused: its start differs
                _named(tmp_path, "wt", leftovers.Owner(_dead_pid(), me.start, me.tag)),
                _named(tmp_path, "trash", leftovers.Owner(_dead_pid(), 1, me.tag))]
        removed = leftovers.sweep_tmp(tmp_path)
        assert sorted(r.path for r in removed) == sorted(gone)
        assert [r.what for r in sorted(removed, key=lambda r: r.path.name)] == ["temporary directory", "trash", "worktree"]
        assert sorted(tmp_path.iterdir()) == sorted([*keep, tmp_path / "reviewer-wt-k2j3h4"])
        assert leftovers.sweep_tmp(tmp_path) == []
    finally:
        sleeper.kill()
        sleeper.wait()
    assert [r.path for r in leftovers.sweep_tmp(tmp_path)] == [keep[1]]  # its owner has ended now


def test_registrations_of_runs_that_are_gone_are_removed_and_nothing_else(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dead = leftovers.Owner(_dead_pid(), 1, leftovers.tag())
    stale = tmp / f"reviewer-wt-{dead}-aaaa"
    git(repo, "worktree", "add", "-q", "--detach", str(stale), "one")
    half = tmp / f"reviewer-wt-{dead}-bbbb"  # killed inside `git worktree add`: locked "initializing", no .git file yet
    git(repo, "worktree", "add", "-q", "--detach", str(half), "one")
    (half / ".git").unlink()
    (repo / ".git" / "worktrees" / half.name / "locked").write_text("initializing")
    live = leftovers.make("wt", tmp)
    git(repo, "worktree", "add", "-q", "--detach", str(live), "one")
    users = tmp_path / "users-own"
    git(repo, "worktree", "add", "-q", "--detach", str(users), "one")
    os.rename(users, tmp_path / "moved")  # prunable for git, but not ours to prune
    removed = leftovers.sweep_repo(repo / ".git")
    assert sorted(r.path.name for r in removed) == sorted([stale.name, half.name])
    assert leftovers.describe(removed) == (f"review: removed what an interrupted run (pid {dead.pid}) left behind: "
                                           f"2 worktrees (registered in {repo})")
    assert sorted(p.name for p in (repo / ".git" / "worktrees").iterdir()) == sorted([live.name, "users-own"])
    assert not stale.exists() and not half.exists() and live.is_dir()
    assert sorted(p.name for p in tmp.iterdir()) == [live.name]


def test_a_worktree_left_in_tmp_goes_with_its_registration(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dead = leftovers.Owner(_dead_pid(), 1, leftovers.tag())
    run_dir = _named(tmp, "tmp", dead)  # a killed session's directory, a worktree inside
    inside = run_dir / f"reviewer-wt-{dead}-cccc"
    git(repo, "worktree", "add", "-q", "--detach", str(inside), "one")
    alone = tmp / f"reviewer-wt-{dead}-dddd"  # a worktree made without a session, killed
    git(repo, "worktree", "add", "-q", "--detach", str(alone), "two")
    removed = leftovers.sweep_tmp(tmp)
    assert sorted((r.what, r.path.name) for r in removed) == [
        ("temporary directory", run_dir.name), ("worktree", inside.name), ("worktree", alone.name)]
    assert list(tmp.iterdir()) == [] and not (repo / ".git" / "worktrees").exists()
    assert git(repo, "worktree", "list").count("\n") == 1


def test_a_worktree_is_removed_at_once_and_deleted_in_the_background(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    wt = leftovers.make("wt", tmp_path)
    git(repo, "worktree", "add", "-q", "--detach", str(wt), "one")
    for i in range(300):
        (wt / f"build{i}.o").write_text("x")
    leftovers.drop_worktree(wt, repo / ".git", time.monotonic)  # a deadline already passed: wait for nothing
    assert not wt.exists()
    assert git(repo, "worktree", "list").count("\n") == 1
    assert not (repo / ".git" / "worktrees").exists()  # as git leaves it when its last worktree goes
    until = time.monotonic() + 30
    while leftovers.DELETERS and time.monotonic() < until:  # the background rm, not waited for by drop_worktree
        for pid in list(leftovers.DELETERS):
            if os.waitpid(pid, os.WNOHANG)[0]:
                leftovers.DELETERS.discard(pid)
        time.sleep(0.01)
    assert sorted(tmp_path.iterdir()) == [repo]


def test_a_cached_slot_gets_over_a_killed_git(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    with worktree.cached(repo, "one", None, tmp_path / "cache") as wt:
        admin = leftovers.admin_dir(wt)
    assert admin is not None
    (admin / "index.lock").write_text("")  # what a git killed with SIGKILL leaves
    with worktree.cached(repo, "two", None, tmp_path / "cache") as again:
        assert again == wt and (wt / "a.c").read_text() == "two\n"


def test_the_boot_source_checkout_gets_over_a_killed_checkout(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    src = tmp_path / "cache" / "src"
    srctree.checkout(repo / ".git", git(repo, "rev-parse", "one").strip(), src)
    # Killed inside the next checkout: the lock file stays, a file is half written, the index is the old one.
    (tmp_path / "cache" / "src.index.lock").write_text("")
    (src / "b.c").write_text("sa")
    (src / "a.c").write_text("tw")
    srctree.checkout(repo / ".git", git(repo, "rev-parse", "two").strip(), src)
    assert (src / "a.c").read_text() == "two\n" and (src / "b.c").read_text() == "same\n" * 100
    assert not (tmp_path / "cache" / "src.index.lock").exists()


def test_a_signal_in_a_session_stops_children_and_removes_the_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(ending, "GRACE", 0.2)
    said: list[str] = []
    before = signal.getsignal(signal.SIGTERM)
    child = None
    with pytest.raises(ending.Interrupted) as caught, ending.session(said.append) as state:
        inside = Path(tempfile.mkdtemp())
        assert inside.parent == state.run_dir and os.environ["TMPDIR"] == str(state.run_dir)
        child = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 30 & wait"])  # ignores SIGTERM, has a child of its own
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # not reached: the handler raises
    assert caught.value.signum == signal.SIGTERM and state.status == 143
    assert child is not None and child.wait(timeout=1) == -signal.SIGKILL
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) == before and tempfile.tempdir is None and os.environ["TMPDIR"] == str(tmp_path)
    assert said == []  # nothing was left to sweep
