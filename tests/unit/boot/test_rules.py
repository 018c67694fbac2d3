"""Rules that name in-kernel tests: the `[[in_kernel_test]]` schema, and how a triggered rule's tests
join the built-in ones in the boot stage (listed and described without --boot: nothing is built)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reviewer import boot
from reviewer.boot.intests import InTest, describe, from_rule, from_rules, relevant
from reviewer.errors import ConfigError, ExitStatus
from reviewer.pipeline import review
from reviewer.report import json as json_report
from reviewer.request import CheckOptions, ReviewRequest, SourceOptions
from reviewer.rules import RULES_DIR, load_rule, load_rules
from reviewer.rules.schema import InKernelTest
from tests.conftest import SERIES, git
from tests.rules.test_fixtures import load

HEAD = """\
schema = 1
id = "x"
level = "info"
summary = "s"
why = "w"
[trigger]
any_of = [{ path = '^include/linux/overflow\\.h$' }]
"""
TEST = """
[[in_kernel_test]]
name = "overflow"
kind = "kunit"
config = "OVERFLOW_KUNIT_TEST"
"""
WHERE = "rules/x.toml: [[in_kernel_test]] #1"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # rule files are named relative to the working directory


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules" / "x.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_rule(write(tmp_path, text))
    assert info.value.status is ExitStatus.CONFIG and info.value.hint
    return info.value.message


# --- the schema ------------------------------------------------------------------------------

def test_good_in_kernel_tests(tmp_path: Path) -> None:
    rule = load_rule(write(tmp_path, HEAD + TEST + """
[[in_kernel_test]]
name = "dmapool_test"
kind = "dmapool"
config = "DMAPOOL_TEST"
extra_config = ["SLUB_DEBUG", "!SLUB_TINY"]
source = "mm/dmapool_test.c"
"""))
    assert rule.in_kernel_tests == (
        InKernelTest("overflow", "kunit", "OVERFLOW_KUNIT_TEST"),
        InKernelTest("dmapool_test", "dmapool", "DMAPOOL_TEST", ("SLUB_DEBUG", "!SLUB_TINY"), "mm/dmapool_test.c"),
    )
    assert rule.requires == ()


def test_a_rule_without_in_kernel_tests_has_none(tmp_path: Path) -> None:
    assert load_rule(write(tmp_path, HEAD)).in_kernel_tests == ()


@pytest.mark.parametrize(("text", "message"), [
    (TEST.replace('name = "overflow"\n', ""), f"{WHERE}: name: missing required key"),
    (TEST.replace('"overflow"', '"kunit:overflow"'),
     f"{WHERE}: name: expected a test or KUnit suite name (letters, digits, _ . -), got 'kunit:overflow'"),
    (TEST.replace('"overflow"', "3"), f"{WHERE}: name: expected a string, got an integer 3"),
    (TEST.replace('kind = "kunit"\n', ""), f"{WHERE} (overflow): kind: missing required key"),
    (TEST.replace('"kunit"', '"ktap"'), f"{WHERE} (overflow): kind: expected one of kunit, dmapool, got 'ktap'"),
    (TEST.replace('config = "OVERFLOW_KUNIT_TEST"\n', ""), f"{WHERE} (overflow): config: missing required key"),
    (TEST.replace('"OVERFLOW_KUNIT_TEST"', '"CONFIG_OVERFLOW_KUNIT_TEST"'),
     f"{WHERE} (overflow): config: write the symbol without CONFIG_: 'OVERFLOW_KUNIT_TEST'"),
    (TEST.replace('"OVERFLOW_KUNIT_TEST"', '"overflow_kunit_test"'),
     f"{WHERE} (overflow): config: expected a Kconfig symbol (SYMBOL: upper case, digits, _), got 'overflow_kunit_test'"),
    (TEST.replace('"OVERFLOW_KUNIT_TEST"', '"!OVERFLOW_KUNIT_TEST"'),
     f"{WHERE} (overflow): config: expected a Kconfig symbol (SYMBOL: upper case, digits, _), got '!OVERFLOW_KUNIT_TEST'"),
    (TEST + 'extra_config = "SYSFS"\n', f"{WHERE} (overflow): extra_config: expected a list, got a string 'SYSFS'"),
    (TEST + "extra_config = [1]\n", f"{WHERE} (overflow): extra_config: expected a list of strings, got 1 in it"),
    (TEST + 'extra_config = ["SYSFS", "CONFIG_PRINTK"]\n', f"{WHERE} (overflow): extra_config: write the symbol without CONFIG_: 'PRINTK'"),
    (TEST + 'extra_config = ["NOT-A-SYMBOL"]\n',
     f"{WHERE} (overflow): extra_config: expected a Kconfig symbol (SYMBOL or !SYMBOL: upper case, digits, _), got 'NOT-A-SYMBOL'"),
    (TEST + 'end = "ok 1 overflow"\n', f"{WHERE} (overflow): unknown key 'end'"),
    (TEST + TEST, "rules/x.toml: [[in_kernel_test]]: duplicate in-kernel test name 'overflow'"),
    ('\nin_kernel_test = "overflow"\n', "rules/x.toml: in_kernel_test: expected a list, got a string 'overflow'"),
    ("\nin_kernel_test = [1]\n", f"{WHERE}: expected a table, got int"),
])
def test_bad_in_kernel_test_names_file_table_and_key(tmp_path: Path, text: str, message: str) -> None:
    rule = HEAD + text if "[[" in text else HEAD.replace("[trigger]", text.lstrip() + "[trigger]")  # a top-level key
    assert error_of(tmp_path, rule) == message


def test_the_shipped_overflow_rule() -> None:
    rule = {r.id: r for r in load_rules(RULES_DIR)}["overflow-kunit"]
    assert rule.requires == ()
    test = from_rule(rule.id, *rule.in_kernel_tests)
    assert test == InTest("kunit:overflow", "kunit", ("KUNIT", "OVERFLOW_KUNIT_TEST"), (), "lib/overflow_kunit.c", "overflow-kunit")
    assert describe(test) == ("kunit:overflow: tinyconfig + CONFIG_KUNIT=y CONFIG_OVERFLOW_KUNIT_TEST=y, "
                              "booted under QEMU on base and patched")


def test_from_rule_dmapool_kind_needs_no_kunit() -> None:
    spec = InKernelTest("dmapool_test", "dmapool", "DMAPOOL_TEST", ("!SLUB_TINY", "SLUB_DEBUG"))
    assert from_rule("r", spec).symbols == ("DMAPOOL_TEST", "!SLUB_TINY", "SLUB_DEBUG")


def test_relevant_keeps_a_rule_test_without_paths_and_prefers_the_rule_over_the_builtin() -> None:
    mine = InTest("dmapool_test", "dmapool", ("DMAPOOL_TEST", "SLUB_DEBUG"), (r"^mm/dmapool\.c$",), "mm/dmapool_test.c", "house")
    message_only = InTest("kunit:overflow", "kunit", ("KUNIT", "OVERFLOW_KUNIT_TEST"), (), "lib/overflow_kunit.c", "by-subject")
    found = relevant(["mm/dmapool.c"], None, [mine, message_only])
    assert found == [(mine, "mm/dmapool.c triggers rule house, which names mm/dmapool_test.c"),
                     (message_only, "rule by-subject names lib/overflow_kunit.c")]


# --- through the pipeline, without --boot ----------------------------------------------------------

OVERFLOW_H = """/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef __LINUX_OVERFLOW_H
#define __LINUX_OVERFLOW_H

#define check_add_overflow(a, b, d) __builtin_add_overflow(a, b, d)

#endif /* __LINUX_OVERFLOW_H */
"""


def _overflow_series(repo: Path, out: Path) -> Path:
    """A one-patch series on the kernel-mini base that touches include/linux/overflow.h (a new file there)."""
    (repo / "include" / "linux").mkdir(parents=True)
    (repo / "include" / "linux" / "overflow.h").write_text(OVERFLOW_H)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "overflow: Add check_add_overflow()\n\nFor callers.\n\nSigned-off-by: Test Runner <runner@example.org>")
    mbox = out / "overflow.mbox"
    mbox.write_text(git(repo, "format-patch", "--stdout", "--base=HEAD~1", "HEAD~1..HEAD"))
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    return mbox


def test_a_triggered_rule_names_its_kunit_suite_and_the_report_says_how_it_would_boot(kernel_repo: Path, tmp_path: Path) -> None:
    mbox = _overflow_series(kernel_repo, tmp_path)
    result, error = review(ReviewRequest(SourceOptions(target=str(mbox), cwd=tmp_path, tree=kernel_repo),
                                         checks=CheckOptions(checkpatch=False)))
    assert error is None
    stage = next(st for st in result.stages if st.name == "boot")
    assert str(stage.status) == "skipped"
    assert stage.detail == ("would boot kunit:overflow: tinyconfig + CONFIG_KUNIT=y CONFIG_OVERFLOW_KUNIT_TEST=y, booted under QEMU "
                            "on base and patched; pass --boot (two kernel builds: minutes)")
    chosen = json.loads(json_report.dumps(result))["selftests_chosen"]
    assert {"test": "boot:kunit:overflow",
            "why": ["include/linux/overflow.h triggers rule overflow-kunit, which names lib/overflow_kunit.c"]} in chosen
    assert result.boot is None  # nothing was built or booted
    assert not (Path(os.environ["XDG_STATE_HOME"]) / "reviewer" / "logs").exists()  # no log to keep, no log directory


def test_a_users_rule_adds_tests_beside_the_builtin_one(kernel_repo: Path, tmp_path: Path) -> None:
    """The demo series touches nothing with a built-in test; a rule in --rules DIR names two."""
    rules = tmp_path / "my-rules"
    rules.mkdir()
    (rules / "loongarch-kunit.toml").write_text(HEAD.replace('"x"', '"loongarch-kunit"').replace(
        "^include/linux/overflow\\.h$", "^arch/(?P<arch>loongarch)/Kconfig$") + TEST + """
[[in_kernel_test]]
name = "dmapool_test"
kind = "dmapool"
config = "DMAPOOL_TEST"
extra_config = ["SYSFS"]
""")
    demo = SourceOptions(target=str(SERIES / "loongarch-vdso-getrandom-v4.mbox"), cwd=tmp_path, tree=kernel_repo)
    result, error = review(ReviewRequest(demo, checks=CheckOptions(checkpatch=False, rules_dirs=(rules,))))
    assert error is None
    detail = next(st for st in result.stages if st.name == "boot").detail
    assert detail.startswith("would boot kunit:overflow: tinyconfig + CONFIG_KUNIT=y CONFIG_OVERFLOW_KUNIT_TEST=y, booted under QEMU"
                             " on base and patched; dmapool_test: tinyconfig + CONFIG_DMAPOOL_TEST=y CONFIG_SYSFS=y")
    whys = {c.test: c.why for c in result.chosen if c.test.startswith("boot:")}
    assert whys == {"boot:kunit:overflow": ("arch/loongarch/Kconfig triggers rule loongarch-kunit, which names kunit:overflow",),
                    "boot:dmapool_test": ("arch/loongarch/Kconfig triggers rule loongarch-kunit, which names dmapool_test",)}


def test_from_rules_ignores_rules_that_do_not_trigger() -> None:
    demo = load(SERIES / "loongarch-vdso-getrandom-v4.mbox")
    assert from_rules(load_rules(RULES_DIR), demo.patches) == []
    assert boot.relevant(["arch/loongarch/Kconfig"], None, from_rules(load_rules(RULES_DIR), demo.patches)) == []
