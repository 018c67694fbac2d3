"""Apply the series in an isolated, throw-away git worktree of the user's tree.

The user's checkout, index, branches and stash are never touched: we add a detached
worktree in a temporary directory, `git am -3` there, and remove it on every exit path.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import re
import shutil
import tempfile
from collections.abc import Iterator
from email.message import EmailMessage
from email.policy import SMTP
from pathlib import Path

from reviewer import baseguess
from reviewer.errors import CommandError, ConfigError, InputError
from reviewer.model import Patch, PatchApply, Series
from reviewer.proc import run

_GIT_ENV = {"GIT_COMMITTER_NAME": "reviewer", "GIT_COMMITTER_EMAIL": "reviewer@localhost", "GIT_TERMINAL_PROMPT": "0"}


def git(repo: Path, *args: str, check: bool = True, input: bytes | None = None, timeout: float = 300) -> str:
    return run(["git", "-C", str(repo), *args], env=_GIT_ENV, input=input, check=check, timeout=timeout).stdout


def is_git_tree(path: Path) -> bool:
    return run(["git", "-C", str(path), "rev-parse", "--git-dir"], check=False).returncode == 0


def choose_base(tree: Path, series: Series, override: str | None) -> tuple[str, str]:
    """(commit id, where it came from: option | trailer | guess | head)."""
    if override:
        return _commit(tree, override, "--base"), "option"
    if series.base_commit and _has_commit(tree, series.base_commit):
        return _commit(tree, series.base_commit, "base-commit"), "trailer"
    guessed = baseguess.guess(tree, series)
    if guessed is not None:
        return guessed, "guess"
    return _commit(tree, "HEAD", "HEAD"), "head"


def _has_commit(tree: Path, rev: str) -> bool:
    return run(["git", "-C", str(tree), "cat-file", "-e", f"{rev}^{{commit}}"], check=False).returncode == 0


def _commit(tree: Path, rev: str, what: str) -> str:
    if not _has_commit(tree, rev):
        raise InputError(f"{what} {rev!r} is not a commit in {tree}", "fetch it into the tree, or pass --base REF")
    return git(tree, "rev-parse", f"{rev}^{{commit}}").strip()


# Trees with more files than this get a sparse checkout: on a full kernel tree (~87,000
# files) a plain `git worktree add` takes ~15 s here, a sparse one ~6 s.
SPARSE_ABOVE = 20_000
ALWAYS = ("/*", "!/*/", "/include/", "/scripts/", "/tools/", "/usr/", "/arch/x86/")


def sparse_patterns(paths: list[str]) -> list[str]:
    """What to check out: top-level files, the build essentials and the touched directories."""
    dirs = {"/" + p.rsplit("/", 1)[0] + "/" for p in paths if "/" in p}
    return [*ALWAYS, *sorted(dirs)]


@contextlib.contextmanager
def isolated(tree: Path, base: str, touched: list[str] | None = None) -> Iterator[Path]:
    """A detached worktree of TREE at BASE in a temporary directory; always removed.

    On a large tree only what the apply and the selftests need is checked out (sparse).
    """
    scratch = Path(tempfile.mkdtemp(prefix="reviewer-wt-"))
    wt = scratch / "tree"
    try:
        if touched is not None and _file_count(tree, base) > SPARSE_ABOVE:
            git(tree, "worktree", "add", "--detach", "--no-checkout", "--quiet", str(wt), base)
            git(wt, "sparse-checkout", "set", "--no-cone", *sparse_patterns(touched))
            git(wt, "checkout", "--quiet", "--detach", base)
        else:
            git(tree, "worktree", "add", "--detach", "--quiet", str(wt), base)
        yield wt
    finally:
        run(["git", "-C", str(tree), "worktree", "remove", "--force", str(wt)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)
        run(["git", "-C", str(tree), "worktree", "prune"], check=False)


SLOTS = 4  # concurrent reviews of one tree that can each hold a cached worktree


@contextlib.contextmanager
def cached(tree: Path, base: str, touched: list[str] | None, root: Path) -> Iterator[Path]:
    """A reusable worktree of TREE kept under ROOT (opt-in: git config reviewer.reuseWorktrees).

    It stays registered (and locked) in TREE between runs, and is reset to a clean BASE on
    entry and on every exit: `git am --abort`, `checkout -f`, `clean -ffdx`. A slot lock
    keeps two reviews of the same tree apart.
    """
    slots = root / hashlib.sha1(str(tree.resolve()).encode()).hexdigest()[:16]
    slots.mkdir(parents=True, exist_ok=True)
    with _slot(slots) as wt:
        try:
            if not (wt / ".git").is_file():
                shutil.rmtree(wt, ignore_errors=True)
                run(["git", "-C", str(tree), "worktree", "prune"], check=False)
                git(tree, "worktree", "add", "--detach", "--no-checkout", "--quiet", str(wt), base)
                git(tree, "worktree", "lock", "--reason", "reviewer: cached worktree", str(wt))
            _reset(wt, base, touched if touched is not None and _file_count(tree, base) > SPARSE_ABOVE else None)
            yield wt
        finally:
            _reset(wt, base, None)


@contextlib.contextmanager
def _slot(slots: Path) -> Iterator[Path]:
    for n in range(SLOTS):
        with open(slots / f"{n}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            yield slots / str(n)
            return
    raise ConfigError(f"all {SLOTS} cached worktrees in {slots} are in use", "wait for the other reviews, or unset reviewer.reuseWorktrees")


def _reset(wt: Path, base: str, touched: list[str] | None) -> None:
    run(["git", "-C", str(wt), "am", "--abort"], check=False)
    if touched is not None:
        git(wt, "sparse-checkout", "set", "--no-cone", *sparse_patterns(touched))
    git(wt, "checkout", "-f", "--quiet", "--detach", base)
    git(wt, "clean", "-ffdxq")


def _file_count(tree: Path, rev: str) -> int:
    return git(tree, "ls-tree", "-r", "--name-only", rev).count("\n")


def apply_series(wt: Path, series: Series) -> tuple[PatchApply, ...]:
    """`git am -3` each patch in turn; stop at the first that fails."""
    results: list[PatchApply] = []
    for patch in series.patches:
        mail = _as_mail(series, patch.index)
        try:
            # The user's hooks are not run on a series under review.
            out = git(wt, "-c", "core.hooksPath=/dev/null", "am", "-3", "--no-gpg-sign", input=mail)
        except CommandError as exc:
            run(["git", "-C", str(wt), "am", "--abort"], check=False)
            results.append(PatchApply(patch.index, "failed", _failed_hunk(wt, patch) + _why(exc)))
            break
        status = "applied (3-way merge)" if "Falling back" in out else "applied"
        results.append(PatchApply(patch.index, status, ""))
    return tuple(results)


_FAILED_AT = re.compile(r"^error: patch failed: (?P<path>.+):(?P<line>\d+)$", re.M)


def _failed_hunk(wt: Path, patch: Patch) -> str:
    """Which file and hunk git could not place: `git apply --check` names the hunk's first line."""
    done = run(["git", "-C", str(wt), "apply", "--check", "-"], input=patch.diff, check=False)
    m = _FAILED_AT.search(done.stderr)
    if m is None:
        return ""
    path, line = m["path"], int(m["line"])
    hunk = next((h for f in patch.files if path in (f.path, f.old_path) for h in f.hunks if h.old_start == line), None)
    return f"{path}: hunk {hunk.header if hunk else f'at line {line}'} does not apply; "


def _why(exc: CommandError) -> str:
    text = exc.stderr + exc.stdout
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith(("error:", "Patch failed", "CONFLICT"))]
    return "; ".join(lines[:3]) or exc.message


def _as_mail(series: Series, index: int) -> bytes:
    patch = series.patches[[p.index for p in series.patches].index(index)]
    msg = EmailMessage()
    msg["From"] = str(patch.author)
    if patch.date:
        msg["Date"] = patch.date.strftime("%a, %d %b %Y %H:%M:%S %z")
    msg["Subject"] = f"[PATCH {patch.index}/{patch.total}] {patch.subject}"
    msg.set_content(f"{patch.message}---\n{patch.diff}", charset="utf-8", cte="8bit")
    return msg.as_bytes(policy=SMTP.clone(linesep="\n"))
