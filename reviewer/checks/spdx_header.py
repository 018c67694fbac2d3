"""A new file starts with an SPDX-License-Identifier line in the comment style its type needs.

Why: Documentation/process/license-rules.rst requires the identifier on the first line (the
second after a `#!` line), and scripts/spdxcheck.py and checkpatch parse only that form:
`// SPDX...` or `/* SPDX... */` in .c, `/* SPDX... */` in .h, .S and .lds.S (the assembler and
linker script preprocessors choke on //), `# SPDX...` in Makefile, Kbuild, Kconfig, .sh, .py,
and `.. SPDX...` in .rst.
Build and ignore files (Makefile, Kbuild, Kconfig, *.mk, .gitignore) are read as checkpatch
reads them, which checks no comment style there: `#SPDX-...` is accepted, and a missing line is
only an info (`missing-build`), since upstream accepts such files without one.
PASS: `// SPDX-License-Identifier: GPL-2.0` as the first line of a new .c file.
FAIL: a new .h without the line (missing); `// SPDX-License-Identifier: GPL-2.0` in a .h (style).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.checks._files import new_files
from reviewer.model import FileChange, Finding, Level, Series

ID = "spdx-header"
# A warning, as in checkpatch ("Missing or malformed SPDX-License-Identifier tag").
LEVEL = Level.WARNING
LEVELS = {"missing-build": Level.INFO}
_BUILD = re.compile(r"Makefile|Kbuild|Kconfig.*|.*\.mk|\.gitignore")
TAG = re.compile(r"SPDX-License-Identifier:\s*\S")
# (file name pattern, accepted first lines, what to write)
STYLES: tuple[tuple[re.Pattern[str], re.Pattern[str], str], ...] = (
    (re.compile(r".*\.c"), re.compile(r"^(//|/\*) SPDX-License-Identifier: .*?(\s*\*/)?$"), "// SPDX-License-Identifier: <license>"),
    (re.compile(r".*\.(h|S|lds|lds\.S)"), re.compile(r"^/\* SPDX-License-Identifier: .*\*/$"), "/* SPDX-License-Identifier: <license> */"),
    (re.compile(r"(Makefile|Kbuild|Kconfig.*|.*\.(sh|py|pl|mk|awk|tc|gitignore|ya?ml))|\.gitignore"),
     re.compile(r"^#\s*SPDX-License-Identifier: "), "# SPDX-License-Identifier: <license>"),
    (re.compile(r".*\.rst"), re.compile(r"^\.\. SPDX-License-Identifier: "), ".. SPDX-License-Identifier: <license>"),
    (re.compile(r".*\.dtsi?"), re.compile(r"^(//|/\*) SPDX-License-Identifier: "), "// SPDX-License-Identifier: <license>"),
)


def check(series: Series) -> Iterator[Finding]:
    for patch, fc in new_files(series):
        style = _style(fc)
        if style is None or fc.binary or fc.is_symlink:
            continue
        accepted, wanted = style
        lines = fc.added_lines()
        first = lines[1] if len(lines) > 1 and lines[0].text.startswith("#!") else (lines[0] if lines else None)
        if first is None or not TAG.search(first.text):
            kind = "missing-build" if _BUILD.fullmatch(fc.path.rpartition("/")[2]) else "missing"
            yield Finding(kind, LEVEL, f"new file {fc.path} does not start with an SPDX-License-Identifier line",
                          patch.index, fc.path, first.new_no if first else None, f"make its first line `{wanted}`")
        elif not accepted.search(first.text):
            yield Finding("style", LEVEL, f"the SPDX line of {fc.path} uses the wrong comment style", patch.index,
                          fc.path, first.new_no, f"write `{wanted}`", (f"+{first.text}",))


def _style(fc: FileChange) -> tuple[re.Pattern[str], str] | None:
    name = fc.path.rpartition("/")[2]
    return next(((ok, wanted) for pattern, ok, wanted in STYLES if pattern.fullmatch(name)), None)
