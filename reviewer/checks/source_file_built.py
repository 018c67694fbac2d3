"""A new .c file is built: kbuild compiles it, or another source file includes it.

Why: kbuild compiles only what a Makefile or Kbuild names (Documentation/kbuild/makefiles.rst):
a new source file that nothing names is dead code that no compiler, CI bot or reviewer build
ever sees. Decided the way kbuild decides, after the whole series:
- a Makefile or Kbuild in the file's directory or above names its object: `foo.o` (or
  `sub/foo.o` from a parent directory, `$(obj)/foo.o`), or `foo-<suffix>.o` when that Makefile
  has a pattern rule building `%-<suffix>.o` from `%.c` (powerpc's vDSO builds vgetrandom.c as
  vgetrandom-32.o and vgetrandom-64.o), or the bare name as a host or user program;
- or a source file of the series or the tree includes it (`#include "foo.c"`: lib/vdso/getrandom.c
  is built only through the arches' vDSO files that include it).
A Makefile that computes its objects (`$(wildcard ...)`, `$(patsubst ...)`, `%.o` from a
variable) may build it unseen: then nothing is said. A warning only when the directory's
Makefile is known and nothing names or includes the file; without a base tree, an info.
tools/ and Documentation/ have their own build systems (selftest-registered covers selftests).
PASS: new mm/dmapool_bench.c and `obj-$(CONFIG_DMAPOOL_BENCH) += dmapool_bench.o` in mm/Makefile.
FAIL: new mm/dmapool_bench.c that no Makefile names and no file includes.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.checks._files import new_files, text_after
from reviewer.model import Finding, Level, Patch, Series
from reviewer.tree.base import BaseTree

ID = "source-file-built"
LEVEL = Level.WARNING
LEVELS = {"unverified": Level.INFO}
_SKIP = ("tools/", "Documentation/")
_MAKEFILES = ("Makefile", "Kbuild")
# Objects a Makefile may compute rather than name: then a file can be built without being named.
_COMPUTED = re.compile(r"\$\((?:wildcard|patsubst|subst|foreach|shell)\b|\$\([A-Za-z_]+:%?\.c=%?\.o\)|\$\([A-Za-z_]+:\.c=\.o\)")
# `%-32.o: %.c` and the static `$(obj)/x-32.o: %-32.o: %.c`: the object of x.c is x-32.o.
_PATTERN_RULE = re.compile(r"%(?P<suffix>[-_][\w-]*)\.o\s*:[^\n:]*%\.c\b")
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](?P<path>[^>"]+\.c)[>"]', re.MULTILINE)


def check(series: Series, base: BaseTree | None) -> Iterator[Finding]:
    for patch, fc in new_files(series):
        if not fc.path.endswith(".c") or fc.path.startswith(_SKIP) or "/" not in fc.path:
            continue
        yield from _verdict(series, base, patch, fc.path)


def _verdict(series: Series, base: BaseTree | None, patch: Patch, path: str) -> Iterator[Finding]:
    directory, _, name = path.rpartition("/")
    stem = name[:-2]
    chain = list(_chain(series, base, directory))
    if any(_names(text, rel, stem) for rel, text in chain) or _included(series, base, path):
        return
    if any(_COMPUTED.search(text) or _mentions(text, rel, name) for rel, text in chain):
        return  # a computed object list, or the source named for `-include`: it may be built unseen

    own = next((text for rel, text in chain if rel == ""), None)
    if base is None:
        yield Finding("unverified", LEVEL, f"unverified: nothing in the series builds {path} (no kernel tree to read "
                      f"{directory}/Makefile and the files that might include it)", patch.index, path)
    elif own is not None:
        yield Finding("makefile", LEVEL, f"no Makefile or Kbuild in {directory}/ or above builds {stem}.o, and no source file "
                      f"includes {name}, so {path} is never compiled", patch.index, f"{directory}/Makefile",
                      hint=f"add `obj-$(CONFIG_...) += {stem}.o` to {directory}/Makefile")


def _chain(series: Series, base: BaseTree | None, directory: str) -> Iterator[tuple[str, str]]:
    """(the file's directory relative to each Makefile/Kbuild from DIRECTORY up, that file's text after the series)."""
    parts = directory.split("/")
    for depth in range(len(parts), 0, -1):
        here, rel = "/".join(parts[:depth]), "/".join(parts[depth:])
        for makefile in _MAKEFILES:
            text = text_after(series, base, f"{here}/{makefile}")
            if text is None and base is None:  # no tree: what the series adds to it is all that is known
                text = "\n".join(ln.text for p in series.patches for fc in p.files if fc.path == f"{here}/{makefile}"
                                  for ln in fc.added_lines()) or None
            if text is not None:
                yield rel, _joined(text)


def _joined(text: str) -> str:
    """Make's line continuations joined, comments dropped."""
    text = re.sub(r"\\\n", " ", text)
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def _names(text: str, rel: str, stem: str) -> bool:
    """TEXT (a Makefile, REL from the file's directory) names the object of STEM.c."""
    target = f"{rel}/{stem}" if rel else stem
    word = rf"(?<![\w/.-])(?:\$\((?:obj|src)\)/)?{re.escape(target)}"
    if re.search(rf"{word}\.o(?![\w.-])", text):
        return True
    suffixes = {m["suffix"] for m in _PATTERN_RULE.finditer(text)}
    if any(re.search(rf"{word}{re.escape(s)}\.o(?![\w.-])", text) for s in suffixes):
        return True
    # hostprogs / userprogs name programs without .o (built from <name>.c)
    return bool(rel == "" and re.search(rf"^\s*(?:hostprogs|userprogs|always)[\w-]*\s*[:+?]?=.*(?<![\w/.-]){re.escape(stem)}(?![\w.-])",
                                         text, re.MULTILINE))


def _mentions(text: str, rel: str, name: str) -> bool:
    """The Makefile names the source itself (lib/vdso: `c-getrandom-y := ...getrandom.c`, for `-include`)."""
    target = f"{rel}/{name}" if rel else name
    return re.search(rf"(?<![\w.-]){re.escape(target)}(?![\w.-])", text) is not None


def _included(series: Series, base: BaseTree | None, path: str) -> bool:
    """A #include of PATH by an added line of the series, or by a file of the tree (the series' own edits aside)."""
    name = path.rpartition("/")[2]
    for patch in series.patches:
        for fc in patch.files:
            for line in fc.added_lines():
                m = _INCLUDE.match(line.text)
                if m and _resolves(m["path"], fc.path, path):
                    return True
    if base is None:
        return False
    search = getattr(base, "files_containing", None)
    if search is None:
        return False
    for including in sorted(search(name)):
        text = base.read(including) or ""
        if any(_resolves(m["path"], including, path) for m in _INCLUDE.finditer(text)):
            return True
    return False


def _resolves(included: str, by: str, path: str) -> bool:
    """`#include INCLUDED` in file BY names PATH (relative to BY's directory, or to the tree's include/ or top)."""
    here = by.rpartition("/")[0]
    candidates = [f"{here}/{included}" if here else included, included, f"include/{included}"]
    return any(_normal(c) == path for c in candidates)


def _normal(path: str) -> str:
    out: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if out:
                out.pop()
        elif part not in ("", "."):
            out.append(part)
    return "/".join(out)
