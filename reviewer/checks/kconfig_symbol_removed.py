"""A Kconfig symbol whose `config` entry the series removes is no longer used by the tree.

Why: the other half of scripts/checkkconfigsymbols.py (kconfig-symbol-exists is the first). Once
`config FOO` is gone, Kconfig takes FOO as `n` without a word: every `depends on FOO` hides its
option, `select FOO` does nothing, `#ifdef CONFIG_FOO` and `obj-$(CONFIG_FOO)` are dead code.
Looks at the tree as the whole series leaves it, for the uses kconfig-symbol-exists counts
(Makefile conditions and $(CONFIG_FOO), C preprocessor conditions and IS_ENABLED()) and any
Kconfig expression (depends on, select, imply, if, default, range, a prompt's `if`), help texts
left out. Not counted: defconfigs and config fragments (`make olddefconfig` drops unknown
symbols, and they are refreshed on their own schedule), tools/, scripts/ and Documentation/. A
symbol that another Kconfig file still defines (another arch's, or where the series moves it)
is not removed. Needs the base tree: one `git grep -w` for all the removed symbols (~3 s on the
6.12 tree); without one, a removal is reported as `unverified` (info).
PASS: removing `config DMAPOOL_TEST` from mm/Kconfig with `obj-$(CONFIG_DMAPOOL_TEST) += dmapool_test.o`.
FAIL: removing `config DMAPOOL_TEST` and leaving `obj-$(CONFIG_DMAPOOL_TEST) += dmapool_test.o` in mm/Makefile.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.checks._files import text_after
from reviewer.checks.kconfig_symbol_exists import DEFINE, KCONFIG, MACRO, defining_files, file_kind, line_references
from reviewer.model import Change, Finding, Level, Series
from reviewer.tree.base import BaseTree, RegexSearchable, WordSearchable

ID = "kconfig-symbol-removed"
LEVEL = Level.ERROR
LEVELS = {"unverified": Level.INFO}
NOT_USES = (":(exclude)tools/", ":(exclude)scripts/", ":(exclude)Documentation/", ":(exclude)*defconfig",
            ":(exclude)arch/*/configs/*")
STATEMENT = re.compile(r"^\s*(?:select|imply|depends\s+on|visible\s+if|if|default|def_bool|def_tristate|range"
                       r"|(?:bool|tristate|string|int|hex|prompt)\b.*?\sif)\s+(.*)$")
QUOTED = re.compile(r'"[^"]*"')
HELP = re.compile(r"^\s*(---help---|help)\s*$")
WORD = re.compile(r"[A-Za-z0-9_]+")
SHOWN = 5  # uses named in a finding; the others are counted

Use = tuple[str, int, str]  # path, line number, text


def check(series: Series, base: BaseTree | None) -> Iterator[Finding]:
    removed = _removed(series)
    if not removed:
        return
    if base is None:
        yield from _unverified(series, set(removed))
        return
    defined = _defined_after(series, base, sorted(removed))
    uses = _uses(series, base, {s for s in removed if s not in defined})
    for symbol in sorted(uses):
        index, path = removed[symbol]
        where = [f"{p}:{n}" for p, n in uses[symbol]]
        more = f" and {len(where) - SHOWN} more" if len(where) > SHOWN else ""
        yield Finding("", LEVEL, f"Kconfig symbol {symbol} is no longer defined (`config {symbol}` is removed from {path}) "
                      f"but is still used: {', '.join(where[:SHOWN])}{more}", index, path,
                      hint=f"remove the uses too (`git grep -nw -e {symbol} -e CONFIG_{symbol}`), or keep the entry")


def _unverified(series: Series, removed: set[str]) -> Iterator[Finding]:
    """Without a tree, the removed symbols that the series does not define again."""
    readded = {s for p in series.patches for fc in p.files if KCONFIG.fullmatch(fc.path) for ln in fc.added_lines()
               for s in DEFINE.findall(ln.text)}
    if names := ", ".join(sorted(removed - readded)):
        yield Finding("unverified", LEVEL, f"unverified: the series removes the Kconfig entries of {names} "
                      "(no kernel tree to check that nothing uses them)")


def _removed(series: Series) -> dict[str, tuple[int, str]]:
    """Symbol -> (patch, Kconfig file) of the last removed `config` line for it."""
    out: dict[str, tuple[int, str]] = {}
    for patch in series.patches:
        for fc in (f for f in patch.files if KCONFIG.fullmatch(f.old_path or f.path)):
            for symbol in (s for ln in fc.removed_lines() for s in DEFINE.findall(ln.text)):
                out[symbol] = (patch.index, fc.old_path or fc.path)
    return out


def _defined_after(series: Series, base: BaseTree, names: list[str]) -> set[str]:
    """Which of NAMES a Kconfig file still defines after the series: one defining them in the base, or one it touches."""
    paths = defining_files(base, names) if isinstance(base, RegexSearchable) else [p for p in base.paths() if KCONFIG.fullmatch(p)]
    touched = {fc.path for p in series.patches for fc in p.files if KCONFIG.fullmatch(fc.path)}
    gone = _renamed_away(series)
    return {s for path in sorted(set(paths) | touched) if path not in gone for s in DEFINE.findall(text_after(series, base, path) or "")}


def _uses(series: Series, base: BaseTree, symbols: set[str]) -> dict[str, list[tuple[str, int]]]:
    """Symbol -> the (path, line) of each use in the tree after the series, in path order."""
    if not symbols:
        return {}
    words = sorted(w for s in symbols for w in (s, f"CONFIG_{s}", f"CONFIG_{s}_MODULE"))
    hits = base.lines_with_words(words, NOT_USES) if isinstance(base, WordSearchable) else _scan(base, words)
    touched = {fc.path for p in series.patches for fc in p.files}
    gone = _renamed_away(series)
    # A Kconfig hit is read in its whole file, to leave help texts out; a file the series touches
    # is read as the series leaves it (its hits may be gone, or new uses added).
    whole = {p for p, _, _ in hits if file_kind(p) == "kconfig"} | touched
    lines = [h for h in hits if h[0] not in whole and h[0] not in gone]
    for path in sorted(whole - gone):
        text = text_after(series, base, path) or ""
        lines += [(path, n, t) for n, t in (_statements(text) if file_kind(path) == "kconfig" else enumerate(text.splitlines(), 1))]
    uses: dict[str, list[tuple[str, int]]] = {}
    for path, number, text in sorted(lines):
        for symbol in sorted(_refers_to(path, text, symbols)):
            uses.setdefault(symbol, []).append((path, number))
    return uses


def _refers_to(path: str, line: str, symbols: set[str]) -> set[str]:
    """Which of SYMBOLS LINE of PATH uses: kconfig-symbol-exists' references, any Kconfig expression."""
    kind = file_kind(path)
    if kind is None or kind == "defconfig" or path.startswith("Documentation/"):
        return set()
    if kind == "kconfig":
        m = STATEMENT.match(QUOTED.sub("", line).split("#")[0])
        return set(WORD.findall(MACRO.sub("", m.group(1)))) & symbols if m else set()
    refs = line_references(kind, line)
    return {s for s in symbols if s in refs or f"{s}_MODULE" in refs}


def _statements(text: str) -> Iterator[tuple[int, str]]:
    """The numbered lines of a Kconfig file but its help texts. As scripts/kconfig/lexer.l reads them, a
    help text ends at the first non-blank line indented less than its first line, or not indented."""
    in_help, indent = False, 0  # indent: of the help text's first line; 0 until it is seen
    for number, line in enumerate(text.splitlines(), 1):
        width = len(line.expandtabs()) - len(line.expandtabs().lstrip())
        if in_help and not line.strip():
            continue
        if in_help and width > 0 and width >= indent:
            indent = indent or width
            continue
        in_help = bool(HELP.match(line))
        indent = 0
        if not in_help:
            yield number, line


def _renamed_away(series: Series) -> set[str]:
    """The paths a rename leaves behind: the base's text there no longer exists."""
    return {fc.old_path for p in series.patches for fc in p.files if fc.change is Change.RENAMED and fc.old_path}


def _scan(base: BaseTree, words: list[str]) -> list[Use]:
    """lines_with_words for a base tree that cannot search: read every file that could use a symbol."""
    pattern = re.compile(rf"(?<![A-Za-z0-9_])({'|'.join(words)})(?![A-Za-z0-9_])")
    return [(p, n, line) for p in base.paths() if file_kind(p) for n, line in enumerate((base.read(p) or "").splitlines(), 1)
            if pattern.search(line)]
