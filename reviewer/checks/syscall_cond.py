"""A new system call whose code can be configured out has a COND_SYSCALL() stub in kernel/sys_ni.c.

Why: the syscall tables name sys_<name> on every build; when the file that defines it
(`SYSCALL_DEFINEn(<name>, ...)`) is built only with a Kconfig option (`obj-$(CONFIG_FOO) +=
x.o`), or the definition sits in `#ifdef CONFIG_...`, a kernel without that option fails to
link unless kernel/sys_ni.c has `COND_SYSCALL(<name>);` (Documentation/process/adding-syscalls.rst,
"Generic System Call Implementation"). A syscall defined in code that is always built needs no
stub, and 6.12's sys_ni.c has none for them (fchmodat2, openat). The definition is looked for in
the series, then in the tree; when it cannot be found or its build cannot be read, nothing is said.
PASS: uretprobe in arch/x86/kernel/uprobes.c (`obj-$(CONFIG_UPROBES)`) with `COND_SYSCALL(uretprobe);`.
FAIL: the same without the stub (cond-syscall, error).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.checks._files import text_after
from reviewer.model import Finding, Level, Patch, Series
from reviewer.tree.base import BaseTree

ID = "syscall-cond"
LEVEL = Level.ERROR
_TABLE = re.compile(r"^(scripts/syscall\.tbl|arch/.+/syscall[^/]*\.tbl)$")
_ENTRY = re.compile(r"^\d+\s+\w+\s+(?P<name>\w+)\s+\S")
_CONDITIONAL = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")


def check(series: Series, base: BaseTree | None) -> Iterator[Finding]:
    seen: set[str] = set()
    for patch in series.patches:
        for fc in patch.files:
            if not _TABLE.fullmatch(fc.path):
                continue
            for line in fc.added_lines():
                m = _ENTRY.match(line.text)
                if m and m["name"] not in seen:
                    seen.add(m["name"])
                    yield from _stub(series, base, patch, m["name"])


def _stub(series: Series, base: BaseTree | None, patch: Patch, name: str) -> Iterator[Finding]:
    where = _definition(series, base, name)
    why = _configurable(series, base, name, *where) if where is not None else ""
    if not why or where is None:
        return
    sys_ni = text_after(series, base, "kernel/sys_ni.c")
    if sys_ni is None or re.search(rf"^\s*COND_SYSCALL\({re.escape(name)}\);", sys_ni, re.MULTILINE):
        return
    path = where[0]
    yield Finding("", LEVEL, f"kernel/sys_ni.c has no COND_SYSCALL({name}), and sys_{name} is built only {why} ({path}): "
                  "a kernel without it fails to link", patch.index, "kernel/sys_ni.c",
                  hint=f"add `COND_SYSCALL({name});` to kernel/sys_ni.c")


def _definition(series: Series, base: BaseTree | None, name: str) -> tuple[str, str] | None:
    """(the file that defines sys_NAME, its text after the series), from the series or the tree."""
    define = re.compile(rf"\bSYSCALL_DEFINE\d\(\s*{re.escape(name)}\b")
    for patch in series.patches:
        for fc in patch.files:
            if any(define.search(ln.text) for ln in fc.added_lines()):
                text = text_after(series, base, fc.path)
                return (fc.path, text) if text is not None else None
    matching = getattr(base, "files_matching", None)
    if matching is None:
        return None
    for path in sorted(matching(rf"SYSCALL_DEFINE[0-9]\(\s*{name}\b", ["*.c"])):
        text = text_after(series, base, path)
        if text is not None and define.search(text):
            return path, text
    return None


def _configurable(series: Series, base: BaseTree | None, name: str, path: str, text: str) -> str:
    """Why sys_NAME can be left out of a build ("with CONFIG_X", "inside #if ..."), or ""."""
    guard = _guard(text, rf"\bSYSCALL_DEFINE\d\(\s*{re.escape(name)}\b")
    if guard:
        return guard
    directory, _, file = path.rpartition("/")
    makefile = text_after(series, base, f"{directory}/Makefile") if directory else None
    if makefile is None:
        return ""
    makefile = re.sub(r"\\\n", " ", makefile)
    stem = re.escape(file[:-2])
    for m in re.finditer(rf"^\s*obj-\$\((CONFIG_\w+)\)\s*[:+]?=.*(?<![\w/.-]){stem}\.o\b", makefile, re.MULTILINE):
        return f"with {m[1]}"
    return ""


def _guard(text: str, pattern: str) -> str:
    """The open `#if`s naming CONFIG_ around the first line matching PATTERN, as `inside #if ...`; "" if none."""
    stack: list[str] = []
    for line in text.splitlines():
        if re.search(pattern, line):
            config = [c for c in stack if "CONFIG_" in c]
            return f"inside #{config[-1]}" if config else ""
        m = _CONDITIONAL.match(line)
        if m is None:
            continue
        if m[1] in ("if", "ifdef", "ifndef"):
            stack.append(f"{m[1]}{m[2]}".strip())
        elif m[1] == "endif" and stack:
            stack.pop()
    return ""
