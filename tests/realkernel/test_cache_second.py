"""Issue 7: a second review of the same series comes from the result cache, says so, and finds the same.

The CLI tests use a small git tree made of real 6.12 files (the scripts, MAINTAINERS and the dummy
net driver's files: what checkpatch.pl and get_maintainer.pl read and what the series touches),
so each review takes a second or two; one test runs the scripts on the whole 6.12 tree in-process.
Nothing in the shared 6.12 repository is checked out or modified.
"""
from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reviewer.errors import ExitStatus
from reviewer.kernelscripts import Options, review
from reviewer.model import Series
from reviewer.series import fetch
from reviewer.series.patchparse import parse_diff
from reviewer.store import results as resultcache
from tests.conftest import SERIES
from tests.helpers import review as review_cli
from tests.realkernel.kernel import commit, format_patch, git, show

AUTHOR = "Kernel Fixture <kernel-fixture@example.org>"
KCONFIG, MAKEFILE, DRIVER = "drivers/net/Kconfig", "drivers/net/Makefile", "drivers/net/dummy.c"
OBJ = "obj-$(CONFIG_DUMMY) += dummy.o\n"
# checkpatch's and get_maintainer's top_of_kernel_tree(), the files they read, and the series' files
REAL = ("COPYING", "CREDITS", "Kbuild", "MAINTAINERS", "Makefile", "README", ".mailmap", "Documentation/Makefile", "arch/Kconfig",
        "include/linux/kernel.h", "fs/Kconfig", "init/Kconfig", "ipc/Makefile", "kernel/Makefile", "lib/Kconfig",
        "scripts/checkpatch.pl", "scripts/spelling.txt", "scripts/const_structs.checkpatch", "scripts/get_maintainer.pl",
        KCONFIG, MAKEFILE, DRIVER)
CACHED = " (2 of 2 from the cache)"


def _msg(subject: str) -> str:
    return f"{subject}\n\nPut the dummy driver back.\n\nSigned-off-by: {AUTHOR}\n"


@pytest.fixture(scope="module")
def small(linux: Path, linux_head: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a small tree of real 6.12 files with the dummy driver unwired, a 2-patch mbox wiring it back with faults)."""
    tree = tmp_path_factory.mktemp("small") / "linux"
    for path in REAL:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(show(linux, linux_head, path))
    (tree / "scripts/checkpatch.pl").chmod(0o755)
    kconfig, makefile, driver = (show(linux, linux_head, p) for p in (KCONFIG, MAKEFILE, DRIVER))
    entry = kconfig[kconfig.index("config DUMMY\n") : kconfig.index("config WIREGUARD\n")]
    (tree / KCONFIG).write_text(kconfig.replace(entry, ""))
    (tree / MAKEFILE).write_text(makefile.replace(OBJ, ""))
    git(tree, "init", "-q", "-b", "master")
    git(tree, "add", "-A", "-f")
    git(tree, "commit", "-q", "--no-verify", "-m", "base")
    base = git(tree, "rev-parse", "HEAD").strip()
    first = commit(tree, base, {KCONFIG: kconfig}, _msg("net: dummy: Add its Kconfig entry back"), author=AUTHOR)
    at = driver.index("static int __init dummy_init_module(void)")
    bad = driver[:at] + "static void dummy_hello(void)\n{\n\tprintk(\"hello\\n\"); \n}\n\n" + driver[at:]
    tip = commit(tree, first, {MAKEFILE: makefile, DRIVER: bad}, _msg("net: dummy: Build it again"), author=AUTHOR)
    mbox = format_patch(tree, base, tip, tree.parent / "series.mbox", "--cc=Jakub Kicinski <kuba@kernel.org>")
    return tree, mbox


def _run(tmp: Path, *args: str | Path) -> dict[str, Any]:
    result = review_cli(*args, "--no-tests", "--format", "json", tmp=tmp)
    assert result.rc == ExitStatus.FINDINGS, result.stderr
    result.assert_nothing_left()  # no worktree, no view of the patched tree left behind
    doc: dict[str, Any] = result.json()
    return doc


def _stages(doc: dict[str, Any]) -> dict[str, str]:
    return {st["name"]: st["detail"] for st in doc["stages"]}


def test_the_second_review_comes_from_the_cache_and_no_cache_recomputes(small: tuple[Path, Path], tmp_path: Path) -> None:
    tree, mbox = small
    first = _run(tmp_path / "1", mbox, "--tree", tree, "--no-cache")
    second = _run(tmp_path / "2", mbox, "--tree", tree)
    again = _run(tmp_path / "3", mbox, "--tree", tree, "--no-cache")
    rules = {f["rule"] for f in first["findings"]}
    assert {"checkpatch/TRAILING_WHITESPACE", "checkpatch/PRINTK_WITHOUT_KERN_LEVEL", "get-maintainer/missing-cc"} <= rules
    assert second["findings"] == first["findings"] == again["findings"]
    assert second["apply"] == first["apply"]
    s1, s2, s3 = _stages(first), _stages(second), _stages(again)
    assert "from the cache" not in s1["check"] and "(cached)" not in s1["apply"]
    assert s2["check"].endswith(f"; checkpatch.pl{CACHED}, get_maintainer.pl{CACHED}"), s2["check"]
    assert s2["apply"] == s1["apply"] + " (cached)"
    assert s3 == s1  # --no-cache: nothing read from the cache
    assert (s2["selftests"], s2["boot"]) == (s1["selftests"], s1["boot"])


def test_a_changed_checkpatch_pl_in_the_working_tree_is_run_again(small: tuple[Path, Path], tmp_path: Path) -> None:
    tree, mbox = small
    _run(tmp_path / "1", mbox, "--tree", tree)
    script = tree / "scripts/checkpatch.pl"
    original = script.read_text()
    assert original.count('"trailing whitespace\\n"') == 1
    script.write_text(original.replace('"trailing whitespace\\n"', '"trailing blanks (edited)\\n"'))
    try:
        doc = _run(tmp_path / "2", mbox, "--tree", tree)
    finally:
        script.write_text(original)
    check = _stages(doc)["check"]
    assert check.endswith(f"; checkpatch.pl, get_maintainer.pl{CACHED}"), check  # get_maintainer.pl does not read it
    assert "trailing blanks (edited)" in {f["message"] for f in doc["findings"] if f["rule"] == "checkpatch/TRAILING_WHITESPACE"}
    back = _run(tmp_path / "3", mbox, "--tree", tree)  # the original script: its results are still there
    assert _stages(back)["check"].endswith(f"; checkpatch.pl{CACHED}, get_maintainer.pl{CACHED}")


def test_result_cache_false_neither_reads_nor_writes(small: tuple[Path, Path], tmp_path: Path) -> None:
    tree, mbox = small
    subprocess.run(["git", "config", "--global", "reviewer.resultCache", "false"], check=True)
    off = _run(tmp_path / "1", mbox, "--tree", tree)
    assert not resultcache.directory().exists()
    subprocess.run(["git", "config", "--global", "reviewer.resultCache", "true"], check=True)
    on = _run(tmp_path / "2", mbox, "--tree", tree)
    assert "from the cache" not in _stages(off)["check"] + _stages(on)["check"]
    assert on["findings"] == off["findings"]
    assert len(list(resultcache.directory().glob("*/*/*.json"))) == 5  # 2 checkpatch, 2 get_maintainer, 1 apply


def test_a_cached_apply_lists_the_kunit_suite_of_the_patched_tree(kernel_repo: Path, tmp_path: Path) -> None:
    """The boot stage reads the touched directories of the patched tree: a cache hit serves them from the patched commit."""
    (kernel_repo / "mm/dmapool_kunit.c").write_text('#include <kunit/test.h>\nstatic struct kunit_suite s = {\n\t.name = '
                                                    '"dmapool-kunit",\n};\n'
                                                   "kunit_test_suite(s);\n")
    with (kernel_repo / "mm/Makefile").open("a") as f:
        f.write("obj-$(CONFIG_DMAPOOL_KUNIT_TEST) += dmapool_kunit.o\n")
    git(kernel_repo, "add", "-A")
    git(kernel_repo, "commit", "-q", "-m", "mm: a KUnit suite beside dmapool.c")
    args = (SERIES / "dmapool-v1-v2.mbox", "--tree", kernel_repo, "--base", "HEAD", "--format", "json")
    first, second = (review_cli(*args, *extra, tmp=tmp_path / n) for n, extra in (("1", ("--no-cache",)), ("2", ())))
    s1, s2 = _stages(first.json()), _stages(second.json())
    assert "kunit:dmapool-kunit" in s1["boot"] and s2["boot"] == s1["boot"], (s1["boot"], s2["boot"])
    assert s2["apply"] == s1["apply"] + " (cached)"
    assert second.json()["selftests_chosen"] == first.json()["selftests_chosen"]
    second.assert_nothing_left()


def _real_series(linux: Path, head: str, tmp: Path) -> Series:
    driver = show(linux, head, "drivers/net/veth.c")
    at = driver.index("\nstatic ", len(driver) // 2) + 1
    tip = commit(linux, head, {"drivers/net/veth.c": driver[:at] + "static int vethCount; \n" + driver[at:]},
                 _msg("net: veth: Count them"), author=AUTHOR)
    mbox = format_patch(linux, head, tip, tmp / "veth.mbox", "--to=netdev@vger.kernel.org")
    series = fetch.build_series(fetch.read_mbox(mbox), str(mbox))
    return dataclasses.replace(series, patches=tuple(dataclasses.replace(p, files=parse_diff(p.diff)) for p in series.patches))


def test_on_the_whole_6_12_tree(linux: Path, linux_head: str, tmp_path: Path) -> None:
    series = _real_series(linux, linux_head, tmp_path)
    first = review(series, linux, Options(strict=True, cache=resultcache.CacheUse.of(no_cache=True)))
    second = review(series, linux, Options(strict=True))
    assert {"checkpatch/TRAILING_WHITESPACE", "checkpatch/CAMELCASE"} <= {f.rule for f in first.findings}
    assert second.findings == first.findings
    assert (first.note, second.note) == ("checkpatch.pl --strict, get_maintainer.pl",
                                         "checkpatch.pl --strict (1 of 1 from the cache), get_maintainer.pl (1 of 1 from the cache)")
    assert review(series, linux, Options(strict=False)).note == "checkpatch.pl, get_maintainer.pl (1 of 1 from the cache)"
