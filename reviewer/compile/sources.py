"""What kbuild builds from a touched source file: the make goal that compiles it the way the kernel's build does.

Most C and assembly files are objects of their own (`obj-y += foo.o`: `make dir/foo.o`). Some are
not, and asking make for their `.o` compiles what kbuild never does: scripts/Makefile.build's
pattern rule `$(obj)/%.o: $(obj)/%.c` compiles any file it is asked for. 6.12's kbuild has:

- kernel/bounds.c and arch/$(SRCARCH)/kernel/asm-offsets.c are compiled to `.s` only (the top-level
  Kbuild: `targets += arch/$(SRCARCH)/kernel/asm-offsets.s`, `$(offsets-file): ...asm-offsets.s`),
  from which `prepare` writes include/generated/bounds.h and asm-offsets.h. That `.s` holds
  `.ascii "->SYM value"` markers for a sed script, not code: assembling it may fail (Debian's
  powerpc gcc 12: "instruction address is not a multiple of 4"). Their goal is `prepare` (the top-level
  Makefile: `prepare: prepare0`, `prepare0: archprepare` then `$(build)=. prepare`); so is the rest
  of what the top-level Kbuild reads (kernel/time/timeconst.bc) and scripts/ (archprepare's
  `scripts`, prepare0's `$(build)=scripts/mod`: host programs).
- a `.s` a directory's Makefile makes for a generated header (arch/x86/kvm/Makefile:
  `$(obj)/kvm-asm-offsets.h: $(obj)/kvm-asm-offsets.s`, arch/arm64/kvm/Makefile:
  `$(obj)/hyp-constants.s: $(src)/hyp/hyp-constants.c`): that `.s` (a single target, top-level Makefile).
- a linker script X.lds.S its Makefile names as X.lds (`extra-y += vmlinux.lds`): X.lds
  (scripts/Makefile.build: `$(obj)/%.lds: $(src)/%.lds.S`).
- a file only #included by a sibling (kernel/sched/build_policy.c includes rt.c; x86's asm-offsets.c
  includes asm-offsets_64.c): whatever its includer maps to.
- a host program's source (lib/Makefile: `hostprogs := gen_crc32table`) and the file it generates
  (`$(obj)/crc32table.h: $(obj)/gen_crc32table`): the objects that include the generated file (lib/crc32.o).
- X.asn1: X.asn1.o (scripts/Makefile.build: `$(obj)/%.asn1.c $(obj)/%.asn1.h: $(src)/%.asn1`); X_shipped:
  what X maps to (scripts/Makefile.lib: `$(obj)/%: $(src)/%_shipped`).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

Read = Callable[[str], str | None]  # a file of the tree at the step being built, or None
Listing = Callable[[str], Iterable[str]]  # a directory's file names

PREPARE = "prepare"
_SOURCE = re.compile(r"\.(c|S)$")
_DEPTH = 3  # includer of an includer ...: kernel code goes no deeper


def goal(path: str, srcarch: str, read: Read, listing: Listing, depth: int = 0) -> str | None:
    """The make goal that builds from PATH (a file of the step, not a vDSO's: those are its directory), or
    None when kbuild builds nothing from it that make can be asked for (a header, a Kconfig file)."""
    if path.endswith("_shipped"):
        return goal(path[:-len("_shipped")], srcarch, read, listing, depth + 1)  # generated: its users are chased
    if path.startswith("scripts/"):
        return PREPARE if _SOURCE.search(path) else None
    if path in prepared(read, srcarch) or path in _kbuild_inputs(read, srcarch):
        return PREPARE
    parent, _, name = path.rpartition("/")
    if name.endswith(".asn1"):
        return f"{path}.o"
    text = _makefile(parent, read)
    if name.endswith(".lds.S"):
        return _join(parent, name[:-2]) if _named(text, name[:-2]) else None
    if made := _made_by_rule(path, read):
        return made
    if _SOURCE.search(name):
        if found := _own(parent, name[:-2], text):
            return found
        if prog := _host_program(text, name[:-2]):
            return _through_generated(parent, prog, text, srcarch, read, listing, depth)
    elif not depth:  # a header, Kconfig: compiled through the objects that read them (a generated file's are chased)
        return None
    if depth < _DEPTH:
        for includer in _includers(parent, name, read, listing):
            if found := goal(includer, srcarch, read, listing, depth + 1):
                return found
    return _join(parent, name[:-2] + ".o") if _SOURCE.search(name) else None


def prepared(read: Read, srcarch: str) -> dict[str, str]:
    """The sources the top-level Kbuild compiles to a `.s` for `prepare` (`targets += kernel/bounds.s`), with that `.s`."""
    out: dict[str, str] = {}
    for line in _lines(_arch(read("Kbuild") or "", srcarch)):
        if m := re.match(r"^\s*targets\s*[:+]?=(.*)$", line):
            for word in m[1].split():
                if word.endswith(".s") and "$" not in word:
                    out.update((word[:-2] + ext, word) for ext in (".c", ".S") if read(word[:-2] + ext) is not None)
    return out


def _kbuild_inputs(read: Read, srcarch: str) -> set[str]:
    """The tree's files the top-level Kbuild's rules read (`$(timeconst-file): kernel/time/timeconst.bc FORCE`)."""
    found: set[str] = set()
    for line in _lines(_arch(read("Kbuild") or "", srcarch)):
        if (m := re.match(r"^[^\t=:]+:(?!=)(.*)$", line)) and "=" not in m[1]:
            found.update(w for w in m[1].split() if "/" in w and "$" not in w and "%" not in w)
    return found


def _own(parent: str, stem: str, text: str) -> str | None:
    """STEM's `.s` when its Makefile makes one (for a generated header), or its object when the Makefile names it."""
    for suffix in (".s", ".o"):
        if _named(text, stem + suffix):
            return _join(parent, stem + suffix)
    return None


def _made_by_rule(path: str, read: Read) -> str | None:
    """A `.s` or `.lds` an explicit rule of this or a parent directory's Makefile makes from PATH
    (arch/arm64/kvm/Makefile: `$(obj)/hyp-constants.s: $(src)/hyp/hyp-constants.c FORCE`)."""
    parts = path.split("/")
    for up in range(1, min(3, len(parts))):
        directory, rel = "/".join(parts[:-up]), "/".join(parts[-up:])
        rule = re.compile(rf"^\$\(obj\)/(\S+\.(?:s|lds))\s*:[^=]*\$\(src\)/{re.escape(rel)}(?!\S)")
        for line in _lines(_makefile(directory, read)):
            if m := rule.match(line):
                return _join(directory, m[1])
    return None


_HOSTPROGS = re.compile(r"^\s*(hostprogs|userprogs)(-[\w$()-]+)?\s*[:+]?=(.*)$")


def _host_program(text: str, stem: str) -> str | None:
    """The host program STEM is (`hostprogs := gen_crc32table`) or is part of (`fixdep-objs := fixdep.o`), if any."""
    progs = [w for line in _lines(text) if (m := _HOSTPROGS.match(line)) for w in m[3].split()]
    if stem in progs:
        return stem
    for prog in progs:
        if re.search(rf"^\s*{re.escape(prog)}-objs\s*[:+]?=.*(?<![\w/.-]){re.escape(stem)}\.o\b", "\n".join(_lines(text)), re.M):
            return prog
    return None


def _through_generated(parent: str, prog: str, text: str, srcarch: str, read: Read, listing: Listing, depth: int) -> str | None:
    """The goal of a file the Makefile generates by running host program PROG, or None: the program is
    built for the host only when something needs what it makes, and never as a kernel object."""
    rule = re.compile(rf"^\$\(obj\)/(\S+)\s*:[^=]*\$\(obj\)/{re.escape(prog)}(?!\S)")
    made = [m[1] for line in _lines(text) if (m := rule.match(line))] if depth < _DEPTH else []
    return next((g for f in made if (g := goal(_join(parent, f), srcarch, read, listing, depth + 1))), None)


def _includers(parent: str, name: str, read: Read, listing: Listing) -> list[str]:
    """The C and assembly files beside NAME that `#include "NAME"`."""
    include = re.compile(rf'^\s*#\s*include\s+"{re.escape(name)}"', re.M)
    return [_join(parent, s) for s in sorted(listing(parent))
            if _SOURCE.search(s) and s != name and include.search(read(_join(parent, s)) or "")]


def _named(text: str, word: str) -> bool:
    """Whether a Makefile names WORD as a word of its own (not `$(obj)/word`, not `xword`)."""
    return bool(re.search(rf"(?<![\w/.$-]){re.escape(word)}(?![\w.-])", "\n".join(_lines(text))))


def _makefile(directory: str, read: Read) -> str:
    return (read(_join(directory, "Kbuild")) or "") + "\n" + (read(_join(directory, "Makefile")) or "")


def _lines(text: str) -> list[str]:
    """Makefile lines with their continuations joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    return [ln.split("#", 1)[0] for ln in joined.splitlines()]


def _arch(text: str, srcarch: str) -> str:
    return text.replace("$(SRCARCH)", srcarch)


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name
