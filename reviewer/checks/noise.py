"""Reports a maintainer deletes before sending: dropped from the check stage, each for a stated reason.

- checkpatch's FILE_PATH_CHANGES ("added, moved or deleted file(s), does MAINTAINERS need
  updating?") on a patch whose every added, moved or deleted file is already covered by a
  MAINTAINERS section other than THE REST: MAINTAINERS needs nothing, and get_maintainer.pl's
  recipients already name who maintains the files. (When a file is not covered, our
  maintainers-coverage says so, and reviewer/checks/merge.py makes the two one finding.)
"""
from __future__ import annotations

from collections.abc import Sequence

from reviewer.checks._files import text_after
from reviewer.model import Change, FileChange, Finding, Series
from reviewer.tree.base import BaseTree
from reviewer.tree.maintainers import IsDir, Maintainers, dirs_after, parse


def drop(findings: Sequence[Finding], series: Series, base: BaseTree | None) -> list[Finding]:
    asking = {f.patch for f in findings if f.rule == "checkpatch/FILE_PATH_CHANGES"}
    if not asking or base is None:
        return list(findings)
    text = text_after(series, base, "MAINTAINERS")
    if text is None:
        return list(findings)
    maintainers, is_dir = parse(text), dirs_after(series, base)
    covered = {p.index for p in series.patches if p.index in asking and _all_covered(p.files, maintainers, is_dir)}
    return [f for f in findings if not (f.rule == "checkpatch/FILE_PATH_CHANGES" and f.patch in covered)]


def _all_covered(files: Sequence[FileChange], maintainers: Maintainers, is_dir: IsDir) -> bool:
    moved = (Change.ADDED, Change.DELETED, Change.RENAMED, Change.COPIED)
    paths = [p for fc in files if fc.change in moved and not fc.is_symlink for p in (fc.path, fc.old_path) if p]
    return bool(paths) and all(maintainers.covered(p, is_dir) for p in paths)
