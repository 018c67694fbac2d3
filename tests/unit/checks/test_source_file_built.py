"""source-file-built decides "is it compiled" the way kbuild does, on a small real git tree."""
from __future__ import annotations

import datetime as dt
import subprocess

import pytest

from reviewer.checks import CHECKS
from reviewer.model import Finding, Level, Patch, Person, Series
from reviewer.series.patchparse import parse_diff
from reviewer.tree.base import GitBaseTree

BASE = {
    "arch/powerpc/kernel/vdso/Makefile": (
        "obj-vdso32 += note-32.o\ntargets := $(obj-vdso32) vdso32.so.dbg vgettimeofday-32.o\n"
        "$(obj)/vgettimeofday-32.o: %-32.o: %.c FORCE\n\t$(call if_changed_dep,vdso32cc)\n"),
    "arch/x86/entry/vdso/vgetrandom.c": '// SPDX-License-Identifier: GPL-2.0\n#include "../../../../lib/vdso/getrandom.c"\n',
    "lib/vdso/Makefile": "obj-y += datapage.o\n",
    "drivers/Makefile": "obj-y += core.o\nobj-$(CONFIG_FOO_BAR) += foo/bar.o\n",
    "drivers/foo/Makefile": "obj-y += other.o\n",
    "scripts/Makefile": "hostprogs-always-y += sorttable\n",
    "samples/any/Makefile": "obj-m := $(patsubst %.c,%.o,$(notdir $(wildcard $(src)/*.c)))\n",
    "mm/Makefile": "obj-y += dmapool.o\n",
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> GitBaseTree:
    repo = tmp_path_factory.mktemp("kbuild") / "linux"
    for path, text in BASE.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    run = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True, text=True).stdout  # noqa: E731
    run("init", "-q")
    run("add", "-A")
    run("commit", "-q", "-m", "base")
    return GitBaseTree(repo, run("rev-parse", "HEAD").strip())


def new_file(path: str, text: str = "int x;\n") -> str:
    lines = text.splitlines()
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n"
            + "".join(f"+{ln}\n" for ln in lines))


def edit(path: str, old: str, new: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,1 +1,2 @@\n {old}\n+{new}\n"


def findings(diff: str, base: GitBaseTree | None) -> list[Finding]:
    patch = Patch(1, 1, "x: y", "1@example.org", Person("A", "a@example.org"), dt.datetime(2024, 8, 20, tzinfo=dt.UTC),
                  "Body.\n", diff, files=parse_diff(diff))
    series = Series("x: y", 1, "1@example.org", patch.author, None, 1, (patch,))
    return list(CHECKS["source-file-built"].findings(series, base))


@pytest.mark.parametrize("diff", [
    new_file("arch/powerpc/kernel/vdso/vgetrandom.c")
    + edit("arch/powerpc/kernel/vdso/Makefile", "obj-vdso32 += note-32.o", "targets += vgetrandom-32.o"),
    new_file("drivers/foo/bar.c"),
    new_file("lib/vdso/getrandom.c"),
    new_file("lib/vdso/extra.c") + new_file("arch/x86/entry/vdso/vextra.c", '#include "../../../../lib/vdso/extra.c"'),
    new_file("scripts/sorttable.c"),
    new_file("samples/any/thing.c"),
    new_file("mm/dmapool_bench.c") + edit("mm/Makefile", "obj-y += dmapool.o", "obj-$(CONFIG_DMAPOOL_BENCH) += dmapool_bench.o"),
], ids=["pattern-rule", "parent-dir", "included-by-tree", "included-by-series", "hostprog", "wildcard", "named"])
def test_built_as_kbuild_builds_it(diff: str, base: GitBaseTree) -> None:
    assert findings(diff, base) == []


def test_a_file_nothing_builds_is_a_warning(base: GitBaseTree) -> None:
    (found,) = findings(new_file("mm/dmapool_bench.c"), base)
    assert (found.rule, found.level, found.path) == ("source-file-built/makefile", Level.WARNING, "mm/Makefile")
    assert "mm/dmapool_bench.c is never compiled" in found.message


def test_a_pattern_rule_for_another_object_does_not_build_it(base: GitBaseTree) -> None:
    (found,) = findings(new_file("arch/powerpc/kernel/vdso/vgetrandom.c"), base)
    assert found.rule == "source-file-built/makefile"


def test_without_a_tree_only_an_info() -> None:
    assert [(f.rule, f.level) for f in findings(new_file("mm/dmapool_bench.c"), None)] == [("source-file-built/unverified", Level.INFO)]
    named = new_file("mm/dmapool_bench.c") + edit("mm/Makefile", "obj-y += dmapool.o", "obj-y += dmapool_bench.o")
    assert findings(named, None) == []
