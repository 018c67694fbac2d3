"""A patch subject starts with a subsystem prefix (`subsys: `) and is at most 75 characters.

Why: maintainers and `git log --oneline` readers find patches by prefix, and the summary
line should be short (Documentation/process/submitting-patches.rst, "The canonical patch
format": "no more than 70-75 characters"). A long subject is only an info: many accepted
subjects are longer, but a missing prefix is a warning.
A prefix is one to four words before `: `, a word being letters, digits, `_ . / + , -` (not
starting with `/`), words apart by a space or ` / `: the shapes of the kernel's history, such
as `net/mlx5e: `, `drm/i915/gt: `, `dt-bindings: iio: adc: `, `mm, slab: `, `bpf, x86: `,
`perf tools: `, `perf vendor events intel: `, `tools/power turbostat: `, `dm vdo: `,
`PM / OPP: `, `ACPI / PM: `, `.mailmap: `, `hwmon: (pmbus) `. A revert as git writes it
(`Revert "foo: bar"`, `Reapply "foo: bar"`, `Revert "Revert ..."`) has its prefix inside the quotes.
PASS: `mm/dmapool: Refuse to create zero-sized pools`, `PM / OPP: Fix a leak`, `Revert "mm: Add x"`.
FAIL: `Refuse to create zero-sized pools`, `fix the thing`, `Update foo.c` (prefix); an
80-character summary (length, info).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.model import Finding, Level, Series

ID = "subject-format"
LEVEL = Level.WARNING
LEVELS = {"length": Level.INFO}
MAX = 75
_WORD = r"[\w.][\w./+,-]*"
PREFIX = re.compile(rf"^{_WORD}(?:(?: | / ){_WORD}){{0,3}}: \S")
REVERT = re.compile(r'^(?:Revert|Reapply) ".+"$')


def check(series: Series) -> Iterator[Finding]:
    for patch in series.patches:
        if not (PREFIX.match(patch.subject) or REVERT.match(patch.subject)):
            yield Finding("prefix", LEVEL, f"subject `{patch.subject}` has no subsystem prefix", patch.index,
                          hint="start with the prefix `git log --oneline -- <file>` shows, e.g. `mm/dmapool: `")
        if len(patch.subject) > MAX:
            yield Finding("length", LEVEL, f"subject is {len(patch.subject)} characters (at most {MAX})", patch.index,
                          hint="shorten the summary; details belong in the body")
