"""Turn a directory of plain files into a git repository with a reproducible commit id.

The demo and the tests build the bundled kernel-shaped tree this way, so the series'
`base-commit:` lines name a commit that really exists in the rebuilt tree.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from reviewer.tree import git as tree_git

FIXED_IDENTITY = {
    "GIT_AUTHOR_NAME": "Reviewer Fixtures",
    "GIT_AUTHOR_EMAIL": "fixtures@example.org",
    "GIT_COMMITTER_NAME": "Reviewer Fixtures",
    "GIT_COMMITTER_EMAIL": "fixtures@example.org",
    "GIT_AUTHOR_DATE": "2024-08-11T12:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-08-11T12:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}
BASE_SUBJECT = "Linux 6.11-rc3"


def git(repo: Path, *args: str, timeout: float = 120.0) -> str:
    """Run git in REPO with a pinned identity and no user config; return stdout."""
    return tree_git.git(repo, *args, env=FIXED_IDENTITY, timeout=timeout)


def build_base_repo(src: Path, dest: Path) -> str:
    """Copy SRC (symlinks kept) to DEST, commit it once on branch master, return the commit id."""
    shutil.copytree(src, dest, symlinks=True)
    git(dest, "init", "-q", "-b", "master")
    git(dest, "config", "core.fileMode", "true")
    git(dest, "add", "-A", "-f")
    git(dest, "commit", "-q", "--no-verify", "-m", BASE_SUBJECT)
    return git(dest, "rev-parse", "HEAD").strip()
