"""A new file is covered by a MAINTAINERS entry other than the catch-all THE REST.

Why: get_maintainer.pl, and so every future patch to the file, falls back to THE REST and
reaches no one who knows the code; checkpatch asks "added, moved or deleted file(s), does
MAINTAINERS need updating?". Needs the base tree's MAINTAINERS (no finding without it);
symlinks are skipped (they carry no code). Covered means as get_maintainer.pl reads MAINTAINERS
(reviewer/tree/maintainers.py: X: excludes, N: regexes, `F: dir` without its slash). A warning.
PASS: new arch/loongarch/vdso/vgetrandom.c (LOONGARCH has `F: arch/loongarch/`).
FAIL: new lib/vdso/vgetrandom-bench.c with no matching F: line.
"""
from __future__ import annotations

from collections.abc import Iterator

from reviewer.checks._files import new_files, text_after
from reviewer.model import Finding, Level, Series
from reviewer.tree.base import BaseTree
from reviewer.tree.maintainers import dirs_after, parse

ID = "maintainers-coverage"
LEVEL = Level.WARNING


def check(series: Series, base: BaseTree | None) -> Iterator[Finding]:
    added = [(patch, fc) for patch, fc in new_files(series) if not fc.is_symlink]
    if base is None or not added:
        return  # no new file: MAINTAINERS (thousands of entries) is not even read
    text = text_after(series, base, "MAINTAINERS")
    if text is None:
        return
    maintainers, is_dir = parse(text), dirs_after(series, base)
    for patch, fc in added:
        if not maintainers.covered(fc.path, is_dir):
            yield Finding("", LEVEL, f"no MAINTAINERS entry covers the new file {fc.path}", patch.index, fc.path,
                          hint="add an F: line to the subsystem's MAINTAINERS entry (or a new entry)")
