"""The kernel source a build compiles (boot and build stages): one private checkout per cache, switched between commits.

A kernel build needs every file, while the review's worktrees may be sparse. So the build
reads only the worktrees' commits and checks them out into CACHE/src with git's plumbing
(a private index, no registered worktree): switching base -> patched rewrites just the files
the series changed, and their new mtimes make the next `make` incremental.

A run killed during a checkout leaves the private index's lock file: the next checkout (under
the cache's lock, srctree.locked) removes it, and `read-tree --reset -u` rewrites the files
the killed one had half written (their stat data no longer match the index). None of these git
commands runs the user's hooks (reviewer.tree.git; the index is written in the user's repository's
name: post-index-change would run).
"""
from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from reviewer.tree.git import git

GIT_TIMEOUT = 600.0
SELFTESTS = "tools/testing/selftests"  # the kselftests of a kernel tree


def commit_of(wt: Path) -> str:
    """The commit to build for worktree WT: HEAD, or a snapshot commit when tracked files are modified."""
    snap = git(wt, "stash", "create", timeout=GIT_TIMEOUT).strip()
    return snap or git(wt, "rev-parse", "HEAD", timeout=GIT_TIMEOUT).strip()


def checkout(repo_git: Path, commit: str, src: Path) -> None:
    """Make SRC hold COMMIT of the repository whose (common) git directory is REPO_GIT, touching only
    the files that differ from what it holds now. The caller holds the cache's lock: a lock file of
    the index is a killed run's."""
    src.mkdir(parents=True, exist_ok=True)
    index = src.with_name(src.name + ".index")
    index.with_name(index.name + ".lock").unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index), "GIT_DIR": str(repo_git), "GIT_WORK_TREE": str(src)}
    if index.exists():
        git(src, "update-index", "-q", "--refresh", env=env, check=False, timeout=GIT_TIMEOUT)
    git(src, "read-tree", "--reset", "-u", commit, env=env, timeout=GIT_TIMEOUT)


@contextlib.contextmanager
def locked(cache: Path) -> Iterator[None]:
    """One review at a time per cache: the checkout and build directories are shared (boot and build stages)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield
