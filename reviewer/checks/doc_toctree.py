"""A new Documentation/**/*.rst page is listed in a toctree of its directory's index.rst.

Why: Sphinx builds every .rst but warns "document isn't included in any toctree" for a page
no toctree lists, and readers of docs.kernel.org never reach it
(Documentation/doc-guide/sphinx.rst). A new index.rst must be listed by its parent's index.rst.
PASS: new Documentation/arch/loongarch/booting.rst and `   booting` in that directory's index.rst.
FAIL: the same page with no index.rst change (a warning).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.checks._files import new_files, text_after
from reviewer.model import Finding, Level, Series
from reviewer.tree.base import BaseTree

ID = "doc-toctree"
LEVEL = Level.WARNING
LEVELS = {"unverified": Level.INFO}
PAGE = re.compile(r"Documentation/(?P<dir>(?:.+/)?)(?P<name>[^/]+)\.rst")


def check(series: Series, base: BaseTree | None) -> Iterator[Finding]:
    for patch, fc in new_files(series):
        m = PAGE.fullmatch(fc.path)
        if m is None or any(":orphan:" in ln.text for ln in fc.added_lines()[:5]):
            continue
        index, entry = _where_listed(m["dir"], m["name"])
        if index is None:
            continue
        text = text_after(series, base, index)
        if text is None and base is None:
            yield Finding("unverified", LEVEL, f"unverified: {fc.path} in the toctree of {index} (no kernel tree to "
                                               "check the base against)", patch.index, fc.path)
        elif text is None or not _listed(text, entry):
            yield Finding("", LEVEL, f"{fc.path} is in no toctree: {index} does not list `{entry}`", patch.index, index,
                          hint=f"add `   {entry}` to the toctree in {index}")


def _where_listed(directory: str, name: str) -> tuple[str | None, str]:
    """The index.rst that should list the page, and the toctree entry it should use."""
    if name != "index":
        return f"Documentation/{directory}index.rst", name
    if not directory:
        return None, name  # Documentation/index.rst is the root
    parent, _, last = directory.rstrip("/").rpartition("/")
    return f"Documentation/{parent + '/' if parent else ''}index.rst", f"{last}/index"


def _listed(index: str, entry: str) -> bool:
    """ENTRY as a toctree line (`   entry`, `   entry.rst`, `   Title <entry>`) or a `*` glob."""
    pattern = rf"^\s+(?:.*<)?(?:\./)?{re.escape(entry)}(?:\.rst)?>?\s*$|^\s+\*\s*$"
    return re.search(pattern, index, re.MULTILINE) is not None
