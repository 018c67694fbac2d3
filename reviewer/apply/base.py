"""The commit the series is applied to: --base, its base-commit: trailer, a guess, or HEAD.

The guess reads the pre-image blob ids, as b4 does.

Each `index abc1234..def5678` line names the blob a file had before the patch. The base is
a commit whose tree has all of them at those paths. Between two commits that touch the
paths the blobs do not change, so only those commits (and HEAD) need checking.
"""
from __future__ import annotations

import re
from pathlib import Path

from reviewer.errors import InputError
from reviewer.model import Series
from reviewer.tree.git import call, git, has_commit

_DIFF = re.compile(r"^diff --git a/(?P<old>\S+) b/\S+$")
_INDEX = re.compile(r"^index (?P<old>[0-9a-f]{7,40})\.\.[0-9a-f]{7,40}")
MAX_CANDIDATES = 300


def preimages(series: Series) -> dict[str, str]:
    """path -> abbreviated blob id, for the first time the series touches each existing file (a name with a NUL
    byte, which no file has and no command line can carry, is left out: patchparse reports it as damage)."""
    found: dict[str, str] = {}
    for patch in series.patches:
        path = None
        for line in patch.diff.splitlines():
            if m := _DIFF.match(line):
                path = m["old"]
            elif (m := _INDEX.match(line)) and path and "\0" not in path and path not in found and set(m["old"]) != {"0"}:
                found[path] = m["old"]
    return found


def guess(tree: Path, series: Series, tip: str = "HEAD") -> str | None:
    """The newest commit in TIP's history whose tree has every pre-image blob, or None."""
    wanted = preimages(series)
    if not wanted:
        return None
    paths = sorted(wanted)
    log = call(tree, "rev-list", f"--max-count={MAX_CANDIDATES}", tip, "--", *paths)
    for commit in [tip, *log.stdout.split()]:
        if _matches(tree, commit, wanted, paths):
            return git(tree, "rev-parse", commit).strip()
    return None


def _matches(tree: Path, commit: str, wanted: dict[str, str], paths: list[str]) -> bool:
    out = call(tree, "ls-tree", "-r", commit, "--", *paths).stdout
    have = {line.split("\t", 1)[1]: line.split()[2] for line in out.splitlines() if "\t" in line}
    return all(have.get(p, "").startswith(blob) for p, blob in wanted.items())


def choose_base(tree: Path, series: Series, override: str | None) -> tuple[str, str]:
    """(commit id, where it came from: option | trailer | guess | head)."""
    if override:
        return _commit(tree, override, "--base"), "option"
    if series.base_commit and has_commit(tree, series.base_commit):
        return _commit(tree, series.base_commit, "base-commit"), "trailer"
    guessed = guess(tree, series)
    if guessed is not None:
        return guessed, "guess"
    return _commit(tree, "HEAD", "HEAD"), "head"


def _commit(tree: Path, rev: str, what: str) -> str:
    if not has_commit(tree, rev):
        raise InputError(f"{what} {rev!r} is not a commit in {tree}", "fetch it into the tree, or pass --base REF")
    return git(tree, "rev-parse", f"{rev}^{{commit}}").strip()
