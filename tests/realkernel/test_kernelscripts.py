"""Issue 7 on Debian's real 6.12 tree: the tree's checkpatch.pl and get_maintainer.pl on series made
from real code, and the Kconfig symbol check against the whole tree.

The base drops the dummy net driver's wiring (its Kconfig entry and Makefile line); the series put
it back, as its author would mail it. Most tests call the checkers in-process (fast); one review
runs the whole command end to end with --tree.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from reviewer.checks import run_checks
from reviewer.errors import ExitStatus
from reviewer.kernelscripts import Options, review
from reviewer.model import Finding, Level, Series
from reviewer.series import fetch
from reviewer.series.patchparse import parse_diff
from reviewer.series.target import classify, load
from reviewer.tree.base import GitBaseTree
from tests.helpers import review as review_cli
from tests.realkernel.kernel import commit, format_patch, git, show

AUTHOR = "Kernel Fixture <kernel-fixture@example.org>"
KCONFIG, MAKEFILE, DRIVER = "drivers/net/Kconfig", "drivers/net/Makefile", "drivers/net/dummy.c"
NETDEV = ("--to=netdev@vger.kernel.org", "--cc=Andrew Lunn <andrew+netdev@lunn.ch>", "--cc=David S. Miller <davem@davemloft.net>",
          "--cc=Eric Dumazet <edumazet@google.com>", "--cc=Jakub Kicinski <kuba@kernel.org>", "--cc=Paolo Abeni <pabeni@redhat.com>")
OBJ = "obj-$(CONFIG_DUMMY) += dummy.o\n"


@dataclasses.dataclass(frozen=True)
class Wiring:
    base: str  # HEAD without the dummy driver's Kconfig entry and Makefile line
    kconfig: str  # the tip of patch 1 (the Kconfig entry back)
    kconfig_text: str
    makefile_text: str


def _msg(subject: str, body: str) -> str:
    return f"{subject}\n\n{body}\n\nSigned-off-by: {AUTHOR}\n"


@pytest.fixture(scope="module")
def wiring(linux: Path, linux_head: str) -> Wiring:
    kconfig, makefile = show(linux, linux_head, KCONFIG), show(linux, linux_head, MAKEFILE)
    start = kconfig.index("config DUMMY\n")
    entry = kconfig[start : kconfig.index("config WIREGUARD\n")]
    assert OBJ in makefile
    base = commit(linux, linux_head, {KCONFIG: kconfig.replace(entry, ""), MAKEFILE: makefile.replace(OBJ, "")},
                  _msg("net: Drop the dummy driver's wiring", "The base for the tests."), author=AUTHOR)
    first = commit(linux, base, {KCONFIG: kconfig}, _msg("net: dummy: Add its Kconfig entry back",
                   "The dummy driver is selectable again."), author=AUTHOR)
    return Wiring(base, first, kconfig, makefile)


def _series(linux: Path, wiring: Wiring, makefile: str, tmp: Path, *extra: str, driver: str | None = None) -> Series:
    changes = {MAKEFILE: makefile, **({DRIVER: driver} if driver is not None else {})}
    tip = commit(linux, wiring.kconfig, changes, _msg("net: dummy: Build it again", "Build dummy.o when DUMMY is set."), author=AUTHOR)
    mbox = format_patch(linux, wiring.base, tip, tmp / "series.mbox", *extra)
    return _parsed(fetch.build_series(fetch.read_mbox(mbox), str(mbox)))


def _parsed(series: Series) -> Series:
    return dataclasses.replace(series, patches=tuple(dataclasses.replace(p, files=parse_diff(p.diff)) for p in series.patches))


def _ours(found: tuple[Finding, ...] | list[Finding]) -> list[tuple[str, int | None, str | None, int | None]]:
    return [(f.rule, f.patch, f.path, f.line) for f in found]


def test_a_clean_series_mailed_to_the_right_people_has_no_findings(linux: Path, wiring: Wiring, tmp_path: Path) -> None:
    series = _series(linux, wiring, wiring.makefile_text, tmp_path, *NETDEV)
    out = review(series, linux, Options(strict=True))
    assert out.findings == (), _ours(out.findings)
    assert out.note == "checkpatch.pl --strict, get_maintainer.pl"


def test_checkpatch_errors_and_a_missing_cc_with_their_patch_file_and_line(linux: Path, linux_head: str, wiring: Wiring,
                                                                         tmp_path: Path) -> None:
    driver = show(linux, linux_head, DRIVER)
    at = driver.index("static int __init dummy_init_module(void)")
    bad = driver[:at] + "static void dummy_hello(void)\n{\n\tprintk(\"hello\\n\"); \n}\n\n" + driver[at:]
    line = driver[:at].count("\n") + 3  # the printk line in the patched file
    # netdev@ and the maintainers are mailed, but not the list: To is only a maintainer
    series = _series(linux, wiring, wiring.makefile_text, tmp_path, *NETDEV[1:], driver=bad)
    start = time.perf_counter()
    out = review(series, linux, Options())
    assert time.perf_counter() - start < 10
    got = _ours(out.findings)
    assert ("checkpatch/TRAILING_WHITESPACE", 2, DRIVER, line) in got
    assert ("checkpatch/PRINTK_WITHOUT_KERN_LEVEL", 2, DRIVER, line) in got
    assert [f for f in out.findings if f.rule == "checkpatch/TRAILING_WHITESPACE"][0].quote == ('+\tprintk("hello\\n"); ',)
    assert not [f for f in out.findings if f.patch == 1 and f.rule.startswith("checkpatch/")], got  # patch 1 is clean
    missing = [f for f in out.findings if f.rule == "get-maintainer/missing-cc"]
    # one info for the series (issue 30), naming the first file
    assert [(f.level, f.patch, f.path) for f in missing] == [(Level.INFO, None, KCONFIG)]
    assert missing[0].message == "every patch touches NETWORKING DRIVERS, but To/Cc misses the list netdev@vger.kernel.org"


def test_strict_and_ignored_types(linux: Path, wiring: Wiring, tmp_path: Path) -> None:
    makefile = wiring.makefile_text.replace(OBJ, OBJ + "obj-$(CONFIG_DUMMY) += dummy.o  \n")
    series = _series(linux, wiring, makefile, tmp_path, *NETDEV)
    assert "checkpatch/TRAILING_WHITESPACE" in {f.rule for f in review(series, linux, Options()).findings}
    assert review(series, linux, Options(ignore=frozenset({"trailing_whitespace"}))).findings == ()
    assert review(series, linux, Options(checkpatch=False)).findings == ()


def test_a_git_range_gets_the_recipients_to_use(linux: Path, wiring: Wiring) -> None:
    series = _parsed(load(classify(f"{wiring.base}..{wiring.kconfig}", linux), linux))
    out = review(series, linux, Options(checkpatch=False))
    (found,) = out.findings
    assert found.rule == "get-maintainer/recipients"
    assert found.message.startswith("send to: To: Andrew Lunn <andrew+netdev@lunn.ch>, ")
    assert "Cc: netdev@vger.kernel.org, linux-kernel@vger.kernel.org" in found.message


def test_kconfig_symbols_checked_against_the_whole_tree_quickly(linux: Path, wiring: Wiring, tmp_path: Path) -> None:
    makefile = wiring.makefile_text.replace(OBJ, OBJ.replace("CONFIG_DUMMY", "CONFIG_DUMMYY") + "obj-$(CONFIG_WIREGUARD_X) += x.o\n"
                                            + "obj-$(CONFIG_MACVLAN) += macvlan2.o\n")
    series = _series(linux, wiring, makefile, tmp_path)
    start = time.perf_counter()
    found = [f for f in run_checks(series, GitBaseTree(linux, wiring.base)) if f.rule.startswith("kconfig-symbol-exists")]
    assert time.perf_counter() - start < 3  # one git grep over the Kconfig files, not one per symbol over 87,000 files
    assert _ours(found) == [("kconfig-symbol-exists", 2, MAKEFILE, None)] * 2
    assert [f.message for f in found] == ["Kconfig symbol DUMMYY is not defined anywhere",
                                          "Kconfig symbol WIREGUARD_X is not defined anywhere"]


def test_the_review_command_runs_them_on_the_tree_and_leaves_it_alone(linux: Path, wiring: Wiring, tmp_path: Path) -> None:
    makefile = wiring.makefile_text.replace(OBJ, OBJ.rstrip("\n") + " \n")
    series_dir = tmp_path / "in"
    series_dir.mkdir()
    tip = commit(linux, wiring.kconfig, {MAKEFILE: makefile}, _msg("net: dummy: Build it again", "Build dummy.o again."), author=AUTHOR)
    mbox = format_patch(linux, wiring.base, tip, series_dir / "s.mbox", "--to=netdev@vger.kernel.org")
    before = git(linux, "status", "--porcelain", "--ignored")
    result = review_cli(mbox, "--tree", linux, "--no-tests", "--checkpatch-strict", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.FINDINGS, result.stderr
    doc = result.json()
    rules = {(f["rule"], f["patch"], f["path"], f["line"]) for f in doc["findings"]}
    line = makefile[: makefile.index(OBJ[:-1] + " \n")].count("\n") + 1
    assert ("checkpatch/TRAILING_WHITESPACE", 2, MAKEFILE, line) in rules
    assert ("get-maintainer/missing-cc", None, KCONFIG, None) in rules  # the maintainers are not Cc'd (said once for both patches)
    check = next(st for st in doc["stages"] if st["name"] == "check")
    assert check["detail"].endswith("; checkpatch.pl --strict, get_maintainer.pl")
    assert git(linux, "status", "--porcelain", "--ignored") == before  # no .checkpatch-camelcase.* cache either
    result.assert_nothing_left()


def test_strict_camelcase_keeps_its_cache_out_of_the_tree(linux: Path, linux_head: str, wiring: Wiring, tmp_path: Path) -> None:
    driver = show(linux, linux_head, DRIVER)
    at = driver.index("static int __init dummy_init_module(void)")
    bad = driver[:at] + "static int dummyCount;\n\n" + driver[at:]
    series = _series(linux, wiring, wiring.makefile_text, tmp_path, *NETDEV, driver=bad)
    before = git(linux, "status", "--porcelain", "--ignored")
    out = review(series, linux, Options(strict=True))
    camel = [f for f in out.findings if f.rule == "checkpatch/CAMELCASE"]
    assert [(f.level, f.patch, f.path, f.line) for f in camel] == [("info", 2, DRIVER, driver[:at].count("\n") + 1)]
    assert git(linux, "status", "--porcelain", "--ignored") == before
