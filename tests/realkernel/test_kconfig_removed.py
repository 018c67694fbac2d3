"""Issue 7 item 3 on Debian's real 6.12 tree: a series that removes a `config` entry the tree still
uses (the half of scripts/checkkconfigsymbols.py that kconfig-symbol-exists does not do).

The series are real commits on HEAD exported with git format-patch: one removes the entries of
DMAPOOL_TEST (used by mm/Makefile, and by m68k defconfigs, which do not count) and VDSO_GETRANDOM
(selected by five architectures, tested in drivers/char/random.c and lib/vdso/Makefile); the
clean one removes DMAPOOL_TEST with its uses, and alpha's GENERIC_CALIBRATE_DELAY, which a dozen
other architectures still define.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from reviewer.checks import CHECKS, run_checks
from reviewer.model import Finding, Series
from reviewer.series import fetch
from reviewer.series.patchparse import parse_diff
from reviewer.tree.base import GitBaseTree
from tests.realkernel.kernel import commit, format_patch, show

AUTHOR = "Kernel Fixture <kernel-fixture@example.org>"
MM_KCONFIG, MM_MAKEFILE, VDSO_KCONFIG, ALPHA_KCONFIG = "mm/Kconfig", "mm/Makefile", "lib/vdso/Kconfig", "arch/alpha/Kconfig"
DMAPOOL_OBJ = "obj-$(CONFIG_DMAPOOL_TEST) += dmapool_test.o\n"
CHECK = "kconfig-symbol-removed"


class CountingTree(GitBaseTree):
    """A GitBaseTree that counts its whole-tree searches."""

    searches: list[Sequence[str]]

    def lines_with_words(self, words: Sequence[str], pathspecs: Sequence[str] = ()) -> list[tuple[str, int, str]]:
        self.searches = [*getattr(self, "searches", []), words]
        return super().lines_with_words(words, pathspecs)


def _msg(subject: str) -> str:
    return f"{subject}\n\nRemove what nobody uses any more.\n\nSigned-off-by: {AUTHOR}\n"


def _entry(text: str, symbol: str) -> str:
    """The `config SYMBOL` entry of a Kconfig TEXT, up to the next entry or `endif`."""
    start = text.index(f"\nconfig {symbol}\n") + 1
    ends = [at + 1 for end in ("\nconfig ", "\nendif", "\ncomment ") if (at := text.find(end, start)) != -1]
    return text[start : min(ends, default=len(text))]


def _series(linux: Path, base: str, patches: list[tuple[str, dict[str, str | None]]], out: Path) -> Series:
    tip = base
    for subject, changes in patches:
        tip = commit(linux, tip, changes, _msg(subject), author=AUTHOR)
    mbox = format_patch(linux, base, tip, out)
    series = fetch.build_series(fetch.read_mbox(mbox), str(mbox))
    return dataclasses.replace(series, patches=tuple(dataclasses.replace(p, files=parse_diff(p.diff)) for p in series.patches))


def _without(linux: Path, rev: str, path: str, symbol: str) -> dict[str, str | None]:
    text = show(linux, rev, path)
    return {path: text.replace(_entry(text, symbol), "", 1)}


def _removed(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.rule.startswith(CHECK)]


@pytest.fixture(scope="module")
def mm_makefile(linux: Path, linux_head: str) -> str:
    text = show(linux, linux_head, MM_MAKEFILE)
    assert DMAPOOL_OBJ in text
    return text


def test_removed_entries_still_used_are_named_with_their_patch_and_kconfig_file(linux: Path, linux_head: str,
                                                                              tmp_path: Path) -> None:
    series = _series(linux, linux_head, [
        ("mm/dmapool: Remove the test module's Kconfig entry", _without(linux, linux_head, MM_KCONFIG, "DMAPOOL_TEST")),
        ("vdso: Remove VDSO_GETRANDOM", _without(linux, linux_head, VDSO_KCONFIG, "VDSO_GETRANDOM")),
    ], tmp_path / "bad.mbox")
    tree = CountingTree(linux, linux_head)
    start = time.perf_counter()
    found = list(CHECKS[CHECK].findings(series, tree))
    seconds = time.perf_counter() - start
    assert [(f.rule, f.level, f.patch, f.path) for f in found] == [
        (CHECK, "error", 1, MM_KCONFIG), (CHECK, "error", 2, VDSO_KCONFIG)]
    dmapool, getrandom = (f.message for f in found)
    assert dmapool == ("Kconfig symbol DMAPOOL_TEST is no longer defined (`config DMAPOOL_TEST` is removed from mm/Kconfig) "
                       "but is still used: mm/Makefile:106")  # not the m68k defconfigs' CONFIG_DMAPOOL_TEST=m
    assert getrandom.startswith("Kconfig symbol VDSO_GETRANDOM is no longer defined (`config VDSO_GETRANDOM` is removed "
                                "from lib/vdso/Kconfig) but is still used: arch/arm64/Kconfig:273, arch/loongarch/Kconfig:198, ")
    assert getrandom.endswith(" and 4 more")  # 5 selects, 3 #ifdefs in drivers/char/random.c, lib/vdso/Makefile
    assert [sorted(words) for words in tree.searches] == [sorted(
        ["DMAPOOL_TEST", "CONFIG_DMAPOOL_TEST", "CONFIG_DMAPOOL_TEST_MODULE",
         "VDSO_GETRANDOM", "CONFIG_VDSO_GETRANDOM", "CONFIG_VDSO_GETRANDOM_MODULE"])]  # one search for both
    assert seconds < 15, seconds  # one `git grep -w` of the tree (~3 s), not one per symbol


def test_a_clean_removal_yields_nothing(linux: Path, linux_head: str, mm_makefile: str, tmp_path: Path) -> None:
    series = _series(linux, linux_head, [
        ("mm/dmapool: Remove the test module", {**_without(linux, linux_head, MM_KCONFIG, "DMAPOOL_TEST"),
                                                MM_MAKEFILE: mm_makefile.replace(DMAPOOL_OBJ, ""), "mm/dmapool_test.c": None}),
        ("alpha: Use the generic GENERIC_CALIBRATE_DELAY", _without(linux, linux_head, ALPHA_KCONFIG, "GENERIC_CALIBRATE_DELAY")),
    ], tmp_path / "clean.mbox")
    tree = CountingTree(linux, linux_head)
    found = list(run_checks(series, tree))
    assert _removed(found) == [], _removed(found)
    assert [sorted(words) for words in tree.searches] == [["CONFIG_DMAPOOL_TEST", "CONFIG_DMAPOOL_TEST_MODULE", "DMAPOOL_TEST"]]
