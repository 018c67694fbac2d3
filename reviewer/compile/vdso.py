"""The vDSO as built: its exported functions and their version node, read from the ELF file.

kbuild's vDSO directory target leaves the unstripped image (vdso64.so.dbg on powerpc and x86,
vdso.so on LoongArch); its dynamic symbol table is what libc looks up at run time.
`readelf --dyn-syms -W` prints `__kernel_getrandom@@LINUX_2.6.15`: the name and the version node.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from reviewer.proc import run

_IMAGE = re.compile(r"^vdso[^/]*\.so(\.dbg)?$")
# Num: Value Size Type Bind Vis [st_other: `[<localentry>: 8]` (GNU), `[<other: 0x60>]` (LLVM), ppc64 ELFv2] Ndx Name
_SYM = re.compile(r"^\s*\d+:\s+[0-9a-f]+\s+\S+\s+(FUNC|OBJECT|NOTYPE)\s+(GLOBAL|WEAK)\s+\S+(?:\s+\[[^\]]*\])?\s+(\S+)\s+(\S+)")
GETRANDOM = ("__vdso_getrandom", "__kernel_getrandom")


@dataclass(frozen=True)
class Image:
    path: str  # relative to the build directory
    symbols: tuple[str, ...]  # exported functions, as name@@VERSION

    def names(self) -> set[str]:
        return {s.split("@", 1)[0] for s in self.symbols}

    def exports(self, *names: str) -> bool:
        return bool(self.names() & set(names))


def images(out: Path, directory: str) -> list[Path]:
    """The vDSO images the build left in DIRECTORY of the build directory OUT (the .dbg one when both exist)."""
    d = out / directory
    if not d.is_dir():
        return []
    found = sorted(p for p in d.iterdir() if _IMAGE.match(p.name) and p.is_file() and not p.is_symlink())
    names = {p.name for p in found}
    return [p for p in found if not (p.suffix == ".so" and p.name + ".dbg" in names)]


def read(path: Path, out: Path, readelf: str) -> Image:
    """The functions PATH exports (FUNC symbols defined in a section, with their version)."""
    done = run([readelf, "--dyn-syms", "-W", str(path)], timeout=60)
    syms = []
    for line in done.stdout.splitlines():
        m = _SYM.match(line)
        if m and m[1] == "FUNC" and m[3] != "UND":
            syms.append(m[4])
    return Image(str(path.relative_to(out)), tuple(sorted(syms)))
