"""selftests/trees.py: the base's worktree is made once, on first use, with the kept build put into it then.

Real git: a Later's tree id is its commit's, as the kept builds' key needs; its opener makes a real worktree.
"""
from __future__ import annotations

import threading
from pathlib import Path

from reviewer.selftests import kept
from reviewer.selftests.trees import Later, path
from tests.conftest import git


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    (repo / "a.c").write_text("int a;\n")
    git(repo, "add", "a.c")
    git(repo, "commit", "-q", "-m", "base")
    return repo, git(repo, "rev-parse", "HEAD").strip()


def test_the_tree_id_is_the_commits_and_nothing_is_made_until_asked(tmp_path: Path) -> None:
    repo, base = _repo(tmp_path)
    opened: list[Path] = []

    def opener() -> Path:
        wt = tmp_path / f"wt{len(opened)}"
        git(repo, "worktree", "add", "-q", "--detach", str(wt), base)
        opened.append(wt)
        return wt

    later = Later(base, repo, opener)
    assert later.tree_id() == kept.tree_of(repo) == git(repo, "rev-parse", "HEAD^{tree}").strip()
    filled: list[Path] = []
    later.then(lambda wt: (filled.append(wt), (wt / "built").write_text("kept\n")))
    assert not later.made and opened == [] and filled == []
    got: list[Path] = []
    threads = [threading.Thread(target=lambda: got.append(path(later))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert opened == [tmp_path / "wt0"] and got == opened * 4 and filled == opened  # once, whoever asked first
    assert later.made and (opened[0] / "built").read_text() == "kept\n" and (opened[0] / "a.c").is_file()
    assert path(tmp_path) == tmp_path  # a worktree already made is itself
