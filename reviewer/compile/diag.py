"""Compiler and linker diagnostics in a make log, keyed so that a line moved by a patch is the same warning.

gcc and clang print `file:line:col: warning: text [-Wflag]` (clang, and gcc under a UTF-8 locale,
quote with typographic quotes: made plain). The key is the file, the kind and the text without
line numbers: a patch that adds ten lines above an old warning does not make it new; a second copy
of the same warning in the same file is new (the keys are counted).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

_LINE = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<kind>warning|error|fatal error): (?P<msg>.*)$")
# GNU ld: `[ld: ]FILE:(SECTION+OFF): undefined reference to `x'` (no debug info) or `FILE:LINE: ...` (with -g).
_LINKER = re.compile(r"^(?:\S*ld(?:\.\w+)?(?:-\d+)?: )?(?P<path>[^\s:]+):(?:(?P<line>\d+):|\([^)]*\):)?\s*"
                     r"(?P<msg>(?:undefined reference to|multiple definition of) .*)$")
# lld: `ld.lld-19: error: undefined symbol: foo`, then `>>> referenced by file.c:12` lines.
_LLD = re.compile(r"^\S*ld\.lld(?:-\d+)?: error: (?P<msg>.*)$")
_LLD_WHERE = re.compile(r"^>>> referenced by (?P<path>[^\s:]+):(?P<line>\d+)")
_MAKE_ERROR = re.compile(r"^make(?:\[\d+\])?: \*\*\* (?P<msg>.*)$")
# GNU as: `{standard input}:19: Error: text` (gcc -pipe) or `/tmp/ccX.s:19: Error: text`: the compiler's own
# assembly, whose lines mean nothing to the reader; make's next `*** [Makefile:N: target] Error 1` names the goal.
_AS = re.compile(r"^(?P<path>\{standard input\}|[^\s:][^:]*):(?:(?P<line>\d+):)? (?P<kind>Error|Warning): (?P<msg>.*)$")
_MAKE_TARGET = re.compile(r"^make(?:\[\d+\])?: \*\*\* \[(?:[^\]]*:\d+: )?(?P<target>[^\]\s]+)\] Error")
# make's own warnings about a Makefile (`Makefile:1984: warning: overriding recipe for target
# 'arch/powerpc/kernel/vmlinux.lds'` when asked for the top-level Makefile's KBUILD_LDS) say nothing of the code.
_MAKE_OWN = re.compile(r"^(Makefile|Kbuild)(\..*)?$")
_QUOTES = str.maketrans("\u2018\u2019\u201c\u201d", "''\"\"")
_NUMBERS = re.compile(r"\b\d+\b")


@dataclass(frozen=True)
class Diagnostic:
    path: str  # relative to the source tree
    line: int | None
    kind: str  # warning | error
    text: str  # the message, flag included
    quote: str  # the compiler's line as printed (path relative)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.path, self.kind, _NUMBERS.sub("N", self.text))


def parse(log: str, prefixes: Iterable[str] = ()) -> list[Diagnostic]:
    """The diagnostics in LOG, in order, once each (make -j prints a line once per compile); paths
    with one of PREFIXES (the source and build directories) made relative."""
    strip = tuple(p.rstrip("/") + "/" for p in prefixes) + ("./",)
    out: dict[tuple[str, int | None, str, str], Diagnostic] = {}
    lines = log.translate(_QUOTES).splitlines()
    for n, raw in enumerate(lines):
        if m := _LLD.match(raw):
            w = next((_LLD_WHERE.match(x.strip()) for x in lines[n + 1:n + 4] if _LLD_WHERE.match(x.strip())), None)
            path, line = (_relative(w["path"], strip), int(w["line"])) if w else ("", None)
            d = Diagnostic(path, line, "error", m["msg"].strip(), raw.strip())
        elif (m := _LINE.match(raw)) and not _MAKE_OWN.match(m["path"].rsplit("/", 1)[-1]):
            path = _relative(m["path"], strip)
            kind = "error" if "error" in m["kind"] else "warning"
            d = Diagnostic(path, int(m["line"]), kind, m["msg"].strip(),
                           f"{path}:{m['line']}:{m['col'] + ':' if m['col'] else ''} {m['kind']}: {m['msg'].strip()}")
        elif m := _AS.match(raw):
            d = _assembler(m, lines[n + 1:], strip)
        elif m := _LINKER.match(raw):
            path = _relative(m["path"], strip)
            line = int(m["line"]) if m["line"] else None
            d = Diagnostic(path, line, "error", m["msg"].strip(), f"{path}:{str(line) + ':' if line else ''} {m['msg'].strip()}")
        else:
            continue
        out.setdefault((d.path, d.line, d.kind, d.text), d)
    return list(out.values())


def _assembler(m: re.Match[str], after: list[str], strip: tuple[str, ...]) -> Diagnostic:
    """An assembler message: on a source file (a .S) where it is one, else on the goal make names next."""
    kind = m["kind"].lower()
    path = _relative(m["path"], strip)
    if path.startswith(("{", "/")):
        target = next((t["target"] for x in after if (t := _MAKE_TARGET.match(x))), "")
        text = f"assembler: {m['msg'].strip()}" + (f" (building {_relative(target, strip)})" if target else "")
        return Diagnostic("", None, kind, text, f"as: {m['kind']}: {m['msg'].strip()}")
    line = int(m["line"]) if m["line"] else None
    return Diagnostic(path, line, kind, m["msg"].strip(), f"{path}:{str(line) + ':' if line else ''} {m['kind']}: {m['msg'].strip()}")


def make_errors(log: str) -> list[str]:
    """make's own `*** ...` lines (No rule to make target, a recipe that failed), in order."""
    return [m["msg"].strip() for raw in log.splitlines() if (m := _MAKE_ERROR.match(raw))]


def new(now: Iterable[Diagnostic], before: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics of NOW beyond those BEFORE had (per key: a third copy where there were two is new)."""
    left = Counter(d.key for d in before)
    out = []
    for d in now:
        if left[d.key] > 0:
            left[d.key] -= 1
        else:
            out.append(d)
    return out


def _relative(path: str, strip: tuple[str, ...]) -> str:
    for p in strip:
        if path.startswith(p):
            return path[len(p):]
    return path
