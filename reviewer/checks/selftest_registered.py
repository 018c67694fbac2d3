"""A new selftest program is listed in its directory's Makefile, ignored by git once built,
and a new selftest directory is in tools/testing/selftests/Makefile TARGETS.

Why: kselftest runs only what TEST_PROGS, TEST_GEN_PROGS, TEST_GEN_PROGS_EXTENDED or TEST_FILES
name, and only the directories in TARGETS (Documentation/dev-tools/kselftest.rst, "Contributing
new tests"); a built binary missing from .gitignore shows up in every `git status`.
PASS: new vDSO/vdso_test_abi.c, `TEST_GEN_PROGS += vdso_test_abi` and `vdso_test_abi` in vDSO/.gitignore.
FAIL: the Makefile line missing (makefile); the .gitignore line missing (gitignore, warning);
a new tools/testing/selftests/rng/Makefile with no `TARGETS += rng` (targets).
"""
from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator

from reviewer.checks._files import new_files, text_after
from reviewer.model import FileChange, Finding, Level, Patch, Series
from reviewer.rules.engine import BaseTree

ID = "selftest-registered"
LEVEL = Level.ERROR
LEVELS = {"gitignore": Level.WARNING, "unverified": Level.INFO}
ROOT = "tools/testing/selftests/"
VARS = re.compile(r"^\s*(?:override\s+)?(TEST_(?:GEN_)?PROGS(?:_EXTENDED)?|TEST_(?:GEN_)?FILES|TEST_CUSTOM_PROGS)\s*[:+?]?=(.*)$", re.MULTILINE)


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


def _registered(series: Series, base: BaseTree | None, patch: Patch, directory: str, program: str, compiled: bool) -> Iterator[Finding]:
    makefile = text_after(series, base, f"{directory}/Makefile")
    if makefile is None:
        if base is None:
            yield Finding("unverified", LEVEL, f"unverified: {program} in {directory}/Makefile (no kernel tree to check the base against)", patch.index)
        else:
            yield Finding("makefile", LEVEL, f"{directory} has no Makefile, so {program} is never built or run", patch.index, f"{directory}/Makefile")
        return
    if not _listed(makefile, program):
        yield Finding("makefile", LEVEL, f"{program} is not in TEST_PROGS, TEST_GEN_PROGS, TEST_GEN_PROGS_EXTENDED or TEST_FILES of {directory}/Makefile, so kselftest never runs it",
                      patch.index, f"{directory}/Makefile", hint=f"add `{'TEST_GEN_PROGS' if compiled else 'TEST_PROGS'} += {program}`")
    gitignore = text_after(series, base, f"{directory}/.gitignore")
    if compiled and not _ignored(gitignore or "", program):
        yield Finding("gitignore", LEVEL, f"the built {program} is not in {directory}/.gitignore", patch.index,
                      f"{directory}/.gitignore", hint=f"add `{program}` to {directory}/.gitignore")


def _listed(makefile: str, program: str) -> bool:
    joined = makefile.replace("\\\n", " ")
    for m in VARS.finditer(joined):
        value = m.group(2)
        words = {w.removeprefix("$(OUTPUT)/") for w in value.split()}
        if program in words or "$(wildcard" in value:
            return True
    return False


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
        yield Finding("targets", LEVEL, f"the new selftest directory {target} is not in TARGETS of {ROOT}Makefile, so `make kselftest` skips it",
                      patch.index, f"{ROOT}Makefile", hint=f"add `TARGETS += {target}` in alphabetical order")
