"""A new selftest program is listed in its directory's Makefile, ignored by git once built,
and a new selftest directory is in tools/testing/selftests/Makefile TARGETS.

Why: `make run_tests` runs only what TEST_PROGS, TEST_GEN_PROGS and TEST_CUSTOM_PROGS name (lib.mk),
and only in the directories in TARGETS (Documentation/dev-tools/kselftest.rst, "Contributing new
tests"). TEST_GEN_PROGS_EXTENDED, TEST_PROGS_EXTENDED, TEST_FILES and TEST_GEN_FILES are built or
installed for the tests to use, never run: a program only there is a helper, fine if a test of
the series runs it (its name is in an added line of another file of the directory), else most
likely a test in the wrong list. A built binary missing from .gitignore shows up in every `git status`.
The Makefile is read, not run (this check runs on untrusted series): backslash continuations,
`=`, `:=`, `+=`, `?=`, `$(OUTPUT)/` prefixes and variables named in a list (`$(TEST_GEN_PROGS_$(ARCH))`
stands for every TEST_GEN_PROGS_<arch>) are followed; `$(wildcard *.sh)` names what its pattern
matches (`*.c` also the programs built from them: the `$(patsubst %.c,%,...)` idiom).
PASS: new vDSO/vdso_test_abi.c, `TEST_GEN_PROGS += vdso_test_abi` and `vdso_test_abi` in vDSO/.gitignore;
a helper in TEST_GEN_PROGS_EXTENDED run by a new script in TEST_PROGS.
FAIL: the Makefile line missing (makefile); the program only in TEST_GEN_PROGS_EXTENDED or
TEST_FILES with nothing of the series running it (helper, warning); the .gitignore line missing
(gitignore, warning); a new tools/testing/selftests/rng/Makefile with no `TARGETS += rng` (targets).
"""
from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator

from reviewer.checks._files import new_files, text_after
from reviewer.model import FileChange, Finding, Level, Patch, Series
from reviewer.tree.base import BaseTree

ID = "selftest-registered"
LEVEL = Level.ERROR
LEVELS = {"gitignore": Level.WARNING, "helper": Level.WARNING, "unverified": Level.INFO}
ROOT = "tools/testing/selftests/"
RUN = ("TEST_PROGS", "TEST_GEN_PROGS", "TEST_CUSTOM_PROGS")  # what lib.mk's run_tests runs
HELPERS = ("TEST_GEN_PROGS_EXTENDED", "TEST_PROGS_EXTENDED", "TEST_FILES", "TEST_GEN_FILES")  # built or installed, not run
ASSIGN = re.compile(r"^[ \t]*(?:override[ \t]+)?(?P<var>[A-Za-z_]\w*)[ \t]*(?:::|[:+?!])?=(?P<value>.*)$", re.MULTILINE)
REF = re.compile(r"\$[({](?P<name>[A-Za-z_]\w*)(?P<computed>\$[({])?")
WILDCARD = re.compile(r"\$[({]wildcard\s+(?P<patterns>[^)}]*)")


def check(series: Series, base: BaseTree | None) -> Iterator[Finding]:
    for patch, fc in new_files(series):
        if not fc.path.startswith(ROOT):
            continue
        directory, _, name = fc.path.rpartition("/")
        program = _program(fc, name)
        if program is not None:
            yield from _registered(series, base, patch, directory, program, compiled=name.endswith(".c"))
        if name == "Makefile" and directory.count("/") == 3:
            yield from _target(series, base, patch, directory.removeprefix(ROOT))


def _program(fc: FileChange, name: str) -> str | None:
    """The program name for a test source with main() or an executable script, else None."""
    lines = [ln.text for ln in fc.added_lines()]
    if name.endswith(".c"):
        return name[:-2] if any(re.search(r"\bmain\s*\(", t) for t in lines) else None
    if fc.new_mode == "100755" and lines and lines[0].startswith("#!"):
        return name
    return None


def _registered(series: Series, base: BaseTree | None, patch: Patch, directory: str, program: str, *, compiled: bool) -> Iterator[Finding]:
    makefile = text_after(series, base, f"{directory}/Makefile")
    if makefile is None:
        if base is None:
            yield Finding("unverified", LEVEL, f"unverified: {program} in {directory}/Makefile (no kernel tree to check the base against)",
                          patch.index)
        else:
            yield Finding("makefile", LEVEL, f"{directory} has no Makefile, so {program} is never built or run", patch.index,
                          f"{directory}/Makefile")
        return
    lists = lists_naming(makefile, program)
    wanted = "TEST_GEN_PROGS" if compiled else "TEST_PROGS"
    if not lists:
        yield Finding("makefile", LEVEL, f"{program} is not in TEST_PROGS, TEST_GEN_PROGS or TEST_CUSTOM_PROGS of {directory}/Makefile, "
                      "so kselftest never runs it", patch.index, f"{directory}/Makefile", hint=f"add `{wanted} += {program}`")
    elif not lists & set(RUN) and not _run_by_another(series, directory, program):
        where = " and ".join(v for v in HELPERS if v in lists)
        yield Finding("helper", LEVEL, f"{program} is only in {where} of {directory}/Makefile, and no other file of the series in "
                      "the directory runs it: kselftest builds or installs it for other tests, but never runs it as a test",
                      patch.index, f"{directory}/Makefile",
                      hint=f"{where} is for helpers and files that other tests use: if {program} is a test, add `{wanted} += {program}`; "
                      "if it is a helper, run it from a test")
    gitignore = text_after(series, base, f"{directory}/.gitignore")
    if compiled and not _ignored(gitignore or "", program):
        yield Finding("gitignore", LEVEL, f"the built {program} is not in {directory}/.gitignore", patch.index,
                      f"{directory}/.gitignore", hint=f"add `{program}` to {directory}/.gitignore")


def lists_naming(makefile: str, program: str) -> set[str]:
    """The kselftest lists (RUN, HELPERS) of MAKEFILE that name PROGRAM, directly or through a variable they name."""
    values: dict[str, list[str]] = {}
    for m in ASSIGN.finditer(makefile.replace("\\\n", " ")):
        values.setdefault(m["var"], []).append(m["value"])
    return {var for var in (*RUN, *HELPERS) if _names(values, var, program, set())}


def _names(values: dict[str, list[str]], var: str, program: str, seen: set[str]) -> bool:
    seen.add(var)
    for value in values.get(var, []):
        if program in {w.removeprefix("$(OUTPUT)/") for w in value.split()} or _wildcard_names(value, program):
            return True
        for ref in REF.finditer(value):
            named = _computed(values, ref["name"]) if ref["computed"] else [ref["name"]]
            if any(v not in seen and _names(values, v, program, seen) for v in named):
                return True
    return False


def _computed(values: dict[str, list[str]], prefix: str) -> list[str]:
    """The variables `$(PREFIX$(...))` may stand for: those named PREFIX..., but not a list of another
    kind (TEST_GEN_PROGS_$(ARCH) is not TEST_GEN_PROGS_EXTENDED)."""
    other = [h for h in (*RUN, *HELPERS) if h.startswith(prefix) and h != prefix.rstrip("_")]
    return [v for v in values if v.startswith(prefix) and not any(v.startswith(h) for h in other)]


def _wildcard_names(value: str, program: str) -> bool:
    for m in WILDCARD.finditer(value):
        for pattern in m["patterns"].split():
            base = pattern.rpartition("/")[2]
            if "$" in base or fnmatch.fnmatchcase(program, base) or fnmatch.fnmatchcase(f"{program}.c", base):
                return True
    return False


def _run_by_another(series: Series, directory: str, program: str) -> bool:
    """Another file of the series in DIRECTORY (a script, a C file, not the Makefile or .gitignore)
    has an added line naming PROGRAM: it is a helper that a test runs."""
    word = re.compile(rf"(?<![\w.-]){re.escape(program)}(?![\w.-])")
    return any(word.search(line.text) for p in series.patches for fc in p.files
               if fc.path.rpartition("/")[0] == directory
               and fc.path.rpartition("/")[2] not in ("Makefile", ".gitignore", program, f"{program}.c")
               for line in fc.added_lines())


def _ignored(gitignore: str, program: str) -> bool:
    verdict = False
    for raw in gitignore.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if fnmatch.fnmatchcase(program, line.removeprefix("!").removeprefix("/")):
            verdict = not negate
    return verdict


def _target(series: Series, base: BaseTree | None, patch: Patch, target: str) -> Iterator[Finding]:
    top = text_after(series, base, f"{ROOT}Makefile")
    if top is None:
        return
    if not re.search(rf"^\s*TARGETS\s*\+?=.*(?<![\w/-]){re.escape(target)}(?![\w/-])", top.replace("\\\n", " "), re.MULTILINE):
        yield Finding("targets", LEVEL, f"the new selftest directory {target} is not in TARGETS of {ROOT}Makefile, "
                      "so `make kselftest` skips it", patch.index, f"{ROOT}Makefile",
                      hint=f"add `TARGETS += {target}` in alphabetical order")
