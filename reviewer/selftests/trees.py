"""The trees the selftest stage builds and runs in; the base's worktree is made only when something needs its files.

A review whose base side is all kept (the base's selftest build, selftests/kept.py, and in guests its results,
baseside.py) reads nothing of the base's files: its run lists come with the kept build, its rows with the kept
results. Making the worktree anyway cost, on the 6.12 tree, a sparse checkout of some 20,000 files, widening it to
the guest's arch/ and removing it again: 3-8 s, as much as the rest of a warm review on some guests. So the base
is a Later: its key comes from its commit's tree id, and its worktree is made (and the kept build put into it) the
first time a boot, a host run or a benchmark asks for its path.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from reviewer.tree.git import git


class Later:
    """A worktree of COMMIT, made by OPENER on first use; REPO is a repository that holds the commit."""

    def __init__(self, commit: str, repo: Path, opener: Callable[[], Path]) -> None:
        self.commit = commit
        self.repo = repo
        self._opener = opener
        self._fill: Callable[[Path], None] | None = None
        self._made: Path | None = None
        self._lock = threading.Lock()  # a guest thread and the stage's own may both ask

    def tree_id(self) -> str:
        return git(self.repo, "rev-parse", f"{self.commit}^{{tree}}").strip()

    def then(self, fill: Callable[[Path], None]) -> None:
        """FILL (a kept build restored into it) runs on the worktree once it is made."""
        self._fill = fill

    @property
    def made(self) -> bool:
        return self._made is not None

    def path(self) -> Path:
        with self._lock:
            if self._made is None:
                made = self._opener()
                if self._fill is not None:
                    self._fill(made)
                self._made = made
            return self._made


Tree = Path | Later


def path(tree: Tree) -> Path:
    """TREE's worktree, made now if it is a Later not made yet."""
    return tree if isinstance(tree, Path) else tree.path()
