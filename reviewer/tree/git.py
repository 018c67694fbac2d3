"""The one git helper: every git command of the tool runs through git() here, without the user's hooks.

LC_ALL=C: git's messages are read ("Applying:", "Falling back", "error: patch failed:").
The user's repository lends our worktrees its hooks (post-checkout, reference-transaction,
post-index-change, the am hooks...) and its config: none of the user's programs run for a series
under review. hooksPath=/dev/null: no hook is found there (https://git-scm.com/docs/githooks).
No fsmonitor daemon is started for a worktree that is about to go, and `git am` does not start
`git maintenance run --auto` (a gc of the user's repository, and its pre-auto-gc hook).
The committer identity is ours: `git am` and `git stash create` write commits even where the
user has set none.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from reviewer.proc import Completed, output_bytes, run

ENV = {"GIT_COMMITTER_NAME": "reviewer", "GIT_COMMITTER_EMAIL": "reviewer@localhost", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
NO_HOOKS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "maintenance.auto=false")
TIMEOUT = 300.0


def git(repo: Path, *args: str, check: bool = True, input: str | bytes | None = None, timeout: float = TIMEOUT,
        env: Mapping[str, str] | None = None, user_hooks: bool = False, prompt: bool = False) -> str:
    """`git -C REPO ARGS` without the user's hooks; its stdout. A failure raises CommandError when CHECK."""
    return call(repo, *args, check=check, input=input, timeout=timeout, env=env, user_hooks=user_hooks, prompt=prompt).stdout


def call(repo: Path, *args: str, check: bool = False, input: str | bytes | None = None, timeout: float = TIMEOUT,
         env: Mapping[str, str] | None = None, user_hooks: bool = False, prompt: bool = False) -> Completed:
    """As git(), for a caller that reads the exit status (`git grep`: 1 is no match).

    USER_HOOKS: the user's core.hooksPath stays in force, for a command that asks where the user's
    hooks are (`rev-parse --git-path hooks/pre-push`); it runs no hook. PROMPT: git may ask on the
    terminal (`git credential fill` asks for a password, as git send-email lets it)."""
    base = {k: v for k, v in ENV.items() if not (prompt and k == "GIT_TERMINAL_PROMPT")}
    return run(["git", "-C", str(repo), *_options(user_hooks=user_hooks), *args], env={**base, **(env or {})}, input=input, check=check,
               timeout=timeout)


def output(repo: Path, *args: str, input: bytes = b"", timeout: float = TIMEOUT) -> bytes:
    """As git(), for output read as bytes (`git cat-file --batch`: its sizes count bytes; a blob as it is), under ENV."""
    return output_bytes(["git", "-C", str(repo), *NO_HOOKS, *args], input=input, timeout=timeout, env=ENV)


def read(repo: Path, *args: str, timeout: float = TIMEOUT, user_hooks: bool = False) -> str:
    """git's stdout without its surrounding white space; "" when git fails (an unset key, an unknown revision)."""
    done = call(repo, *args, timeout=timeout, user_hooks=user_hooks)
    return done.stdout.strip() if done.returncode == 0 else ""


def config_value(repo: Path, key: str) -> str:
    """`git config --get KEY` as read in REPO (any directory: outside a repository, the user's config); "" when unset."""
    return read(repo, "config", "--get", key, timeout=10)


def ok(repo: Path, *args: str, timeout: float = TIMEOUT) -> bool:
    """Whether `git ARGS` succeeds in REPO."""
    return call(repo, *args, timeout=timeout).returncode == 0


def common_dir(tree: Path) -> Path:
    """TREE's common git directory (where objects/ and worktrees/ are), absolute."""
    return Path(git(tree, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())


def git_dir(tree: Path) -> Path:
    """TREE's own git directory (a worktree's is under the common one's worktrees/), absolute."""
    return Path(git(tree, "rev-parse", "--absolute-git-dir").strip())


def is_git_tree(path: Path) -> bool:
    return ok(path, "rev-parse", "--git-dir")


def has_commit(tree: Path, rev: str, timeout: float = TIMEOUT) -> bool:
    return ok(tree, "cat-file", "-e", f"{rev}^{{commit}}", timeout=timeout)


def _options(*, user_hooks: bool) -> tuple[str, ...]:
    return NO_HOOKS[2:] if user_hooks else NO_HOOKS  # the user's hooks path kept; still no fsmonitor, no auto maintenance
