"""The kernel source a boot build compiles: one private checkout per cache, switched between commits.

A kernel build needs every file, while the review's worktrees may be sparse. So the build
reads only the worktrees' commits and checks them out into CACHE/src with git's plumbing
(a private index, no registered worktree): switching base -> patched rewrites just the files
the series changed, and their new mtimes make the next `make` incremental.

A run killed during a checkout leaves the private index's lock file: the next checkout (under
the cache's lock, boot.runner._locked) removes it, and `read-tree --reset -u` rewrites the files
the killed one had half written (their stat data no longer match the index). None of these git
commands runs the user's hooks (the index is written in the user's repository's name:
post-index-change would run).
"""
from __future__ import annotations

from pathlib import Path

from reviewer.proc import run

GIT_TIMEOUT = 600.0
# As worktree.NO_HOOKS (a stage's package does not import another's): no hook, no fsmonitor daemon of the user's.
NO_HOOKS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "maintenance.auto=false")


def commit_of(wt: Path) -> str:
    """The commit to build for worktree WT: HEAD, or a snapshot commit when tracked files are modified."""
    snap = run(["git", "-C", str(wt), *NO_HOOKS, "stash", "create"], timeout=GIT_TIMEOUT).stdout.strip()
    return snap or run(["git", "-C", str(wt), "rev-parse", "HEAD"], timeout=GIT_TIMEOUT).stdout.strip()


def git_dir(wt: Path) -> Path:
    out = run(["git", "-C", str(wt), "rev-parse", "--path-format=absolute", "--git-common-dir"], timeout=GIT_TIMEOUT)
    return Path(out.stdout.strip())


def checkout(repo_git: Path, commit: str, src: Path) -> None:
    """Make SRC hold COMMIT, touching only the files that differ from what it holds now.
    The caller holds the cache's lock: a lock file of the index is a killed run's."""
    src.mkdir(parents=True, exist_ok=True)
    index = src.with_name(src.name + ".index")
    index.with_name(index.name + ".lock").unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index), "GIT_DIR": str(repo_git), "GIT_WORK_TREE": str(src)}
    git = ["git", "-C", str(src), *NO_HOOKS]
    if index.exists():
        run([*git, "update-index", "-q", "--refresh"], env=env, check=False, timeout=GIT_TIMEOUT)
    run([*git, "read-tree", "--reset", "-u", commit], env=env, timeout=GIT_TIMEOUT)
