"""What to ask make for, and the configuration symbols that build it, read as kbuild reads its Makefiles.

A touched C or assembly file is the goal kbuild builds from it (sources.py: its object, `prepare`
for asm-offsets.c and bounds.c, the includer's object for a file only #included, ...); anything of
a vDSO (the arch's vDSO directory, its headers, lib/vdso/, include/vdso/) is the arch's vDSO
directory target (`make arch/x86/entry/vdso/`: asking for vdso.so itself is "No rule to make
target"). Headers, Kconfig and Makefiles are compiled through the objects that read them. The
symbols come from the `obj-$(CONFIG_FOO) += file.o` lines of the object's Makefile (a composite
object's own line included), the same for each directory up to the top, and the plain `depends
on` of those symbols in the Kconfig files beside them.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from reviewer.compile import sources
from reviewer.kernel.arches import Arch, belongs

Read = sources.Read

_VDSO = re.compile(r"^(arch/[^/]+/(.*/)?vdso[^/]*/|arch/[^/]+/include/asm/vdso/|lib/vdso/|include/vdso/)")
_SOURCE = re.compile(r"\.(c|S)$")


def goals(paths: Iterable[str], target: Arch, exists: Callable[[str], bool], read: Read | None = None,
          listing: Callable[[str], Iterable[str]] | None = None) -> list[str]:
    """The make goals that compile PATHS on TARGET (the paths that exist at this step), `prepare` first.
    With READ and LISTING (a directory's file names) each file is the goal kbuild builds from it
    (sources.goal); without, a C or assembly file is its own object."""
    out: dict[str, None] = {}
    for p in paths:
        if not compiled(p, target):
            continue
        if _VDSO.match(p):
            out.update((d, None) for d in target.vdso if exists(d.rstrip("/") + "/Makefile"))
        elif exists(p) and (g := sources.goal(p, target.srcarch, read, listing) if read and listing else _own(p)):
            out[g] = None
    return sorted(out, key=lambda g: g != sources.PREPARE)


def _own(path: str) -> str | None:
    return path[:-2] + ".o" if _SOURCE.search(path) and not path.endswith(".lds.S") else None


def compiled(path: str, target: Arch) -> bool:
    """Whether a change to PATH is compiled when building for TARGET (through some goal)."""
    if not belongs(path, target) or re.match(r"^(Documentation|tools|samples|LICENSES)/", path):
        return False
    return bool(_VDSO.match(path) or re.search(r"\.(c|S|h|asn1|bc)$|_shipped$", path) or path.rsplit("/", 1)[-1] in ("Makefile", "Kbuild")
                or path.rsplit("/", 1)[-1].startswith("Kconfig"))


_ASSIGN = re.compile(r"^\s*([A-Za-z0-9_.-]+)-(\$\(CONFIG_([A-Za-z0-9_]+)\)|y|objs)\s*[:+]?=(.*)$")


def guards(goal: str, read: Read) -> list[str]:
    """The CONFIG_ symbols (without the prefix) that kbuild needs set to build GOAL: its Makefile's
    line, then each parent directory's, up to the top level."""
    found: dict[str, None] = {}
    path = goal.rstrip("/")
    while "/" in path:
        parent, name = path.rsplit("/", 1)
        word = f"{name}/" if goal.rstrip("/") != path or goal.endswith("/") else name
        for sym in _guards_in(_makefile(parent, read), word, 0):
            found[sym] = None
        path = parent
    for sym in _guards_in((read("Kbuild") or "") + "\n" + (read("Makefile") or ""), f"{path}/", 0):
        found[sym] = None
    return list(found)


def _makefile(directory: str, read: Read) -> str:
    return (read(f"{directory}/Kbuild") or "") + "\n" + (read(f"{directory}/Makefile") or "")


def _guards_in(text: str, word: str, depth: int) -> list[str]:
    out: list[str] = []
    for line in _lines(text):
        m = _ASSIGN.match(line)
        if not m or word not in m[4].split():
            continue
        prefix, sym = m[1], m[3]
        if sym:
            out.append(sym)
        if prefix not in ("obj", "lib", "obj-m", "subdir", "always", "targets", "extra") and depth < 3:
            out += _guards_in(text, f"{prefix}.o", depth + 1)  # a composite object: its own line
    return out


def _lines(text: str) -> list[str]:
    """Makefile lines with their continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    return [ln.split("#", 1)[0] for ln in joined.splitlines()]


_CONFIG = re.compile(r"^\s*(?:menu)?config\s+([A-Za-z0-9_]+)\s*$")
_DEPENDS = re.compile(r"^\s*depends\s+on\s+(.*)$")
_END = re.compile(r"^\s*(?:menu)?config\s|^\s*(?:endmenu|endif|endchoice|choice|menu|if|source|comment)\b")


def depends(symbols: Sequence[str], dirs: Iterable[str], read: Read, more: Iterable[str] = ()) -> list[str]:
    """The plain `depends on A && B` symbols of SYMBOLS, from the Kconfig files of DIRS and their
    parents, and the files MORE (where `git grep` found them defined: TIME_NS lives in init/Kconfig).
    A dependency with ||, !, = or a value is left to olddefconfig."""
    texts = [read(path) or "" for path in dict.fromkeys(more)]
    seen: set[str] = set(more)
    for d in dirs:
        parts = d.strip("/").split("/")
        for i in range(len(parts), 0, -1):
            path = "/".join(parts[:i]) + "/Kconfig"
            if path not in seen:
                seen.add(path)
                texts.append(read(path) or "")
    wanted = set(symbols)
    out: dict[str, None] = {}
    for text in texts:
        current = None
        for line in text.splitlines():
            if m := _CONFIG.match(line):
                current = m[1]
                continue
            if _END.match(line):
                current = None
                continue
            if current in wanted and (d2 := _DEPENDS.match(line)):
                expr = d2[1].split("#", 1)[0].strip()
                if re.fullmatch(r"[A-Za-z0-9_]+(\s*&&\s*[A-Za-z0-9_]+)*", expr):
                    out.update((s.strip(), None) for s in expr.split("&&") if s.strip() not in wanted)
    return [s for s in out if s not in ("y", "n", "m")]
