"""tree/repo.top_of (GitPython) against git's own answer, `git rev-parse --show-toplevel`, wherever a user may run."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reviewer.tree.repo import top_of


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False)


def _oracle(path: Path) -> Path | None:
    done = _git(path, "rev-parse", "--show-toplevel")
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    repo = tmp_path / "repo"
    (repo / "a" / "b").mkdir(parents=True)
    _git(tmp_path, "init", "-q", str(repo))
    (repo / "a" / "b" / "f").write_text("x\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-qm", "one")
    _git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "linked"))
    _git(tmp_path, "init", "-q", "--bare", str(tmp_path / "bare.git"))
    (tmp_path / "outside").mkdir()
    (tmp_path / "link").symlink_to(repo / "a")
    return {"top": repo, "subdirectory": repo / "a" / "b", "linked worktree": tmp_path / "linked" / "a",
            "git directory": repo / ".git" / "refs", "bare repository": tmp_path / "bare.git",
            "no repository": tmp_path / "outside", "symlink into it": tmp_path / "link"}


def test_the_top_is_where_git_says_it_is(places: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(places["top"].parent))  # the test's own checkout is no answer
    answers = {name: (top_of(path), _oracle(path)) for name, path in places.items()}
    resolved = {name: tuple(p.resolve() if p else None for p in pair) for name, pair in answers.items()}
    assert {name: mine for name, (mine, _) in resolved.items()} == {name: git for name, (_, git) in resolved.items()}
    assert resolved["linked worktree"][0] == (places["top"].parent / "linked").resolve()
    assert resolved["no repository"][0] is None and resolved["bare repository"][0] is None
