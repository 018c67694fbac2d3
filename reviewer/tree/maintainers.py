"""The one MAINTAINERS parser: entries as scripts/get_maintainer.pl reads them, and which cover a path.

get_maintainer.pl's rules (read in the 6.12 tree; `read_maintainer_file`, `get_maintainers`,
`file_match_pattern`), which this module follows:
- A line that starts with a capital letter and a colon (`F: mm/`) is a field; blank lines and
  `#` comments are skipped; any other line is text, and the last text line before a run of fields is the entry's
  title. Blank lines therefore do not end an entry: the next title does.
- F: and X: are turned into a regex anchored at the start only: `.` is literal, `*` is `.*`, `?`
  is `.`; other regex characters (`[ch]`) keep their meaning. A value without a wildcard or a dot
  that names a directory (`-d`, in the tree) gets a trailing `/`.
- A pattern ending in `/` matches every path below it, and its `*` crosses `/` (`drivers/*/foo/`
  matches `drivers/a/b/foo/x.c`). Any other pattern matches only paths with as many `/` as it
  has, so there `*` and `?` stay within one component; its end is not anchored (`F: lib/foo`
  covers `lib/foo.c` and `lib/foobar`, unless lib/foo is a directory).
- X: (same matching) excludes the entry, F: and N: alike; N: is a regex searched in the path
  (Perl's /x: blanks in it are ignored). K: matches file contents, never paths.
- A directory is asked for with a trailing `/` (get_maintainer.pl adds it to a directory it is
  given).
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from reviewer.model import Change, Series
from reviewer.tree.base import BaseTree

CATCH_ALL = "THE REST"
IsDir = Callable[[str], bool]

# An entry: its title (a line that is neither a field, blank nor a `#` comment), then its fields with
# any blank or comment lines among them (get_maintainer.pl drops those lines before it reads entries).
_ENTRY = re.compile(r"^(?![A-Z]:)(?![^\S\n]*(?:#|$))(.*)\n((?:(?:[A-Z]:.*|[^\S\n]*(?:#.*)?)(?:\n|\Z))*)", re.M)
_FIELD = re.compile(r"^([A-Z]):[^\S\n]*(.*)", re.M)  # Perl's `^([A-Z]):\s*(.*)`, one line at a time
_BODY_LINE = re.compile(r"[A-Z]:.*|[^\S\n]*(?:#.*)?")
_META = frozenset("\\^$.|?*+()[]{}")
_SPECIAL = _META - {"."}
_HEAD = re.compile(r"(?:[^\\^$.|?*+()\[\]{}]|\\\.)*")  # literal characters and `\.`


@dataclass(frozen=True)
class Entry:
    """One MAINTAINERS entry: its title and its fields (letter, value) in file order."""

    title: str
    fields: tuple[tuple[str, str], ...]

    def values(self, letter: str) -> tuple[str, ...]:
        return tuple(value for key, value in self.fields if key == letter)

    @property
    def files(self) -> tuple[str, ...]:
        return self.values("F")

    @property
    def excluded(self) -> tuple[str, ...]:
        return self.values("X")

    @property
    def regexes(self) -> tuple[str, ...]:
        return self.values("N")

    @property
    def keywords(self) -> tuple[str, ...]:
        return self.values("K")

    def covers(self, path: str, is_dir: IsDir | None = None) -> bool:
        """Whether get_maintainer.pl names this entry for PATH (`dir/` for a directory); IS_DIR as in
        `Maintainers.covering`."""
        named = any(p.matches(path, is_dir) for p in self._files) or any(_search(n, path, re.X, anchored=False) for n in self._names)
        return named and not any(p.matches(path, is_dir) for p in self._excluded)

    @cached_property
    def _names(self) -> tuple[str, ...]:  # asked on every covers(): not read from the fields each time
        return self.regexes

    @cached_property
    def _files(self) -> tuple[_Pattern, ...]:
        return tuple(_pattern(v) for v in self.files)

    @cached_property
    def _excluded(self) -> tuple[_Pattern, ...]:
        return tuple(_pattern(v) for v in self.excluded)


class _Pattern(NamedTuple):
    """An F: or X: value as get_maintainer.pl matches it (see the module's doc)."""

    value: str
    regex: str  # the value turned into get_maintainer.pl's regex
    prefix: str  # a literal head every match starts with: the cheap test before any regex
    literal: bool  # the prefix is the whole pattern: no regex is needed
    recursive: bool  # ends in `/`
    maybe_dir: bool  # no wildcard, no dot, no regex character: `-d` may add the `/`

    def matches(self, path: str, is_dir: IsDir | None) -> bool:
        if not path.startswith(self.prefix):
            return False
        if self.recursive:
            return self.literal or _search(self.regex, path)
        if self.maybe_dir and path.startswith(self.value + "/"):
            return True  # PATH lies below it, so it is a directory in PATH's tree
        if path.count("/") != self.regex.count("/"):
            return False
        if self.maybe_dir:
            return is_dir is None or not is_dir(self.value)  # a directory's pattern gained a `/`
        return self.literal or _search(self.regex, path)


def _pattern(value: str) -> _Pattern:
    regex = value.replace(".", "\\.").replace("*", ".*").replace("?", ".")
    if not _SPECIAL.intersection(value):  # most values: a plain path, perhaps with dots
        return _Pattern(value, regex, value, literal=True, recursive=value.endswith("/"),
                        maybe_dir=not value.endswith("/") and "." not in value)
    head = _HEAD.match(regex)
    assert head is not None  # it matches the empty string
    prefix, rest = head[0].replace("\\.", "."), regex[head.end() :]
    if "|" in regex:
        prefix = ""  # `^a|b`: the alternation is not anchored
    elif rest[:1] in ("{", "*") and prefix:
        prefix = prefix[:-1]  # a quantifier that allows none of the character before it
    maybe_dir = not value.endswith("/") and not _META.intersection(value)
    return _Pattern(value, regex, prefix, not rest, value.endswith("/"), maybe_dir)


@functools.cache
def _compiled(regex: str, flags: int) -> re.Pattern[str] | None:
    """None for a regex Python cannot read: it matches nothing (get_maintainer.pl would stop)."""
    try:
        return re.compile(regex, flags)
    except re.error:
        return None


def _search(regex: str, path: str, flags: int = 0, *, anchored: bool = True) -> bool:
    compiled = _compiled(("^" if anchored else "") + regex, flags)
    return compiled is not None and compiled.search(path) is not None


@dataclass(frozen=True)
class Maintainers:
    """A parsed MAINTAINERS text; `covering` answers as `get_maintainer.pl -f PATH --sections` does."""

    entries: tuple[Entry, ...]

    def covering(self, path: str, is_dir: IsDir | None = None) -> tuple[Entry, ...]:
        """The entries covering PATH (`dir/` for a directory), in file order, THE REST included.

        IS_DIR says whether a tree path is a directory (get_maintainer.pl's `-d`); it is asked
        only about a pattern such as `F: lib/foo` when PATH is beside it (`lib/foo.c`). Without
        it, such a pattern counts as a directory only when PATH lies below it."""
        by_dir, named = self._index
        found = set(named)  # N: is searched anywhere in the path: no index helps
        for directory in ("", *(path[:i] for i, char in enumerate(path) if char == "/")):
            found.update(i for i, p in by_dir.get(directory, ()) if p.matches(path, is_dir))
        return tuple(e for i in sorted(found) if (e := self.entries[i]).covers(path, is_dir))

    def covered(self, path: str, is_dir: IsDir | None = None) -> bool:
        """Whether an entry other than THE REST covers PATH (THE REST covers every path)."""
        return any(e.title != CATCH_ALL for e in self.covering(path, is_dir))

    @cached_property
    def _index(self) -> tuple[dict[str, list[tuple[int, _Pattern]]], tuple[int, ...]]:
        """The F: patterns by the directory their literal head names, and the entries with N: lines.
        A path meets only the patterns of its own directories (a few of 8,000), and only those
        are ever compiled; built on the first question, not by `parse` (choose asks none)."""
        by_dir: dict[str, list[tuple[int, _Pattern]]] = {}
        for index, entry in enumerate(self.entries):
            for pattern in entry._files:
                by_dir.setdefault(pattern.prefix.rpartition("/")[0], []).append((index, pattern))
        return by_dir, tuple(i for i, e in enumerate(self.entries) if e.regexes)


@functools.lru_cache(maxsize=4)
def parse(text: str) -> Maintainers:
    """TEXT's entries, parsed once per text (a review asks about the same MAINTAINERS many times)."""
    found = ((m[1], tuple(_FIELD.findall(m[2]))) for m in _ENTRY.finditer(text))
    return Maintainers(tuple(Entry(title, fields) for title, fields in found if fields))


@functools.lru_cache(maxsize=8)
def mentioning(text: str, needle: str) -> tuple[Entry, ...]:
    """The entries of TEXT (as `parse` has them, in file order) whose lines hold NEEDLE: read from
    NEEDLE's occurrences back to their titles, not the other ~3,000 entries (selftests/choose.py asks
    for the few that list selftests on every review; a whole parse costs it 5 times as much)."""
    starts = dict.fromkeys(_title_start(text, m.start()) for m in re.finditer(re.escape(needle), text))
    found = (m for start in starts if (m := _ENTRY.match(text, start)))
    return tuple(Entry(m[1], fields) for m in found if (fields := tuple(_FIELD.findall(m[2]))))


def _title_start(text: str, at: int) -> int:
    """Where the title of the entry holding offset AT starts: the last line before it (or its own)
    that is neither a field, blank nor a comment."""
    start = text.rfind("\n", 0, at) + 1
    while start > 0 and _BODY_LINE.fullmatch(text, start, _line_end(text, start)):
        start = text.rfind("\n", 0, start - 1) + 1
    return start


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def dirs_after(series: Series, base: BaseTree) -> IsDir:
    """get_maintainer.pl's `-d` in the tree after the series: a file of the base (not deleted) or one the
    series adds lies below the path. Asked only for `F: lib/foo` against `lib/foo.c` (rare): the base
    tree's whole listing is read only then."""
    changes = [fc for p in series.patches for fc in p.files]
    gone = {fc.path if fc.change is Change.DELETED else fc.old_path for fc in changes if fc.change in (Change.DELETED, Change.RENAMED)}
    added = [fc.path for fc in changes if fc.change is not Change.DELETED]
    known: dict[str, bool] = {}

    def is_dir(path: str) -> bool:
        if path not in known:
            below = path + "/"
            known[path] = any(f.startswith(below) for f in added) or any(
                f.startswith(below) and f not in gone for f in base.paths())
        return known[path]
    return is_dir
