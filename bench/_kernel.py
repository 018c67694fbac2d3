"""The real-kernel tier: Debian's linux-source-6.12 as a git repository, built once and cached.

.ci/run installs the package (`linux-source-6.12`, /usr/src/linux-source-6.12.tar.xz).
The repository is made in REVIEWER_KERNEL_CACHE (default /var/tmp/reviewer-linux-6.12) and
reused while the tarball is unchanged. Tests never check anything out in it: they add
commits with git plumbing (a private index) and review series made from them.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
CACHE = Path(os.environ.get("REVIEWER_KERNEL_CACHE", "/var/tmp/reviewer-linux-6.12"))
# The real tier's kernel cache (guest and boot builds, ccache) and guest roots, shared by its tests and bench/vm_cost.py.
BOOT_CACHE = os.environ.get("REVIEWER_BOOT_CACHE", "/var/tmp/reviewer-boot-6.12")
GUEST_ROOTS = os.environ.get("REVIEWER_GUEST_ROOTS", "/var/tmp/reviewer-guest-roots")
BUILDER = "2"  # bump when the way the repository is made changes
IDENTITY = {
    "GIT_AUTHOR_NAME": "Kernel Fixture", "GIT_AUTHOR_EMAIL": "kernel-fixture@example.org",
    "GIT_COMMITTER_NAME": "Kernel Fixture", "GIT_COMMITTER_EMAIL": "kernel-fixture@example.org",
    "GIT_AUTHOR_DATE": "2025-11-14T12:00:00+00:00", "GIT_COMMITTER_DATE": "2025-11-14T12:00:00+00:00",
}


def git(repo: Path, *args: str, env: Mapping[str, str] | None = None, input: str | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], env={**os.environ, **IDENTITY, **(env or {})},
                          input=input, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def ensure_repo() -> Path:
    """The cached repository, built from the tarball if missing or stale."""
    if not TARBALL.is_file():
        raise RuntimeError(f"{TARBALL} is missing: install the Debian package linux-source-6.12 (.ci/run does)")
    stat = TARBALL.stat()
    stamp = f"{BUILDER} {stat.st_size} {int(stat.st_mtime)}\n"
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    with open(CACHE.parent / (CACHE.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = CACHE / ".git" / "reviewer-stamp"
        if marker.is_file() and marker.read_text() == stamp:
            git(CACHE, "worktree", "prune")  # registrations left by a run that was killed
            return CACHE
        _build(stamp)
    return CACHE


def _build(stamp: str) -> None:
    tmp = CACHE.with_name(CACHE.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(CACHE, ignore_errors=True)
    tmp.mkdir(parents=True)
    subprocess.run(["tar", "-xf", str(TARBALL), "-C", str(tmp), "--strip-components=1"], check=True)
    _drop_debian_ignore(tmp / ".gitignore")
    git(tmp, "init", "-q", "-b", "master")
    git(tmp, "add", "-A", "-f")
    # No automatic gc: `git commit` would start one in the background over the ~90,000 loose objects, and it
    # would repack the repository while the first test runs (the tests compare the repository before and after).
    git(tmp, "-c", "gc.auto=0", "-c", "maintenance.auto=false", "commit", "-q", "--no-verify", "-m",
        "Linux 6.12 (Debian linux-source-6.12)")
    git(tmp, "repack", "-a", "-d", "-q", "--window=0")  # -d drops the packed loose objects; one commit: few deltas, a search of minutes
    (tmp / ".git" / "reviewer-stamp").write_text(stamp)
    tmp.rename(CACHE)


def _drop_debian_ignore(gitignore: Path) -> None:
    """Debian appends `/*` to the top-level .gitignore (ignore everything): cut that block."""
    text = gitignore.read_text()
    cut = text.find("# Debian packaging")
    if cut > 0:
        gitignore.write_text(text[: text.rfind("\n#\n", 0, cut) + 1])


def commit(repo: Path, parent: str, changes: Mapping[str, str | None], message: str, author: str | None = None) -> str:
    """A commit on PARENT with CHANGES (path -> new text, None deletes) made with a private index; REPO may be a bare
    repository (a review's shadow)."""
    index = Path(git(repo, "rev-parse", "--absolute-git-dir").strip()) / f"reviewer-index-{os.getpid()}"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        git(repo, "read-tree", parent, env=env)
        for path, text in changes.items():
            if text is None:
                git(repo, "update-index", "--force-remove", path, env=env)
                continue
            blob = git(repo, "hash-object", "-w", "--stdin", input=text).strip()
            git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        tree = git(repo, "write-tree", env=env).strip()
    finally:
        index.unlink(missing_ok=True)
    who = {}
    if author:
        name, email = author.rsplit(" <", 1)
        who = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">")}
    return git(repo, "commit-tree", tree, "-p", parent, "-m", message, env=who).strip()


def show(repo: Path, rev: str, path: str) -> str:
    return git(repo, "show", f"{rev}:{path}")


def format_patch(repo: Path, base: str, tip: str, out: Path, *extra: str) -> Path:
    """The series BASE..TIP as one mbox (with base-commit), like an author would send it."""
    out.write_text(git(repo, "format-patch", "--stdout", f"--base={base}", *extra, f"{base}..{tip}"))
    return out


def edit_series(repo: Path, base: str, path: str, old: str, new: str, subject: str, why: str, out: Path) -> tuple[Path, str]:
    """A one-patch series on BASE replacing OLD (it must be there exactly once) by NEW in PATH, by the fixture
    author: (its mbox OUT, its commit)."""
    src = show(repo, base, path)
    assert src.count(old) == 1, f"{path} of {base[:12]} has {src.count(old)} of {old!r}"
    msg = f"{subject}\n\n{why}\n\nSigned-off-by: {IDENTITY['GIT_AUTHOR_NAME']} <{IDENTITY['GIT_AUTHOR_EMAIL']}>\n"
    tip = commit(repo, base, {path: src.replace(old, new, 1)}, msg)
    return format_patch(repo, base, tip, out), tip
