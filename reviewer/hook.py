"""The authors' pre-push hook: install, uninstall, and turn git's pre-push input into ranges.

git runs `.git/hooks/pre-push REMOTE URL` with one line per ref on stdin:
`<local ref> <local sha> <remote ref> <remote sha>` (githooks(5)). We review the commits
the remote does not have yet. A hook we did not write is never overwritten or removed.
"""
from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from reviewer.errors import ConfigError
from reviewer.tree import git as tree_git

MARKER = "# installed by reviewer: `review install-hook`; remove with `review uninstall-hook`"
ZERO = "0" * 40


@dataclass(frozen=True)
class Push:
    ref: str  # the local ref being pushed
    spec: str  # the git range to review, base..tip
    since: str = ""  # where the base comes from, for a new branch: "where it leaves origin/HEAD", ...


def _git(cwd: Path, *args: str, check: bool = True) -> str:
    # The user's hooks path in force: hook_path() asks git where the user's hooks are (no hook runs).
    if check:
        return tree_git.git(cwd, *args, timeout=60, user_hooks=True).strip()
    return tree_git.read(cwd, *args, timeout=60, user_hooks=True)


def toplevel(cwd: Path) -> Path:
    from reviewer.tree.repo import top_of  # GitPython: only the pre-push hook asks

    top = top_of(cwd)
    if top is None:
        raise ConfigError(f"{cwd} is not a git work tree", "the pre-push hook runs inside the repository being pushed")
    return top


def hook_path(cwd: Path) -> Path:
    """Where git looks for the pre-push hook (core.hooksPath respected)."""
    if not _git(cwd, "rev-parse", "--git-dir", check=False):
        raise ConfigError(f"{cwd} is not a git repository", "run it inside your kernel tree, or pass -C PATH")
    path = Path(_git(cwd, "rev-parse", "--git-path", "hooks/pre-push"))
    return path if path.is_absolute() else (cwd / path).resolve()


def script(*, strict: bool) -> str:
    # The hook runs reviewer with the interpreter that installed it, so it works outside the venv.
    args = " --strict" if strict else ""
    return (
        "#!/bin/sh\n"
        f"{MARKER}\n"
        "# git sets these for hooks; reviewer finds the repository itself.\n"
        "unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE\n"
        f'exec {shlex.quote(sys.executable)} -m reviewer pre-push{args} "$@"\n'
    )


def is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(errors="replace")
    except OSError:
        return False


def install(cwd: Path, *, strict: bool) -> tuple[Path, bool]:
    """Write the hook; return (path, whether an older hook of ours was replaced)."""
    path = hook_path(cwd)
    existed = path.exists()
    if existed and not is_ours(path):
        raise ConfigError(f"{path} exists and was not installed by reviewer; leaving it alone",
                          f'add `{sys.executable} -m reviewer pre-push "$@"` to that hook yourself, or move it away')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script(strict=strict))
    path.chmod(0o755)
    return path, existed


def uninstall(cwd: Path) -> Path | None:
    """Remove our hook; None when there is none."""
    path = hook_path(cwd)
    if not path.exists():
        return None
    if not is_ours(path):
        raise ConfigError(f"{path} was not installed by reviewer; leaving it alone", "remove it yourself if you want it gone")
    path.unlink()
    return path


def pushes(cwd: Path, remote: str, lines: list[str]) -> list[Push]:
    """The ranges to review for git's pre-push input LINES (deletions and empty ranges left out). A new
    branch whose base cannot be told is a ConfigError: the push is blocked, never let through unchecked."""
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) != 4 or parts[1] == ZERO:
            continue
        local_ref, local, _remote_ref, theirs = parts
        if theirs != ZERO and _known(cwd, theirs):
            base, since = _git(cwd, "merge-base", theirs, local, check=False) or theirs, ""
        else:
            base, since = _new_branch_base(cwd, remote, local_ref, local)
        if base != local:
            out.append(Push(local_ref, f"{base}..{local}", since))
    return out


def _new_branch_base(cwd: Path, remote: str, local_ref: str, local: str) -> tuple[str, str]:
    """Where a branch new to REMOTE starts, and from what: the fork point from REMOTE's default branch
    (refs/remotes/REMOTE/HEAD), else from the branch's upstream, else where it leaves REMOTE's branches, else
    every remote's. Never the root commit: a history that shares none of them is a ConfigError."""
    for name in (f"refs/remotes/{remote}/HEAD", _upstream(cwd, local_ref)):
        fork = _fork_point(cwd, name, local)
        if fork:
            return fork, f"where it leaves {_short(name)}"
    for prefix, what in ((f"refs/remotes/{remote}", f"{remote}'s branches"), ("refs/remotes", "the remote-tracking branches")):
        parent = _leaves(cwd, prefix, local)
        if parent:
            return parent, f"where it leaves {what}"
    branch = _short(local_ref)
    raise ConfigError(f"cannot tell which commits of {branch} are new: {remote} has no default branch here (refs/remotes/{remote}/HEAD), "
                      f"{branch} has no upstream, and no remote-tracking branch shares its history",
                      f"give it one (git branch --set-upstream-to=UPSTREAM {branch}), or after a fetch: git remote "
                      f"set-head {remote} --auto; "
                      "git push --no-verify pushes it unchecked")


def _fork_point(cwd: Path, name: str, local: str) -> str:
    """The merge base of LOCAL and the ref NAME; "" when NAME is not set or shares no history."""
    if not name or not _git(cwd, "rev-parse", "--verify", "--quiet", name, check=False):
        return ""
    return _git(cwd, "merge-base", name, local, check=False)


def _leaves(cwd: Path, prefix: str, local: str) -> str:
    """The parent of LOCAL's first commit that no ref under PREFIX has (LOCAL: they have them all); "" when
    there is no ref under PREFIX, or LOCAL's history shares none of theirs (a root commit has no parent)."""
    if not _git(cwd, "for-each-ref", "--count=1", "--format=%(refname)", f"{prefix}/", check=False):
        return ""  # asked first: without refs to stop at, rev-list would walk the whole history
    new = _git(cwd, "rev-list", "--reverse", local, "--not", f"--glob={prefix}", check=False).split()
    return _git(cwd, "rev-parse", "--verify", "--quiet", f"{new[0]}^", check=False) if new else local


def _upstream(cwd: Path, local_ref: str) -> str:
    """The upstream of LOCAL_REF (refs/remotes/origin/master), "" when it has none or is not a branch."""
    return _git(cwd, "for-each-ref", "--format=%(upstream)", local_ref, check=False) if local_ref.startswith("refs/heads/") else ""


def _short(ref: str) -> str:
    return ref.removeprefix("refs/heads/").removeprefix("refs/remotes/")


def _known(cwd: Path, sha: str) -> bool:
    return tree_git.has_commit(cwd, sha, timeout=30)
