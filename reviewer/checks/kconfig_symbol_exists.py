"""Every Kconfig symbol the series refers to is defined, in the base tree or by the series.

Why: Kconfig silently treats an unknown symbol as `n`: a `select`, `depends on`,
`IS_ENABLED(CONFIG_X)`, `#ifdef CONFIG_X` or `obj-$(CONFIG_X)` with a typo compiles and
does nothing (scripts/checkkconfigsymbols.py exists to catch exactly this). Needs the base
tree: without one the symbols the series does not define are reported as `unverified` (info).
The other half, a `config` entry the series removes while the tree still uses it, is kconfig-symbol-removed.
PASS: `select VDSO_GETRANDOM` where lib/vdso/Kconfig has `config VDSO_GETRANDOM`.
FAIL: `obj-$(CONFIG_DMAPOOL_TESTS) += dmapool_test.o` (the symbol is DMAPOOL_TEST).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.model import FileChange, Finding, Level, Series
from reviewer.tree.base import BaseTree, RegexSearchable, Searchable

ID = "kconfig-symbol-exists"
LEVEL = Level.ERROR
LEVELS = {"unverified": Level.INFO}
KCONFIG = re.compile(r"(.*/)?Kconfig[^/]*")
DEFINE = re.compile(r"^\s*(?:menu)?config\s+([A-Za-z0-9_]+)\s*$", re.MULTILINE)
KCONFIG_REF = re.compile(r"^\s*(?:select|imply|depends\s+on|visible\s+if|if|default\s+\S+\s+if)\s+(.*)$")
MACRO = re.compile(r"\$\([^)]*\)")  # $(cc-option,...) and friends name no symbols
SYMBOL = re.compile(r"\b([A-Z][A-Z0-9_]*[A-Z0-9])\b")
CONFIG = re.compile(r"\bCONFIG_([A-Za-z0-9_]+)")
C_CONTEXT = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif)\b|\bIS_(ENABLED|BUILTIN|MODULE|REACHABLE)\s*\(|\bdefined\s*\(")
MAKE_CONTEXT = re.compile(r"\$\(CONFIG_|^\s*if(n?def|eq|neq)\b")
MAKEFILE = re.compile(r"(.*/)?(Makefile|Kbuild)[^/]*|.*\.mk")
DEFCONFIG = re.compile(r".*(_defconfig|/configs/.*\.config)")
SOURCE = re.compile(r".*\.(c|h|S)")


def check(series: Series, base: BaseTree | None) -> Iterator[Finding]:
    defined = {m for p in series.patches for fc in p.files if KCONFIG.fullmatch(fc.path)
               for ln in fc.added_lines() for m in DEFINE.findall(ln.text)}
    seen: dict[str, tuple[int, str]] = {}
    for patch in series.patches:
        for fc in patch.files:
            for symbol in references(fc):
                seen.setdefault(symbol, (patch.index, fc.path))
    unknown = sorted(s for s in seen if s not in defined and _strip_module(s) not in defined)
    if base is None:
        if unknown:
            yield Finding("unverified", LEVEL, f"unverified: Kconfig symbols {', '.join(unknown)} (no kernel tree to "
                                               "check the base against)")
        return
    missing = _undefined(base, unknown)
    for symbol in (s for s in unknown if s in missing):
        index, path = seen[symbol]
        yield Finding("", LEVEL, f"Kconfig symbol {symbol} is not defined anywhere", index, path,
                      hint=f"check the spelling; `git grep -n 'config {symbol}'` finds nothing")


def references(fc: FileChange) -> set[str]:
    """The symbols FC's added lines refer to (without the CONFIG_ prefix)."""
    kind = file_kind(fc.path)
    return set() if kind is None else {s for ln in fc.added_lines() for s in line_references(kind, ln.text)}


def file_kind(path: str) -> str | None:
    """kconfig, make, defconfig or source: how PATH refers to symbols; None for files that do not
    (tools/ and scripts/ have build systems of their own)."""
    if path.startswith(("tools/", "scripts/")):
        return None
    kinds = (("kconfig", KCONFIG), ("defconfig", DEFCONFIG), ("make", MAKEFILE), ("source", SOURCE))
    return next((kind for kind, pattern in kinds if pattern.fullmatch(path)), None)


def line_references(kind: str, line: str) -> set[str]:
    """The symbols a LINE of a file of KIND refers to: Kconfig statements, Makefile conditions and
    $(CONFIG_X), defconfig lines, C preprocessor conditions and IS_ENABLED()."""
    if kind == "kconfig":
        m = KCONFIG_REF.match(line)
        return set(SYMBOL.findall(MACRO.sub("", m.group(1).split("#")[0]))) if m else set()
    context = {"make": MAKE_CONTEXT, "source": C_CONTEXT}.get(kind)  # a defconfig line is all reference
    return set(CONFIG.findall(line)) if context is None or context.search(line) else set()


def _strip_module(symbol: str) -> str:
    """`#ifdef CONFIG_FOO_MODULE` tests FOO=m."""
    return symbol.removesuffix("_MODULE")


def _undefined(base: BaseTree, symbols: list[str]) -> set[str]:
    """The SYMBOLS no Kconfig file of BASE defines (what scripts/checkkconfigsymbols.py looks up, for
    just the symbols the series uses)."""
    if not isinstance(base, RegexSearchable):
        return {s for s in symbols if not _in_base(base, s) and not _in_base(base, _strip_module(s))}
    names = sorted({n for s in symbols for n in (s, _strip_module(s))})
    defined = {d for path in defining_files(base, names) for d in DEFINE.findall(base.read(path) or "")}
    return {s for s in symbols if s not in defined and _strip_module(s) not in defined}


def defining_files(base: RegexSearchable, names: list[str]) -> list[str]:
    """The Kconfig files of BASE with a `config` entry for one of NAMES: one `git grep -E` over the
    Kconfig files for 200 names at a time (0.1 s on the 6.12 tree; a search of the whole tree takes 3 s)."""
    found: set[str] = set()
    for chunk in (names[i : i + 200] for i in range(0, len(names), 200)):
        regex = rf"^[[:space:]]*(menu)?config[[:space:]]+({'|'.join(chunk)})[[:space:]]*$"
        found |= {p for p in base.files_matching(regex, ("*Kconfig*",)) if KCONFIG.fullmatch(p)}
    return sorted(found)


def _in_base(base: BaseTree, symbol: str) -> bool:
    if isinstance(base, Searchable):
        paths = sorted(p for p in base.files_containing(symbol) if KCONFIG.fullmatch(p))
    else:
        paths = [p for p in base.paths() if KCONFIG.fullmatch(p)]
    return any(symbol in DEFINE.findall(base.read(p) or "") for p in paths)
