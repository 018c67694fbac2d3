"""What changed from one revision of a series to the next, for the dashboard's series page (web.py).

Findings: fixed (in the previous revision, not in this one) and new (the other way), compared by rule, path and
message with the numbers that move between revisions taken out (`3/4`, `:123`, `line 123`), as a multiset: two
findings of the same words in one revision and one in the next is one fixed.

Patches: `git range-diff` of the two revisions applied, each with `git am` on the base its jobs recorded, when the
list names a kernel tree; the applying happens in a `git clone --shared` in a temporary directory (its objects and
refs are its own: nothing is written to the user's tree, and the directory goes when it is done). Without a tree,
without a recorded base, or when a revision does not apply there, a per-patch unified diff of the two revisions'
patch texts (difflib) instead; `Diff.kind` and `Diff.why` say which. The result is kept in the bot's home by the two
mboxes' sha256 (and which kind was possible): a range-diff of a kernel tree takes seconds.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reviewer.errors import ReviewerError
from reviewer.model import Finding, Patch, Series
from reviewer.tree import git

RANGE_DIFF, PATCHES = "range-diff", "patches"
_MOVING = re.compile(r"\b\d+/\d+\b|(?<=:)\d+\b|\bline \d+\b")
TIMEOUT = 600.0
# git's default (60) leaves a small patch whose line changed unpaired (shown as removed and added); 80 pairs a
# reroll's patches as a reader would, and still leaves a patch replaced by another one unpaired.
CREATION_FACTOR = 80


def _key(f: Finding) -> tuple[str, str, str]:
    return f.rule, f.path or "", _MOVING.sub("#", f.message)


def findings(old: Sequence[Finding], new: Sequence[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(fixed, new): the findings of OLD that NEW no longer has, and those NEW has that OLD had not."""
    return _minus(old, new), _minus(new, old)


def _minus(these: Sequence[Finding], those: Sequence[Finding]) -> list[Finding]:
    left = Counter(_key(f) for f in those)
    out = []
    for f in these:
        if left[_key(f)] > 0:
            left[_key(f)] -= 1
        else:
            out.append(f)
    return out


@dataclass(frozen=True)
class Side:
    """One revision: its mbox's sha256, the series read from it, its patches alone as an mbox in their order (what
    `git am` takes: a cover letter would stop it), the base its jobs applied it to ("" if none)."""

    digest: str
    series: Series
    patches: bytes
    base: str = ""


@dataclass(frozen=True)
class Diff:
    kind: str  # RANGE_DIFF or PATCHES
    why: str  # how it was made, or why it is not a range-diff
    text: str


def compare(cache: Path, tree: Path | None, old: Side, new: Side) -> Diff:
    """The patches' changes from OLD to NEW (see the module's doc), from CACHE (a directory) when made before."""
    mode = RANGE_DIFF if tree is not None and old.base and new.base else PATCHES
    path = cache / f"{old.digest}-{new.digest}-{mode}.json"
    try:
        return Diff(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        pass
    diff = _made(tree, old, new) if mode == RANGE_DIFF and tree is not None else patch_diff(old.series, new.series, _no_range(tree))
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(dataclasses.asdict(diff)))
    tmp.replace(path)
    return diff


def _no_range(tree: Path | None) -> str:
    return "no kernel tree is configured for the list" if tree is None else "no base was recorded for a revision (a static review only)"


def _made(tree: Path, old: Side, new: Side) -> Diff:
    try:
        return Diff(RANGE_DIFF, f"git range-diff, each revision applied with git am to {tree} at its base", range_diff(tree, old, new))
    except ReviewerError as exc:
        return patch_diff(old.series, new.series, f"git range-diff could not be made: {' '.join(exc.message.split())[:300]}")


def range_diff(tree: Path, old: Side, new: Side) -> str:
    """`git range-diff` of OLD and NEW, each applied on its base in a shared clone of TREE (removed after); a
    CommandError when git fails (a revision that does not apply)."""
    with tempfile.TemporaryDirectory(prefix="reviewer-range-diff-") as tmp:
        clone = Path(tmp) / "tree"
        git.git(Path(tmp), "clone", "-q", "--shared", "--no-checkout", str(tree), str(clone), timeout=TIMEOUT)
        tips = []
        for side in (old, new):
            git.git(clone, "checkout", "-q", "--detach", side.base, timeout=TIMEOUT)
            git.git(clone, "am", "-q", "--no-3way", input=side.patches, timeout=TIMEOUT)
            tips.append(git.read(clone, "rev-parse", "HEAD"))
        return git.git(clone, "range-diff", "--no-color", f"--creation-factor={CREATION_FACTOR}", f"{old.base}..{tips[0]}",
                       f"{new.base}..{tips[1]}", timeout=TIMEOUT)


def patch_diff(old: Series, new: Series, why: str) -> Diff:
    """A unified diff of each patch's text (subject, message, diff), patch by patch."""
    was, now = {p.index: p for p in old.patches}, {p.index: p for p in new.patches}
    out = []
    for i in sorted(set(was) | set(now)):
        a, b = _text(was.get(i)), _text(now.get(i))
        name = f"patch {i}"
        lines = list(difflib.unified_diff(a, b, f"v{old.version} {name}", f"v{new.version} {name}", n=2, lineterm=""))
        out += lines or [f"{name}: unchanged"]
    return Diff(PATCHES, f"the patches' texts compared ({why})", "\n".join(out) + "\n")


def _text(p: Patch | None) -> list[str]:
    return [] if p is None else [f"Subject: {p.subject}", "", *p.message.splitlines(), "---", *p.diff.splitlines()]
