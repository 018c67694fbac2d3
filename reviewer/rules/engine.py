"""Evaluate declarative rules against a parsed series: trigger -> captures -> requirements.

A rule triggers on file changes (and commit messages); each distinct set of captures ({arch})
is checked against every requirement, first in the series, then (or_in_base) in the base tree.
The engine, not the rule file, stamps the finding's rule id and level.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from itertools import product

from reviewer.model import Change, FileChange, Finding, Level, Line, Patch, Series
from reviewer.rules.schema import PLACEHOLDER, Condition, Requirement, Rule
from reviewer.tree.base import BaseTree, Searchable

Captures = tuple[tuple[str, str], ...]  # sorted (name, value) pairs: hashable, comparable


@dataclass(frozen=True)
class Hit:
    """Where a trigger matched: the captures, the first patch and file, the matched added line."""

    captures: Captures
    patch: int
    path: str | None = None
    line: Line | None = None


Found = dict[str, list[int]]  # a literal -> the positions in _Index.changes of the changes whose added text holds it
_TRIE_MAX = 100  # longer literals are looked up one by one: a trie regex nests a group per branching character
_ONE_BY_ONE = 4000  # literals x changes up to which `in` one by one beats compiling a regex (10 patches: ~400)


class _Index:
    """The series' file changes in order, read once per evaluation: their added texts, which of them
    hold a captured value, and every regex the evaluation interpolates, compiled once."""

    def __init__(self, patches: Sequence[Patch]) -> None:
        self.patches = patches
        self.changes = [(patch.index, fc) for patch in patches for fc in patch.files]
        self._texts: list[str] | None = None
        self._regexes: dict[str, re.Pattern[str]] = {}

    def regex(self, pattern: str) -> re.Pattern[str]:
        """re.compile, kept for the whole evaluation: re's own cache holds 512 patterns, fewer than a
        500-patch series interpolates, so in_base would compile each one a second time."""
        compiled = self._regexes.get(pattern)
        if compiled is None:
            compiled = self._regexes[pattern] = re.compile(pattern)
        return compiled

    def texts(self) -> list[str]:
        """Each change's added lines, joined with newlines."""
        if self._texts is None:
            self._texts = ["\n".join(ln.text for ln in fc.added_lines()) for _, fc in self.changes]
        return self._texts

    def containing(self, literals: set[str]) -> Found:
        """For each of LITERALS, the changes whose added text contains it, in series order: what
        `literal in text` says, for all the literals in one regex scan of the series."""
        texts = self.texts()
        small = len(literals) * len(texts) <= _ONE_BY_ONE  # cheaper than compiling a regex
        one_by_one = literals if small else {lit for lit in literals if not 0 < len(lit) <= _TRIE_MAX}
        found = {lit: [at for at, text in enumerate(texts) if lit in text] for lit in one_by_one}
        if trie := _trie(literals - one_by_one):
            prefixes = {lit: _prefixes(trie, lit) for lit in literals - one_by_one}
            # One branch per first character, the rest in a lookahead: re skips to the positions holding
            # a first character, matches the longest literal there (the others there are its prefixes)
            # and goes on from the next character, so overlapping literals are all found.
            scan = re.compile("|".join(f"{re.escape(char)}(?=({_trie_regex(rest)}))" for char, rest in trie.items()))
            for at, text in enumerate(texts):
                for lit in {p for m in scan.finditer(text) for p in prefixes[m.group(0) + m.group(m.lastindex or 0)]}:
                    found.setdefault(lit, []).append(at)
        return found


Trie = dict[str, "Trie"]  # a character -> the subtree; the key "" marks the end of a literal


def _trie(words: Iterable[str]) -> Trie:
    root: Trie = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return root


def _trie_regex(node: Trie) -> str:
    """A regex matching the longest word of the trie at a position: children before the end of a word."""
    alternatives = [re.escape(char) + _trie_regex(child) for char, child in node.items() if char]
    alternatives += [""] if "" in node else []
    return alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"


def _prefixes(trie: Trie, word: str) -> list[str]:
    """The words of TRIE that are prefixes of WORD (itself included)."""
    out, node = [], trie
    for i, char in enumerate(word):
        node = node[char]
        if "" in node:
            out.append(word[: i + 1])
    return out


def evaluate(rules: Sequence[Rule], series: Series, base: BaseTree | None) -> Iterator[Finding]:
    whole = _Index(series.patches)
    for rule in rules:
        if rule.scope == "patch":
            for patch in series.patches:
                yield from _evaluate(rule, _Index((patch,)), base)
        else:
            yield from _evaluate(rule, whole, base)


def _evaluate(rule: Rule, index: _Index, base: BaseTree | None) -> Iterator[Finding]:
    hits = trigger_hits(rule, index.patches)
    # Each requirement's captured values are looked up in one pass over the series, not one pass each.
    found = [index.containing({lit for h in hits if (lit := _literal(req, dict(h.captures)))}) for req in rule.requires]
    for hit in hits:
        for req, where in zip(rule.requires, found, strict=True):
            finding = _verdict(rule, req, hit, index, where, base)
            if finding is not None:
                yield finding


# --- the trigger ---------------------------------------------------------------------------

def trigger_hits(rule: Rule, patches: Sequence[Patch]) -> list[Hit]:
    """One hit per distinct capture set, the earliest first; none if the rule does not trigger."""
    pools: list[list[Hit]] = []
    if rule.any_of:
        pools.append(sorted((h for c in rule.any_of for h in _condition_hits(c, patches)), key=lambda h: h.patch))
    pools += [_condition_hits(c, patches) for c in rule.all_of]
    if not pools or not all(pools):
        return []
    distinct: dict[Captures, Hit] = {}
    for hit in reduce(_join, pools):
        distinct.setdefault(hit.captures, hit)
    return list(distinct.values())


def _join(left: list[Hit], right: list[Hit]) -> list[Hit]:
    """all_of: keep the pairs whose shared captures agree; the left hit names the patch."""
    out = []
    for a in left:
        for b in right:
            mine, theirs = dict(a.captures), dict(b.captures)
            if all(mine[k] == v for k, v in theirs.items() if k in mine):
                out.append(Hit(_freeze({**theirs, **mine}), a.patch, a.path, a.line))
    return out


def _condition_hits(cond: Condition, patches: Sequence[Patch]) -> list[Hit]:
    hits = []
    for patch in patches:
        found = cond.message.search(patch.message) if cond.message else None
        if cond.message and found is None:
            continue
        caps = _groups(found)
        if cond.path is None and cond.added_line is None and cond.removed_line is None and cond.change == "any":
            hits.append(Hit(_freeze(caps), patch.index))
            continue
        hits += [h for fc in patch.files for h in _file_hits(cond, fc, caps, patch.index)]
    return hits


def _file_hits(cond: Condition, fc: FileChange, caps: dict[str, str], index: int) -> list[Hit]:
    if cond.change != "any" and fc.change != cond.change:
        return []
    caps = dict(caps)
    if cond.path is not None:
        if (m := cond.path.fullmatch(fc.path)) is None:
            return []
        caps |= _groups(m)
    pools: list[list[tuple[Line, re.Match[str]]]] = []
    for regex, lines in ((cond.added_line, fc.added_lines()), (cond.removed_line, fc.removed_lines())):
        if regex is not None:
            pools.append([(ln, m) for ln in lines if (m := regex.search(ln.text))])
    hits = []
    # Every matching line counts, so a table that gains two syscalls yields two capture sets.
    for combo in product(*pools):
        joined = dict(caps)
        for _, m in combo:
            joined |= _groups(m)
        hits.append(Hit(_freeze(joined), index, fc.path, combo[0][0] if combo else None))
    return hits


# --- the requirements ----------------------------------------------------------------------

def _verdict(rule: Rule, req: Requirement, hit: Hit, index: _Index, found: Found, base: BaseTree | None) -> Finding | None:
    if req.applies_if_base_has is not None and not _base_has(base, req.applies_if_base_has):
        return None  # not this tree's convention (or no tree to tell): nothing to say
    if req.applies_if_series_has is not None and not any(req.applies_if_series_has.fullmatch(fc.path) for _, fc in index.changes):
        return None
    caps = dict(hit.captures)
    where = satisfied_at(req, caps, index, found)
    if where is not None and (where <= hit.patch or not req.bisect):
        return None
    if req.or_in_base and base is not None and in_base(req, caps, base, index):
        return None
    pattern = interpolate(req.path, caps, regex=True)
    if where is not None:
        path = shown_path(pattern, index, None, where)
        text = (f"{req.id} ({path or readable(pattern)}) is met only in patch {where}, after the patch that needs it ({hit.patch}): "
                f"the series is not bisectable at {hit.patch}")
        return _finding(rule, req, hit, Level.WARNING, text, path)
    path = shown_path(pattern, index, base)
    message = interpolate(req.message, caps, regex=False)
    if req.or_in_base and base is None:
        return _finding(rule, req, hit, Level.INFO, f"unverified: {message} (no kernel tree to check the base against)", path)
    return _finding(rule, req, hit, req.level or rule.level, message, path)


def _base_has(base: BaseTree | None, pattern: re.Pattern[str]) -> bool:
    return base is not None and any(pattern.fullmatch(p) for p in base.paths())


def _finding(rule: Rule, req: Requirement, hit: Hit, level: Level, message: str, path: str | None) -> Finding:
    hint = interpolate(req.hint, dict(hit.captures), regex=False) if req.hint else None
    quote = (f"+{hit.line.text}",) if hit.line is not None and hit.line.kind == "+" else ()
    return Finding(f"{rule.id}/{req.id}", level, message, hit.patch, path, None, hint, quote)


def satisfied_at(req: Requirement, caps: dict[str, str], index: _Index, found: Found) -> int | None:
    """The index of the first patch that meets REQ, or None. FOUND: the changes whose added text holds each literal."""
    path_re = index.regex(interpolate(req.path, caps, regex=True))
    if req.file == "present":
        return _present_at(path_re, index.changes)
    line_re = _line_regex(req, caps, index)
    literal = _literal(req, caps)
    # Only the changes whose added text holds the literal can meet REQ: a 500-patch series has
    # thousands of changes, and looking at each for each capture made the stage quadratic.
    for at in range(len(index.changes)) if literal is None else found.get(literal, ()):
        patch, fc = index.changes[at]
        if path_re.fullmatch(fc.path) and _meets(req, fc, line_re):
            return patch
    return None


def _meets(req: Requirement, fc: FileChange, line_re: re.Pattern[str] | None) -> bool:
    if req.file == "added":
        return fc.change == Change.ADDED
    if req.file == "symlink":
        return fc.change != Change.DELETED and fc.new_mode == "120000"
    lines = fc.added_lines() if req.added_line is not None else fc.removed_lines()
    return line_re is not None and any(line_re.search(ln.text) for ln in lines)


def _present_at(path_re: re.Pattern[str], changes: Sequence[tuple[int, FileChange]]) -> int | None:
    """The first patch that leaves a matching file in place, unless a later patch deletes it again."""
    first: dict[str, int] = {}
    for patch, fc in changes:
        if not path_re.fullmatch(fc.path):
            continue
        if fc.change == Change.DELETED:
            first.pop(fc.path, None)
        else:
            first.setdefault(fc.path, patch)
    return min(first.values(), default=None)


def in_base(req: Requirement, caps: dict[str, str], base: BaseTree, index: _Index) -> bool:
    path_re = index.regex(interpolate(req.path, caps, regex=True))
    line_re = _line_regex(req, caps, index)
    paths: Iterable[str] = base.paths()
    literal = _literal(req, caps)
    if literal and isinstance(base, Searchable):
        # A captured value that the line must contain: let git grep pick the few candidate files.
        paths = sorted(base.files_containing(literal))
    return any(_base_file_meets(req, path, line_re, base) for path in paths if path_re.fullmatch(path))


def _literal(req: Requirement, caps: dict[str, str]) -> str | None:
    """The longest capture value the required line must contain verbatim, if any (an aliased one need not)."""
    if req.added_line is None:
        return None
    values = [caps[name] for name in PLACEHOLDER.findall(req.added_line)
              if caps.get(name) and not req.aliases.get(name, {}).get(caps[name])]
    return max(values, key=len, default=None)


def _base_file_meets(req: Requirement, path: str, line_re: re.Pattern[str] | None, base: BaseTree) -> bool:
    """In the base an added or present file just has to exist; a required line is looked up in it."""
    if req.file == "symlink":
        return base.is_symlink(path)
    if req.file is not None:
        return True
    return line_re is not None and any(line_re.search(ln) for ln in (base.read(path) or "").splitlines())


def _line_regex(req: Requirement, caps: dict[str, str], index: _Index) -> re.Pattern[str] | None:
    template = req.added_line if req.added_line is not None else req.removed_line
    return None if template is None else index.regex(interpolate(template, caps, regex=True, aliases=req.aliases))


# --- templates -----------------------------------------------------------------------------

def interpolate(template: str, caps: dict[str, str], *, regex: bool,
                aliases: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None) -> str:
    """Fill {name}: escaped in a regex (any of its ALIASES too); a capture the trigger did not set matches any path segment."""
    def fill(m: re.Match[str]) -> str:
        value = caps.get(m.group(1))
        if value is None:
            return "[^/]*" if regex else m.group(0)
        if not regex:
            return value
        others = (aliases or {}).get(m.group(1), {}).get(value, ())
        return f"(?:{'|'.join(re.escape(v) for v in (value, *others))})" if others else re.escape(value)

    return PLACEHOLDER.sub(fill, template)


_META = set(".^$*+?{}[]|()")
_QUANTIFIERS = set("*+?{")


def readable(pattern: str) -> str:
    """`^arch/x86/Kconfig$` -> `arch/x86/Kconfig`; a pattern that is not a plain path stays as it is (for a
    message; a finding's path is shown_path's)."""
    body = _body(pattern)
    text, whole = _literal_start(body)
    return text if whole else body


def shown_path(pattern: str, index: _Index, base: BaseTree | None, patch: int | None = None) -> str | None:
    """The path a requirement's finding names, never the pattern: the path itself when the pattern is a plain
    one; else the file it matched in the series (in PATCH, when given), or with a tree in the base; several: the
    directory that holds them; none: the directory the pattern looks in (`arch/loongarch/`); else no path."""
    body = _body(pattern)
    text, whole = _literal_start(body)
    if whole:
        return text
    regex = index.regex(pattern)
    files = sorted({fc.path for at, fc in index.changes if (patch is None or at == patch) and regex.fullmatch(fc.path)})
    if not files and base is not None and patch is None:
        files = sorted(p for p in base.paths() if regex.fullmatch(p))
    starts = [_literal_start(alternative)[0] for alternative in _alternatives(body)]
    return _one_place(files) or _directory(os.path.commonprefix(starts))


def _one_place(files: Sequence[str]) -> str | None:
    """The one file, or the directory that holds them all (None: they share none)."""
    return files[0] if len(files) == 1 else _directory(os.path.commonprefix(list(files))) if files else None


def _directory(prefix: str) -> str | None:
    """The directories of a path's start (`arch/loongarch/vd` -> `arch/loongarch/`); None when it has none."""
    return prefix[: prefix.rfind("/") + 1] or None


def _body(pattern: str) -> str:
    body = pattern.removeprefix("^")
    return body[:-1] if body.endswith("$") and not body.endswith("\\$") else body


def _literal_start(body: str) -> tuple[str, bool]:
    """BODY's literal start, unescaped, and whether that is all of it (a character a quantifier makes
    optional is not part of it: `arch/x86?` starts with `arch/x8`)."""
    out, i = [], 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body) and not body[i + 1].isalnum():
            out.append(body[i + 1])
            i += 2
            continue
        if char in _META or char == "\\":
            return "".join(out[:-1] if char in _QUANTIFIERS else out), False
        out.append(char)
        i += 1
    return "".join(out), True


def _alternatives(body: str) -> list[str]:
    """BODY split at its top-level `|`s (not in a group or a character class, not escaped)."""
    parts, start, depth, in_class, i = [], 0, 0, False, 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    return [*parts, body[start:]]


def _groups(m: re.Match[str] | None) -> dict[str, str]:
    return {} if m is None else {k: v for k, v in m.groupdict().items() if v is not None}


def _freeze(caps: dict[str, str]) -> Captures:
    return tuple(sorted(caps.items()))
