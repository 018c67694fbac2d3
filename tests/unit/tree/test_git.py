"""Every git command goes through reviewer/tree/git.py, and none of them runs the user's hooks:
a repository whose every hook (and fsmonitor hook) appends its name to a file, read and written
through the migrated call sites; the file must not appear. (Before, the fixture tree's commits
ran post-commit and reference-transaction, and the checkpatch cache key's `git status` ran the
fsmonitor hook.) The two exceptions are parameters of the one helper, not second helpers."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer import config, hook
from reviewer.apply import base as apply_base
from reviewer.kernel import srctree
from reviewer.kernelscripts import cachekeys
from reviewer.model import Person, Series
from reviewer.report import send
from reviewer.series import prep, target
from reviewer.tree import git as tree_git
from reviewer.tree import plainrepo
from tests.conftest import git

HOOKS = ("post-checkout", "reference-transaction", "post-index-change", "pre-commit", "prepare-commit-msg", "commit-msg",
         "post-commit", "post-rewrite", "pre-auto-gc", "post-merge")


@pytest.fixture
def hooked(tmp_path: Path) -> tuple[Path, Path]:
    """(a repository with two commits whose hooks all write to FIRED, FIRED)."""
    repo, fired = tmp_path / "repo", tmp_path / "fired"
    repo.mkdir()
    git(repo, "init", "-q")
    for n in (1, 2):
        (repo / "f.c").write_text(f"int v{n};\n")
        git(repo, "add", "f.c")
        git(repo, "commit", "-q", "-m", f"f: {n}")
    hooks = repo / ".git" / "hooks"
    for name in (*HOOKS, "fsmonitor"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> {fired}\n")
        (hooks / name).chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hooks / "fsmonitor"))
    git(repo, "config", "gc.auto", "1")
    (repo / "new.c").write_text("int n;\n")  # untracked: `git status` has something to say
    return repo, fired


def test_no_call_site_runs_the_users_hooks(hooked: tuple[Path, Path], tmp_path: Path) -> None:
    repo, fired = hooked
    plainrepo.git(repo, "commit", "-q", "--no-verify", "--allow-empty", "-m", "empty")  # the fixture trees' commits
    state = cachekeys.tree_state(repo, ["f.c"])  # the checkpatch cache key: `git status`
    dirty = state["dirty"]
    assert isinstance(dirty, list) and [d[1] for d in dirty] == ["new.c"]
    series = Series("s", 1, "m@x", Person("A", "a@example.org"), None, 0, ())
    assert apply_base.choose_base(repo, series, "HEAD~1")[1] == "option"
    commit = srctree.commit_of(repo)
    srctree.checkout(tree_git.common_dir(repo), commit, tmp_path / "src")  # the boot stage's source checkout
    assert (tmp_path / "src" / "f.c").read_text() == "int v2;\n"
    msgs, _ = target.range_messages(repo, "HEAD~2..HEAD~1")  # git format-patch
    assert len(msgs) == 1
    assert prep.find(repo) is None and hook.pushes(repo, "origin", []) == []
    assert config.load(repo).rule_dirs == () and send.git_config(repo, "user.name") == ""
    assert not fired.exists(), fired.read_text()


def test_the_hooks_path_is_the_users_only_where_it_is_asked_for(hooked: tuple[Path, Path], tmp_path: Path) -> None:
    repo, fired = hooked
    git(repo, "config", "core.hooksPath", str(tmp_path / "my-hooks"))
    assert hook.hook_path(repo) == tmp_path / "my-hooks" / "pre-push"  # where `review install-hook` writes
    assert tree_git.read(repo, "rev-parse", "--git-path", "hooks/pre-push") == "/dev/null/pre-push"  # every other command
    assert tree_git.read(repo, "rev-parse", "--git-path", "hooks/pre-push", user_hooks=True) == str(tmp_path / "my-hooks" / "pre-push")
    assert not fired.exists()


def test_only_a_credential_request_may_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GIT_TERMINAL_PROMPT", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    # A helper that answers with what it was given: GIT_TERMINAL_PROMPT=0 would stop git asking for a password.
    git(repo, "config", "credential.helper", '!f() { echo "password=prompt-${GIT_TERMINAL_PROMPT-allowed}"; }; f')
    ask = "protocol=smtp\nhost=mail.example.org:465\nusername=u\n\n"
    assert "password=prompt-allowed" in tree_git.git(repo, "credential", "fill", input=ask, prompt=True)
    assert "password=prompt-0" in tree_git.git(repo, "credential", "fill", input=ask)
    transport = send.Transport(server="mail.example.org", port=465, encryption="ssl", user="u")
    assert send._credential(repo, "fill", transport, {})["password"] == "prompt-allowed"


def test_bytes_output_runs_under_the_same_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # git.output() (bytes) used to run without ENV: the user's identity and locale leaked into it.
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", str(repo))
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Somebody Else")
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    ident = tree_git.output(repo, "var", "GIT_COMMITTER_IDENT").decode()
    assert ident.startswith("reviewer <reviewer@localhost>")
    assert tree_git.git(repo, "var", "GIT_COMMITTER_IDENT").startswith("reviewer <reviewer@localhost>")
