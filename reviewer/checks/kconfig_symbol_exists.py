"""Every Kconfig symbol the series refers to is defined, in the base tree or by the series.

Why: Kconfig silently treats an unknown symbol as `n`: a `select`, `depends on`,
`IS_ENABLED(CONFIG_X)`, `#ifdef CONFIG_X` or `obj-$(CONFIG_X)` with a typo compiles and
does nothing (scripts/checkkconfigsymbols.py exists to catch exactly this). Needs the base
tree: without one the symbols the series does not define are reported as `unverified` (info).
PASS: `select VDSO_GETRANDOM` where lib/vdso/Kconfig has `config VDSO_GETRANDOM`.
FAIL: `obj-$(CONFIG_DMAPOOL_TESTS) += dmapool_test.o` (the symbol is DMAPOOL_TEST).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.model import FileChange, Finding, Level, Series
from reviewer.rules.engine import BaseTree, RegexSearchable, Searchable

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
            yield Finding("unverified", LEVEL, f"unverified: Kconfig symbols {', '.join(unknown)} (no kernel tree to check the base against)")
        return
    missing = _undefined(base, unknown)
    for symbol in (s for s in unknown if s in missing):
        index, path = seen[symbol]
        yield Finding("", LEVEL, f"Kconfig symbol {symbol} is not defined anywhere", index, path,
                      hint=f"check the spelling; `git grep -n 'config {symbol}'` finds nothing")


def references(fc: FileChange) -> set[str]:
    """The symbols FC's added lines refer to (without the CONFIG_ prefix)."""
    if fc.path.startswith(("tools/", "scripts/")):
        return set()
    found: set[str] = set()
    for line in (ln.text for ln in fc.added_lines()):
        if KCONFIG.fullmatch(fc.path):
            m = KCONFIG_REF.match(line)
            found |= set(SYMBOL.findall(MACRO.sub("", m.group(1).split("#")[0]))) if m else set()
        elif (MAKEFILE.fullmatch(fc.path) and MAKE_CONTEXT.search(line)) or DEFCONFIG.fullmatch(fc.path) \
                or (SOURCE.fullmatch(fc.path) and C_CONTEXT.search(line)):
            found |= set(CONFIG.findall(line))
    return found


def _strip_module(symbol: str) -> str:
    """`#ifdef CONFIG_FOO_MODULE` tests FOO=m."""
    return symbol.removesuffix("_MODULE")


def _undefined(base: BaseTree, symbols: list[str]) -> set[str]:
    """The SYMBOLS no Kconfig file of BASE defines: on a git tree one `git grep` over the Kconfig files
    for all of them (what scripts/checkkconfigsymbols.py looks up, for just the symbols the series uses)."""
    if not isinstance(base, RegexSearchable):
        return {s for s in symbols if not _in_base(base, s) and not _in_base(base, _strip_module(s))}
    names = sorted({n for s in symbols for n in (s, _strip_module(s))})
    defined: set[str] = set()
    for chunk in (names[i : i + 200] for i in range(0, len(names), 200)):
        regex = rf"^[[:space:]]*(menu)?config[[:space:]]+({'|'.join(chunk)})[[:space:]]*$"
        for path in sorted(p for p in base.files_matching(regex, ("*Kconfig*",)) if KCONFIG.fullmatch(p)):
            defined |= set(DEFINE.findall(base.read(path) or ""))
    return {s for s in symbols if s not in defined and _strip_module(s) not in defined}


def _in_base(base: BaseTree, symbol: str) -> bool:
    if isinstance(base, Searchable):
        paths = sorted(p for p in base.files_containing(symbol) if KCONFIG.fullmatch(p))
    else:
        paths = [p for p in base.paths() if KCONFIG.fullmatch(p)]
    return any(symbol in DEFINE.findall(base.read(p) or "") for p in paths)
