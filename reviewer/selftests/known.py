"""--tests names checked against the tree before anything is applied or built.

A name is DIR (every test the directory runs) or DIR:PROGRAM. DIR must be a directory of
tools/testing/selftests in the base or one the series adds files to; PROGRAM must be one DIR
knows: a file of that name or stem (its source, its script), or a word of DIR's Makefile (a
TEST_GEN_PROGS entry), in the base or in the lines the series adds. `--tests nosuch:thing` ran
nothing, said nothing and exited 0; now it is a usage error naming it and what the tree has.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from reviewer.errors import UsageError
from reviewer.model import Change, Series
from reviewer.selftests.choose import SELFTESTS, TestRef
from reviewer.tree.base import BaseTree

_WORD = re.compile(r"[A-Za-z0-9_.+-]+")
_PROGS = re.compile(r"^\s*TEST_(?:GEN_)?(?:CUSTOM_)?PROGS(?:_EXTENDED)?\s*[:+]?=(.*)$", re.MULTILINE)
SHOWN = 8  # names a hint lists


def check(asked: Sequence[str], base: BaseTree, series: Series) -> None:
    """Raise a UsageError for the first name of ASKED the tree after SERIES does not have."""
    files = _files(base, series)
    for text in asked:
        ref = TestRef.parse(text)
        below = f"{SELFTESTS}/{ref.dir}/"
        mine = [f[len(below):] for f in files if f.startswith(below)]
        if not ref.dir or not mine:
            raise UsageError(f"--tests {text}: the tree has no directory {below.rstrip('/')}", _dirs_hint(ref.dir, files))
        if ref.name is not None and not _knows(ref.name, mine, _makefile_words(base, series, below)):
            raise UsageError(f"--tests {text}: {below.rstrip('/')} has no test {ref.name}", _programs_hint(ref, base, series, below))


def _files(base: BaseTree, series: Series) -> list[str]:
    """The selftest files of the tree after SERIES: the base's (less those deleted) and the ones it adds."""
    changes = [fc for p in series.patches for fc in p.files]
    gone = {fc.old_path or fc.path for fc in changes if fc.change in (Change.DELETED, Change.RENAMED)}
    added = [fc.path for fc in changes if fc.change is not Change.DELETED]
    return [f for f in (*base.paths(), *added) if f.startswith(f"{SELFTESTS}/") and f not in gone]


def _knows(name: str, files: list[str], words: set[str]) -> bool:
    stems = {f.rsplit("/", 1)[-1].split(".", 1)[0] for f in files} | {f.rsplit("/", 1)[-1] for f in files}
    return name in stems or name in words or name in files


def _makefile(base: BaseTree, series: Series, below: str) -> str:
    """The directory's Makefile in the base, and the lines the series adds to it."""
    path = below + "Makefile"
    added = [ln.text for p in series.patches for fc in p.files if fc.path == path for ln in fc.added_lines()]
    return "\n".join([base.read(path) or "", *added])


def _makefile_words(base: BaseTree, series: Series, below: str) -> set[str]:
    return set(_WORD.findall(_makefile(base, series, below)))


def _programs_hint(ref: TestRef, base: BaseTree, series: Series, below: str) -> str:
    path = below + "Makefile"
    text = _makefile(base, series, below)
    listed = sorted({w for m in _PROGS.finditer(text) for w in _WORD.findall(m[1]) if "$" not in w})
    close = difflib.get_close_matches(ref.name or "", listed, n=1)
    maybe = f"did you mean {ref.dir}:{close[0]}? " if close else ""
    if not listed:
        return f"{maybe}give --tests {ref.dir} to run every test of the directory"
    more = f" and {len(listed) - SHOWN} more (see {path})" if len(listed) > SHOWN else ""
    return f"{maybe}its Makefile lists {', '.join(listed[:SHOWN])}{more}"


def _dirs_hint(asked: str, files: list[str]) -> str:
    tops = sorted({f[len(SELFTESTS) + 1:].split("/", 1)[0] for f in files if "/" in f[len(SELFTESTS) + 1:]})
    close = difflib.get_close_matches(asked, tops, n=1) or [t for t in tops if t.lower() == asked.lower()]
    maybe = f"did you mean {close[0]}? " if close else ""
    if not tops:
        return f"the tree has no {SELFTESTS}: is --tree a kernel tree?"
    shown = ", ".join(tops[:SHOWN]) + (f" and {len(tops) - SHOWN} more (ls {SELFTESTS})" if len(tops) > SHOWN else "")
    return f"{maybe}the tree's selftest directories: {shown}"
