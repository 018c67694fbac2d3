"""What the series does to files: the files it adds, and a file's text after the series.

Shared by the checks that need the state after the series (a Makefile's TEST_PROGS, an
index.rst toctree, MAINTAINERS). A file's text is rebuilt from the base tree's copy and the
series' hunks, applied in order; without a base tree only files the series adds are known.
"""
from __future__ import annotations

from collections.abc import Iterator

from reviewer.model import Change, FileChange, Patch, Series
from reviewer.tree.base import BaseTree


def new_files(series: Series) -> Iterator[tuple[Patch, FileChange]]:
    """Files the series adds (and does not delete again), with the patch that adds them."""
    deleted = {fc.path for p in series.patches for fc in p.files if fc.change is Change.DELETED}
    for patch in series.patches:
        for fc in patch.files:
            if fc.change is Change.ADDED and fc.path not in deleted:
                yield patch, fc


def text_after(series: Series, base: BaseTree | None, path: str) -> str | None:
    """PATH's text after the whole series; None if it does not exist or cannot be known."""
    text = base.read(path) if base is not None else None
    for patch in series.patches:
        for fc in patch.files:
            if fc.path != path:
                continue
            if fc.change is Change.DELETED:
                text = None
            elif fc.change is Change.ADDED:
                text = apply(None, fc)
            elif fc.old_path != path and base is not None:
                text = apply(base.read(fc.old_path or path), fc)
            elif text is not None:
                text = apply(text, fc)
    return text


def apply(text: str | None, fc: FileChange) -> str:
    """TEXT with FC's hunks applied (the series applies, so the line numbers are trusted)."""
    old = (text or "").splitlines()
    out: list[str] = []
    pos = 0
    for hunk in fc.hunks:
        start = hunk.old_start - 1 if hunk.old_len else hunk.old_start
        out += old[pos:start]
        pos = max(pos, start)
        for line in hunk.lines:
            if line.kind != "+":
                pos += 1
            if line.kind != "-":
                out.append(line.text)
    out += old[pos:]
    return "\n".join(out) + "\n"


def directory(path: str) -> str:
    """`a/b/c.c` -> `a/b/`; a top-level file -> ``."""
    return path.rpartition("/")[0] + "/" if "/" in path else ""


def exists(series: Series, base: BaseTree | None, path: str) -> bool:
    """Whether PATH exists after the series (in the base tree or added by it)."""
    touched = [fc for p in series.patches for fc in p.files if fc.path == path]
    if touched:
        return touched[-1].change is not Change.DELETED
    return base is not None and base.read(path) is not None
