"""A new file is covered by a MAINTAINERS entry other than the catch-all THE REST.

Why: get_maintainer.pl, and so every future patch to the file, falls back to THE REST and
reaches no one who knows the code; checkpatch asks "added, moved or deleted file(s), does
MAINTAINERS need updating?". Needs the base tree's MAINTAINERS (no finding without it);
symlinks are skipped (they carry no code). A warning.
PASS: new arch/loongarch/vdso/vgetrandom.c (LOONGARCH has `F: arch/loongarch/`).
FAIL: new lib/vdso/vgetrandom-bench.c with no matching F: line.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.checks._files import new_files, text_after
from reviewer.model import Finding, Level, Series
from reviewer.tree.base import BaseTree

ID = "maintainers-coverage"
LEVEL = Level.WARNING
CATCH_ALL = "THE REST"


def check(series: Series, base: BaseTree | None) -> Iterator[Finding]:
    added = [(patch, fc) for patch, fc in new_files(series) if not fc.is_symlink]
    if base is None or not added:
        return  # no new file: MAINTAINERS (thousands of entries) is not even read
    text = text_after(series, base, "MAINTAINERS")
    if text is None:
        return
    sections = [s for s in parse(text) if s[0] != CATCH_ALL]
    for patch, fc in added:
        if not any(covers(s, fc.path) for s in sections):
            yield Finding("", LEVEL, f"no MAINTAINERS entry covers the new file {fc.path}", patch.index, fc.path,
                          hint="add an F: line to the subsystem's MAINTAINERS entry (or a new entry)")


Section = tuple[str, list[str], list[str], list[str]]  # name, F:, X:, N:


def parse(text: str) -> list[Section]:
    sections: list[Section] = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.strip("\n").splitlines()
        fields = [ln.split(":", 1) for ln in lines[1:] if re.match(r"^[A-Z]:\s", ln)]
        if not lines or not fields:
            continue
        sections.append((lines[0].strip(), _values(fields, "F"), _values(fields, "X"), _values(fields, "N")))
    return sections


def _values(fields: list[list[str]], tag: str) -> list[str]:
    return [value.strip() for key, value in fields if key == tag]


def covers(section: Section, path: str) -> bool:
    _, files, excluded, names = section
    if any(_match(x, path) for x in excluded):
        return False
    return any(_match(f, path) for f in files) or any(re.search(n, path) for n in names)


def _match(pattern: str, path: str) -> bool:
    """get_maintainer.pl: `dir/` covers everything below; otherwise `*` and `?` match at the same depth."""
    regex = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    if pattern.endswith("/"):
        return re.match(regex, path) is not None
    return re.fullmatch(regex, path) is not None and path.count("/") == pattern.count("/")
