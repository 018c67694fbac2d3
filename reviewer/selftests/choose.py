"""Which kselftests a series makes relevant: the rules' hints, the selftest dirs it touches, MAINTAINERS."""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reviewer.kernel.srctree import SELFTESTS as SELFTESTS  # the selftests stage names it for its own modules
from reviewer.model import Series
from reviewer.tree.maintainers import IsDir, mentioning

_TOUCHED = re.compile(rf"^{SELFTESTS}/(?P<dir>[^/]+)/")


@dataclass(frozen=True)
class TestRef:
    __test__ = False  # not a pytest class
    dir: str
    name: str | None = None  # None: every test the directory builds

    @classmethod
    def parse(cls, text: str) -> TestRef:
        d, _, name = text.partition(":")
        return cls(d.strip().strip("/"), name.strip() or None)

    def __str__(self) -> str:
        return f"{self.dir}:{self.name}" if self.name else self.dir


@dataclass(frozen=True)
class Chosen:
    ref: TestRef
    why: tuple[str, ...]


def choose(series: Series, hints: Iterable[tuple[str, str]], maintainers: str | None, is_dir: IsDir | None = None) -> list[Chosen]:
    """The union of the rules' hints, the selftest dirs the series touches, and MAINTAINERS (IS_DIR: as in
    reviewer.tree.maintainers.Maintainers.covering)."""
    why: dict[TestRef, list[str]] = {}
    for test, reason in hints:
        why.setdefault(TestRef.parse(test), []).append(reason)
    paths = sorted({f.path for p in series.patches for f in p.files})
    for path in paths:
        if m := _TOUCHED.match(path):
            why.setdefault(TestRef(m["dir"]), []).append(f"the series touches {path}")
    if maintainers:
        for section, test_dir, path in _maintainers_dirs(maintainers, paths, is_dir):
            why.setdefault(TestRef(test_dir), []).append(f"MAINTAINERS {section!r} covers {path} and lists {SELFTESTS}/{test_dir}/")
    return _merge(why)


def _merge(why: dict[TestRef, list[str]]) -> list[Chosen]:
    """A whole directory already includes its single tests."""
    whole = {r.dir for r in why if r.name is None}
    out = []
    for ref in sorted(why, key=lambda r: (r.dir, r.name or "")):
        if ref.name is not None and ref.dir in whole:
            why[TestRef(ref.dir)] += why[ref]
            continue
        out.append(ref)
    return [Chosen(r, tuple(dict.fromkeys(why[r]))) for r in out]


def _maintainers_dirs(text: str, paths: Sequence[str], is_dir: IsDir | None) -> Iterable[tuple[str, str, str]]:
    """(entry, selftest dir, path) for each entry that lists selftest dirs and whose first covered path
    (as get_maintainer.pl reads MAINTAINERS: reviewer/tree/maintainers.py) is outside them."""
    for entry in mentioning(text, SELFTESTS):  # the ~80 entries with selftests, of ~3,000
        tests = [m["dir"] for p in entry.files if SELFTESTS in p and (m := _TOUCHED.match(p if p.endswith("/") else p + "/"))]
        if not tests:
            continue
        hit = next((path for path in paths if entry.covers(path, is_dir)), None)
        if hit is not None and not _TOUCHED.match(hit):
            for t in dict.fromkeys(tests):
                yield entry.title, t, hit
