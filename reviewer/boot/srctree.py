"""The kernel source a boot build compiles: one private checkout per cache, switched between commits.

A kernel build needs every file, while the review's worktrees may be sparse. So the build
reads only the worktrees' commits and checks them out into CACHE/src with git's plumbing
(a private index, no registered worktree): switching base -> patched rewrites just the files
the series changed, and their new mtimes make the next `make` incremental.
"""
from __future__ import annotations

from pathlib import Path

from reviewer.proc import run

GIT_TIMEOUT = 600.0


def commit_of(wt: Path) -> str:
    """The commit to build for worktree WT: HEAD, or a snapshot commit when tracked files are modified."""
    snap = run(["git", "-C", str(wt), "stash", "create"], timeout=GIT_TIMEOUT).stdout.strip()
    return snap or run(["git", "-C", str(wt), "rev-parse", "HEAD"], timeout=GIT_TIMEOUT).stdout.strip()


def git_dir(wt: Path) -> Path:
    out = run(["git", "-C", str(wt), "rev-parse", "--path-format=absolute", "--git-common-dir"], timeout=GIT_TIMEOUT)
    return Path(out.stdout.strip())


def checkout(repo_git: Path, commit: str, src: Path) -> None:
    """Make SRC hold COMMIT, touching only the files that differ from what it holds now."""
    src.mkdir(parents=True, exist_ok=True)
    index = src.with_name(src.name + ".index")
    env = {"GIT_INDEX_FILE": str(index), "GIT_DIR": str(repo_git), "GIT_WORK_TREE": str(src)}
    git = ["git", "-C", str(src)]
    if index.exists():
        run([*git, "update-index", "-q", "--refresh"], env=env, check=False, timeout=GIT_TIMEOUT)
    run([*git, "read-tree", "--reset", "-u", commit], env=env, timeout=GIT_TIMEOUT)
