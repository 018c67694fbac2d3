"""Which git work tree a directory is in, found by GitPython (parent directories, a linked
worktree's `.git` file, GIT_DIR as git reads them), without a git process.

Its callers import this module where they need it: GitPython costs 65-100 ms of start-up
(docs/design.md, "Imports kept lazy"). Git's own commands, and config as b4 reads it, stay in
reviewer/tree/git.py.
"""
from __future__ import annotations

from pathlib import Path

import git


def top_of(path: Path) -> Path | None:
    """The top of the work tree PATH is in; None outside one (or in a bare repository, or in a .git directory)."""
    where = path.resolve()  # as git's chdir() does: a symbolic link's parents are not the tree's
    try:
        repo = git.Repo(where, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    top = repo.working_tree_dir
    if top is None or Path(repo.git_dir) in (where, *where.parents):
        return None
    return Path(top)
