"""None of the user's git hooks runs for the tool's worktrees: not on adding, checking out, applying
(`git am`: applypatch-msg, pre-applypatch, post-applypatch), failing and resetting, reusing a cached
worktree, the boot stage's source checkout, nor the whole review with selftests. Nor the user's
fsmonitor hook, nor an automatic gc of the user's repository after `git am`.

Each hook appends its name to a file outside the repository; after the review the file must not exist.
(Without NO_HOOKS, post-checkout, reference-transaction and post-index-change run.)
"""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.apply import worktree
from reviewer.kernel import srctree
from reviewer.tree.git import common_dir
from tests.conftest import SERIES, git
from tests.helpers import review
from tests.unit.apply.test_worktree_sparse import _series, _touched, repo  # noqa: F401 (the repo fixture)

HOOKS = ("post-checkout", "reference-transaction", "post-index-change", "applypatch-msg", "pre-applypatch", "post-applypatch",
         "post-rewrite", "pre-auto-gc", "pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-merge")


def _hooked(tree: Path, fired: Path) -> None:
    """Every hook of TREE, and its fsmonitor hook, appends its name to FIRED; gc --auto would start at once."""
    hooks = tree / ".git" / "hooks"
    for name in (*HOOKS, "fsmonitor"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> {fired}\n")
        (hooks / name).chmod(0o755)
    git(tree, "config", "core.fsmonitor", str(hooks / "fsmonitor"))
    git(tree, "config", "gc.auto", "1")
    fired.unlink(missing_ok=True)


def test_no_hook_runs_in_the_worktrees(repo: Path, tmp_path: Path) -> None:  # noqa: F811
    series = _series(repo, tmp_path)
    fired = tmp_path / "fired"
    _hooked(repo, fired)
    with worktree.isolated(repo, "base", _touched(series), build=False) as narrow:
        assert [r.status for r in worktree.apply_series(narrow, series)] == ["applied"] * len(series.patches)
    with worktree.isolated(repo, "conflict-base") as full:  # a patch fails: am --quit, reset --hard
        assert worktree.apply_series(full, series)[-1].status == "failed"
        commit = srctree.commit_of(full)
        srctree.checkout(common_dir(full), commit, tmp_path / "boot" / "src")  # the shadow, as boot.runner does
    for base in ("base", "threeway-base"):
        with worktree.cached(repo, base, _touched(series), tmp_path / "cache") as slot:
            worktree.apply_series(slot, series)
    assert not fired.exists(), fired.read_text()


@pytest.mark.parametrize("reuse", [False, True])
def test_no_hook_runs_in_a_review_with_selftests(*, reuse: bool, kernel_repo: Path, tmp_path: Path) -> None:
    fired = tmp_path / "fired"
    if reuse:
        git(kernel_repo, "config", "reviewer.reuseWorktrees", "true")
    _hooked(kernel_repo, fired)
    result = review(SERIES / "loongarch-vdso-getrandom-v4.mbox", "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday",
                    "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == 0, result.stderr
    assert {r["tree"] for r in result.json()["selftests"]} == {"base", "patched"}  # two worktrees, both built and run
    assert not fired.exists(), fired.read_text()
    result.assert_nothing_left()
