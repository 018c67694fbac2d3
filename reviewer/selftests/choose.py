"""Which kselftests a series makes relevant: the rules' hints, the selftest dirs it touches, MAINTAINERS."""
from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reviewer.model import Series

SELFTESTS = "tools/testing/selftests"
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


def choose(series: Series, hints: Iterable[tuple[str, str]], maintainers: str | None) -> list[Chosen]:
    """The union of the rules' hints, the selftest dirs the series touches, and MAINTAINERS."""
    why: dict[TestRef, list[str]] = {}
    for test, reason in hints:
        why.setdefault(TestRef.parse(test), []).append(reason)
    paths = sorted({f.path for p in series.patches for f in p.files})
    for path in paths:
        if m := _TOUCHED.match(path):
            why.setdefault(TestRef(m["dir"]), []).append(f"the series touches {path}")
    if maintainers:
        for section, test_dir, path in _maintainers_dirs(maintainers, paths):
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


def _maintainers_dirs(text: str, paths: Sequence[str]) -> Iterable[tuple[str, str, str]]:
    for title, patterns in _sections(text, SELFTESTS):
        tests = [m["dir"] for p in patterns if (m := _TOUCHED.match(p.rstrip("*") if p.endswith("/") else p + "/"))]
        if not tests:
            continue
        hit = next((path for path in paths if any(_f_matches(p, path) for p in patterns)), None)
        if hit is not None and not _TOUCHED.match(hit):
            for t in dict.fromkeys(tests):
                yield title, t, hit


def _sections(text: str, mentioning: str = "") -> Iterable[tuple[str, list[str]]]:
    """(title, F: patterns) of each MAINTAINERS entry (entries are separated by blank lines); with
    MENTIONING, only the entries whose text holds it (the few with selftests, of thousands)."""
    for block in re.split(r"\n[ \t]*\n", text):
        if mentioning not in block:
            continue
        title = ""
        patterns: list[str] = []
        for line in block.splitlines():
            if line.startswith("F:"):
                patterns.append(line[2:].strip())
            elif line.strip() and not re.match(r"^[A-Z]:", line) and not title:
                title = line.strip()
        if patterns:
            yield title, patterns


def _f_matches(pattern: str, path: str) -> bool:
    """MAINTAINERS F: semantics: `dir/` is recursive, `*` does not cross a slash.

    Most F: lines have no wildcard, and a glob's literal head must be PATH's head: only what
    is left is compiled (MAINTAINERS has thousands of patterns; compiling each on every call
    cost 0.3 s a review on the 6.12 tree)."""
    if pattern.endswith("/"):
        return path.startswith(pattern)
    if path == pattern or path.startswith(pattern + "/"):
        return True
    wild = _WILD.search(pattern)
    return wild is not None and path.startswith(pattern[: wild.start()]) and _f_regex(pattern).match(path) is not None


_WILD = re.compile(r"[*?\[]")


@functools.cache
def _f_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern).replace(".*", "[^/]*"))
