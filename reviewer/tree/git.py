"""The one git helper: every git command of the tool runs through git() here, without the user's hooks.

LC_ALL=C: git's messages are read ("Applying:", "Falling back", "error: patch failed:").
The user's repository lends our worktrees its hooks (post-checkout, reference-transaction,
post-index-change, the am hooks...) and its config: none of the user's programs run for a series
under review. hooksPath=/dev/null: no hook is found there (https://git-scm.com/docs/githooks).
No fsmonitor daemon is started for a worktree that is about to go, and `git am` does not start
`git maintenance run --auto` (a gc of the user's repository, and its pre-auto-gc hook).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from reviewer.proc import Completed, run

ENV = {"GIT_COMMITTER_NAME": "reviewer", "GIT_COMMITTER_EMAIL": "reviewer@localhost", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
NO_HOOKS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "maintenance.auto=false")
TIMEOUT = 300.0


def git(repo: Path, *args: str, check: bool = True, input: bytes | None = None, timeout: float = TIMEOUT,
        env: Mapping[str, str] | None = None) -> str:
    """`git -C REPO ARGS` without the user's hooks; its stdout. A failure raises CommandError when CHECK."""
    return call(repo, *args, check=check, input=input, timeout=timeout, env=env).stdout


def call(repo: Path, *args: str, check: bool = False, input: str | bytes | None = None, timeout: float = TIMEOUT,
         env: Mapping[str, str] | None = None) -> Completed:
    """As git(), for a caller that reads the exit status (`git grep`: 1 is no match)."""
    return run(["git", "-C", str(repo), *NO_HOOKS, *args], env={**ENV, **(env or {})}, input=input, check=check, timeout=timeout)


def ok(repo: Path, *args: str) -> bool:
    """Whether `git ARGS` succeeds in REPO."""
    return call(repo, *args).returncode == 0


def common_dir(tree: Path) -> Path:
    """TREE's common git directory (where objects/ and worktrees/ are), absolute."""
    return Path(git(tree, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())


def git_dir(tree: Path) -> Path:
    """TREE's own git directory (a worktree's is under the common one's worktrees/), absolute."""
    return Path(git(tree, "rev-parse", "--absolute-git-dir").strip())


def is_git_tree(path: Path) -> bool:
    return ok(path, "rev-parse", "--git-dir")


def has_commit(tree: Path, rev: str) -> bool:
    return ok(tree, "cat-file", "-e", f"{rev}^{{commit}}")
