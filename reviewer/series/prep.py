"""A `b4 prep` branch -> the series as b4 would send it (cover letter + patches), as an mbox.

b4 prep keeps the cover letter and its tracking JSON (after the line
`--- b4-submit-tracking ---`) either in an empty commit at the start of the branch
(strategy `commit`, the default), in an empty commit at the tip (`tip-commit`), or in the
branch description (`branch-description`, with `branch.<name>.b4-tracking`); see b4's
ez.py (load_cover, get_series_start). The base is the cover commit's parent, else the
fork point from the tracked `base-branch`. Read with plain git: b4 is imported only by fetch.py.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer.errors import InputError
from reviewer.tree.git import read

MAGIC = "--- b4-submit-tracking ---"


@dataclass(frozen=True)
class Prep:
    branch: str
    base: str  # the commit the series goes on
    start: str  # exclusive start of the patches (the cover commit, or the base)
    end: str  # inclusive end of the patches
    cover: str  # the cover letter text (subject line first), comments stripped
    revision: int


def _git(cwd: Path, *args: str) -> str:
    return read(cwd, *args, timeout=60)


def find(cwd: Path) -> Prep | None:
    """The b4 prep branch checked out in CWD, or None when it is not one."""
    branch = _git(cwd, "symbolic-ref", "--quiet", "--short", "HEAD")
    if not branch:
        return None
    strategy = _git(cwd, "config", f"branch.{branch}.b4-prep-cover-strategy") or _git(cwd, "config", "b4.prep-cover-strategy") or "commit"
    if strategy == "branch-description":
        return _from_description(cwd, branch)
    cover = _git(cwd, "log", "--grep", MAGIC, "-F", "--format=%H", "--max-count=1", branch, "--")
    if not cover:
        return None
    text, tracking = _split(_git(cwd, "show", "-s", "--format=%B", cover))
    if strategy == "tip-commit":
        base = _fork_point(cwd, tracking)
        return Prep(branch, base, base, f"{cover}~1", text, _revision(tracking))
    base = _git(cwd, "rev-parse", f"{cover}~1")
    return Prep(branch, base, cover, branch, text, _revision(tracking))


def _from_description(cwd: Path, branch: str) -> Prep | None:
    raw = _git(cwd, "config", f"branch.{branch}.b4-tracking")
    if not raw:
        return None
    tracking = _json(raw)
    base = _fork_point(cwd, tracking)
    text = _strip(_git(cwd, "config", f"branch.{branch}.description"))
    return Prep(branch, base, base, branch, text, _revision(tracking))


def _split(message: str) -> tuple[str, dict[str, Any]]:
    cover, _, magic = message.partition(MAGIC)
    return _strip(cover), _json("{" + magic.split("{", 1)[1] if "{" in magic else "{}")


def _json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"the b4 prep tracking data is not valid JSON: {exc}", "repair it with `b4 prep --edit-cover`") from exc
    return data if isinstance(data, dict) else {}


def _strip(cover: str) -> str:
    cover = re.sub(r"(?m)^#.*\n?", "", cover)
    return re.sub(r"\n{3,}", "\n\n", cover).strip()


def _revision(tracking: dict[str, Any]) -> int:
    rev = tracking.get("series", {}).get("revision", 1)
    return rev if isinstance(rev, int) and rev > 0 else 1


def _fork_point(cwd: Path, tracking: dict[str, Any]) -> str:
    base_branch = str(tracking.get("series", {}).get("base-branch") or "")
    point = _git(cwd, "merge-base", "--fork-point", base_branch) or _git(cwd, "merge-base", base_branch, "HEAD") if base_branch else ""
    if not point:
        raise InputError(f"b4 prep: cannot find where the branch forked from {base_branch or 'its base branch'}",
                         "check the base branch in `b4 prep --show-info`")
    return point


def mbox(cwd: Path, prep: Prep) -> bytes:
    """The series as `git format-patch --cover-letter` writes it, with b4's cover letter filled in."""
    count = _git(cwd, "rev-list", "--count", f"{prep.start}..{prep.end}")
    if count in ("", "0"):
        raise InputError(f"b4 prep branch {prep.branch}: no commits after the cover letter", "commit your changes first")
    args = ["format-patch", "--stdout", "-M", "--thread=shallow", f"--base={prep.base}", "--no-signature"]
    if prep.revision > 1:
        args.append(f"-v{prep.revision}")
    if count != "1":
        args.append("--cover-letter")
    out = _git(cwd, *args, f"{prep.start}..{prep.end}")
    if not out:
        raise InputError(f"b4 prep branch {prep.branch}: git format-patch gave nothing", "run `b4 prep --check` to see why")
    subject, _, blurb = prep.cover.partition("\n")
    out = out.replace("*** SUBJECT HERE ***", subject.strip() or prep.branch, 1)
    return out.replace("*** BLURB HERE ***", blurb.strip(), 1).encode() + b"\n"
