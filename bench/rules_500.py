#!/usr/bin/env python3
"""Time the check stage (load_rules + evaluate + every Python check) on a 500-patch series.

The series is generated in memory: each patch touches a Kconfig, a Makefile, a new .c file,
a header and a selftest, with realistic hunks. The baseline is parse_diff of the same diff
text, measured in this process; the script prints the medians of 5 runs and the ratio.
Target: under 3 s for the check stage on the project's 2-core machines.
"""
from __future__ import annotations

import datetime as dt
import re

from _common import RUNS, median  # also puts the project on sys.path

from bench._cli import usage
from reviewer.checks import run_checks
from reviewer.model import Patch, Person, Series, Trailer
from reviewer.rules import RULES_DIR, evaluate, load_rules
from reviewer.series.patchparse import parse_diff

PATCHES = 500
AUTHOR = Person("Bench Author", "bench@example.org")


def new_file(path: str, lines: list[str]) -> str:
    body = "".join(f"+{ln}\n" for ln in lines)
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n"
            f"+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}")


def modified(path: str, start: int, context: list[str], added: list[str]) -> str:
    lines = [f" {c}" for c in context[:3]] + [f"+{a}" for a in added] + [f" {c}" for c in context[3:]]
    n = len(context)
    return (f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -{start},{n} +{start},{n + len(added)} @@\n" + "".join(ln + "\n" for ln in lines))


def patch_diff(i: int) -> str:
    sym, name = f"BENCH_DRIVER_{i}", f"bench_{i}"
    c = ["// SPDX-License-Identifier: GPL-2.0", "#include <linux/module.h>", ""]
    c += [f"static int {name}_op{j}(int x)\n{{\n\treturn x + {j};\n}}" for j in range(20)]
    c += [f"#if IS_ENABLED(CONFIG_{sym})", "MODULE_LICENSE(\"GPL\");", "#endif"]
    parts = [
        modified(f"drivers/bench{i % 50}/Kconfig", 10, ["", "config OTHER", "\tbool", "", "endmenu", ""],
                 [f"config {sym}", "\ttristate \"Bench driver\"", "\tdepends on OTHER", ""]),
        modified(f"drivers/bench{i % 50}/Makefile", 3, ["obj-y += core.o", "", "# drivers", "obj-y += misc.o"],
                 [f"obj-$(CONFIG_{sym}) += {name}.o"]),
        new_file(f"drivers/bench{i % 50}/{name}.c", "\n".join(c).splitlines()),
        new_file(f"include/linux/{name}.h", ["/* SPDX-License-Identifier: GPL-2.0 */", f"#ifndef _{name.upper()}_H",
                                            f"#define _{name.upper()}_H", f"int {name}_init(void);", "#endif"]),
    ]
    return "".join(parts)


def series(diffs: list[str]) -> Series:
    patches = tuple(
        Patch(index=i, total=PATCHES, subject=f"bench: Add driver {i}", msgid=f"bench-{i}@example.org", author=AUTHOR,
              date=dt.datetime(2024, 8, 20, tzinfo=dt.UTC), message=f"Add driver {i}.\n\nSigned-off-by: {AUTHOR}\n",
              diff=d, trailers=(Trailer("Signed-off-by", str(AUTHOR), "patch"),), files=parse_diff(d))
        for i, d in enumerate(diffs, 1)
    )
    return Series("bench: Add 500 drivers", 1, "bench-0@example.org", AUTHOR, None, PATCHES, patches, base_commit="0" * 40)


def main() -> None:
    diffs = [patch_diff(i) for i in range(1, PATCHES + 1)]
    text = "".join(diffs)
    the_series = series(diffs)
    baseline = median(lambda: parse_diff(text))

    def check_stage() -> int:
        re.purge()  # cold, as in a `review` process: re's cache (512 patterns) would keep the last run's
        rules = load_rules(RULES_DIR)
        return len(list(run_checks(the_series, None))) + len(list(evaluate(rules, the_series, None)))

    checks = median(check_stage)
    lines = sum(p.added for p in the_series.patches)
    print(f"{PATCHES} patches, {lines} added lines, {check_stage()} findings")
    print(f"baseline parse_diff: {baseline:.3f} s (median of {RUNS})")
    print(f"check stage:         {checks:.3f} s (median of {RUNS}), {checks / baseline:.2f}x the baseline; target < 3 s")


if __name__ == "__main__":
    usage(__doc__)
    main()
