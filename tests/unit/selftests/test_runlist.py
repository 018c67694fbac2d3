"""What `make run_tests` runs: the run list make expands, and the stage running exactly it.

The trees are fixtures/kernel-mini plus a selftest directory `demo` with every kind of kselftest
list: TEST_GEN_PROGS (one behind an arch conditional), TEST_CUSTOM_PROGS, TEST_PROGS scripts
(one without its x bit, one without a #! line), a TEST_GEN_PROGS_EXTENDED helper that a script
runs, and a TEST_FILES data file. The patched tree registers one more script.
"""
from __future__ import annotations

import platform
import shutil
from pathlib import Path

import pytest

from reviewer import ktap
from reviewer.checks.selftest_registered import HELPERS, RUN, lists_naming
from reviewer.model import Level
from reviewer.run.sandbox import Sandbox
from reviewer.selftests.choose import SELFTESTS, Chosen, TestRef
from reviewer.selftests.run import build, command, run_list, run_test
from reviewer.selftests.stage import Plan, run
from tests.conftest import FIXTURES

X86 = platform.machine() in ("x86_64", "i386", "i486", "i586", "i686")
MAKEFILE = """\
# SPDX-License-Identifier: GPL-2.0
TEST_GEN_PROGS := demo_test
ifneq ($(filter x86_64 i%86,$(shell uname -m)),)
TEST_GEN_PROGS += demo_x86
endif
TEST_GEN_PROGS_EXTENDED := demo_helper
TEST_CUSTOM_PROGS = $(OUTPUT)/demo_custom
TEST_PROGS := run_helper.sh \\
	plain_mode.sh
TEST_PROGS += skipped.sh no_shebang.sh
TEST_FILES := demo_data.txt

include ../lib.mk

# kernel-mini's lib.mk builds TEST_GEN_PROGS only: the helper and the custom program are built here.
all: $(OUTPUT)/demo_helper $(TEST_CUSTOM_PROGS)

$(OUTPUT)/demo_custom: demo_test.c
	$(CC) $(CFLAGS) -DCUSTOM $< -o $@
"""
C_PROGRAM = '#include <stdio.h>\nint main(void) { puts("%s"); return 0; }\n'
FILES = {  # name -> (text, mode)
    "Makefile": (MAKEFILE, 0o644),
    "demo_test.c": (C_PROGRAM % "ok 1 demo", 0o644),
    "demo_x86.c": (C_PROGRAM % "ok 1 x86", 0o644),
    "demo_helper.c": (C_PROGRAM % "helper ran", 0o644),
    "run_helper.sh": ("#!/bin/sh\n./demo_helper | grep -q 'helper ran'\n", 0o755),  # passes only when run from the directory
    "plain_mode.sh": ("#!/bin/sh\necho 'ok 1 plain'\n", 0o644),  # no x bit: run through its #! line
    "skipped.sh": ("#!/bin/sh\nexit 4\n", 0o755),
    "no_shebang.sh": ("echo never\n", 0o644),
    "demo_data.txt": ("data for the tests\n", 0o644),
}
BASE_LIST = ("demo_test", *(("demo_x86",) if X86 else ()), "demo_custom", "run_helper.sh", "plain_mode.sh", "skipped.sh", "no_shebang.sh")
HELPER = (("demo_helper", "TEST_GEN_PROGS_EXTENDED"), ("demo_data.txt", "TEST_FILES"))


def _tree(root: Path, extra: dict[str, tuple[str, int]] | None = None, makefile_tail: str = "") -> Path:
    tree = root / "linux"
    shutil.copytree(FIXTURES / "kernel-mini", tree, symlinks=True)
    demo = tree / SELFTESTS / "demo"
    demo.mkdir()
    for name, (text, mode) in {**FILES, **(extra or {})}.items():
        (demo / name).write_text(text + (makefile_tail if name == "Makefile" else ""))
        (demo / name).chmod(mode)
    return tree


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Built base and patched trees; the patched one adds new.sh to TEST_PROGS."""
    base = _tree(tmp_path_factory.mktemp("base"))
    patched = _tree(tmp_path_factory.mktemp("patched"), {"new.sh": ("#!/bin/sh\nexit 0\n", 0o755)}, "TEST_PROGS += new.sh\n")
    for wt in (base, patched):
        ok, log = build(wt, ["demo"], Sandbox(wt.parent / "scratch"))
        assert ok, log
    return {"base": base, "patched": patched}


def test_the_run_list_is_what_make_expands(trees: dict[str, Path], tmp_path: Path) -> None:
    listed = run_list(trees["base"], "demo", Sandbox(tmp_path))
    assert listed.error == ""
    # lib.mk's order: TEST_GEN_PROGS ($(OUTPUT)/ dropped), TEST_CUSTOM_PROGS, TEST_PROGS (continued, +=)
    assert listed.tests == BASE_LIST
    assert listed.others == HELPER and listed.role("demo_helper") == "TEST_GEN_PROGS_EXTENDED"
    assert run_list(trees["patched"], "demo", Sandbox(tmp_path)).tests == (*BASE_LIST, "new.sh")
    assert run_list(trees["base"], "absent", Sandbox(tmp_path)).tests == ()  # a directory this tree lacks lists nothing


def test_the_stage_runs_the_run_list_and_not_the_helpers(trees: dict[str, Path], tmp_path: Path) -> None:
    outcome = run(Plan((Chosen(TestRef("demo"), ("the series touches it",)),)), trees, tmp_path / "scratch")
    got = {(r.test, r.tree): (r.result, r.reason) for r in outcome.runs}
    for tree in ("base", "patched"):
        for name in BASE_LIST:
            assert (f"demo:{name}", tree) in got
        assert got[("demo:run_helper.sh", tree)] == (ktap.Result.PASS, "")  # the script ran, and ran the helper
        assert got[("demo:plain_mode.sh", tree)] == (ktap.Result.PASS, "")
        assert got[("demo:skipped.sh", tree)][0] is ktap.Result.SKIP
        assert got[("demo:no_shebang.sh", tree)] == (
            ktap.Result.FAIL, "not executable and no #! line: kselftest's runner cannot start it either")
    assert not [r for r in outcome.runs if r.test.startswith("demo:demo_helper")]  # a helper is not a test
    assert got[("demo:new.sh", "patched")] == (ktap.Result.PASS, "")
    assert got[("demo:new.sh", "base")] == (ktap.Result.SKIP, f"not in the run list of {SELFTESTS}/demo/Makefile on this tree")
    assert len(outcome.runs) == 2 * len(BASE_LIST) + 2
    assert [(f.level, f.message.split(" ")[0]) for f in outcome.findings] == [(Level.WARNING, "demo:no_shebang.sh")]  # fails on both


def test_a_helper_asked_for_by_name_runs_and_says_so(trees: dict[str, Path], tmp_path: Path) -> None:
    outcome = run(Plan((Chosen(TestRef("demo", "demo_helper"), ("--tests",)),)), trees, tmp_path / "scratch")
    assert [(r.test, r.tree, r.result) for r in outcome.runs] == [("demo:demo_helper", t, ktap.Result.PASS) for t in ("base", "patched")]
    (finding,) = outcome.findings
    assert finding.level is Level.INFO and finding.message == (
        f"demo:demo_helper is not in the run list of {SELFTESTS}/demo/Makefile (TEST_GEN_PROGS, TEST_CUSTOM_PROGS, TEST_PROGS) "
        "on the patched tree (it is in TEST_GEN_PROGS_EXTENDED, for helpers that other tests run): it was run because it was "
        "asked for (--tests), but `make run_tests` does not run it")


def test_a_listed_test_asked_for_by_name_has_no_note(trees: dict[str, Path], tmp_path: Path) -> None:
    outcome = run(Plan((Chosen(TestRef("demo", "plain_mode.sh"), ("--tests",)),)), trees, tmp_path / "scratch")
    assert [(r.tree, r.result) for r in outcome.runs] == [("base", ktap.Result.PASS), ("patched", ktap.Result.PASS)]
    assert outcome.findings == ()


def test_the_static_check_reads_the_makefile_as_make_does(trees: dict[str, Path], tmp_path: Path) -> None:
    """selftest-registered reads Makefiles without make (untrusted series): on the demo Makefile its
    reading agrees with make's, a test in a run list, a helper or data file in another list only."""
    makefile = (trees["patched"] / SELFTESTS / "demo/Makefile").read_text()
    listed = run_list(trees["patched"], "demo", Sandbox(tmp_path))
    for name in listed.tests:
        assert set(lists_naming(makefile, name)) & set(RUN), name
    for name, var in listed.others:
        assert lists_naming(makefile, name) == {var} and var in HELPERS, name
    assert lists_naming(makefile, "demo") == set()
    kvm = "TEST_GEN_PROGS_x86 += a\nTEST_GEN_PROGS_EXTENDED_x86 += h\nTEST_GEN_PROGS += $(TEST_GEN_PROGS_$(ARCH))\n"
    assert lists_naming(kvm, "a") == {"TEST_GEN_PROGS"} and lists_naming(kvm, "h") == set()
    assert lists_naming("TEST_PROGS := $(wildcard *.sh)\n", "t.sh") == {"TEST_PROGS"}
    assert lists_naming("TEST_GEN_PROGS := $(patsubst %.c,%,$(wildcard *.c))\n", "t") == {"TEST_GEN_PROGS"}
    assert lists_naming("TEST_PROGS := $(wildcard *.sh)\nTEST_FILES := $(wildcard *.json)\n", "t.py") == set()


def test_a_makefile_make_cannot_read_after_the_build(tmp_path: Path) -> None:
    """The series' Makefile builds but fails when listed: its tests are not run, and the patched tree's failure is an error."""
    base = _tree(tmp_path / "b", {"Makefile": ("TEST_PROGS := skipped.sh\ninclude ../lib.mk\n", 0o644)})
    broken = "TEST_PROGS := skipped.sh\nifeq ($(MAKECMDGOALS),reviewer-runlist)\n$(error cannot list)\nendif\ninclude ../lib.mk\n"
    patched = _tree(tmp_path / "p", {"Makefile": (broken, 0o644)})
    outcome = run(Plan((Chosen(TestRef("demo"), ("x",)),)), {"base": base, "patched": patched}, tmp_path / "scratch")
    (listing,) = [r for r in outcome.runs if r.env == "-"]
    assert (listing.test, listing.tree, listing.result) == ("run list demo", "patched", ktap.Result.ERROR)
    assert "cannot list" in listing.reason and "cannot list" in listing.log
    assert [(r.test, r.tree) for r in outcome.runs if r.env != "-"] == [("demo:skipped.sh", "base")]
    (finding,) = outcome.findings
    assert finding.level is Level.ERROR
    assert finding.message.startswith("the tests of demo were not run on the patched tree: make could not read")


def test_reading_the_run_list_times_out(tmp_path: Path) -> None:
    folder = tmp_path / SELFTESTS / "slow"
    folder.mkdir(parents=True)
    (folder / "Makefile").write_text("SLOW := $(shell sleep 30)\nTEST_PROGS := x.sh\n")
    listed = run_list(tmp_path, "slow", Sandbox(tmp_path / "scratch"), timeout=0.5)
    assert listed.tests == () and listed.error == f"make was killed after 0.5s reading {SELFTESTS}/slow/Makefile"


def _program(folder: Path, name: str, text: str, mode: int) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def test_how_a_test_is_started_follows_the_kselftest_runner(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    assert command(_program(folder, "x.sh", "#!/bin/sh\n", 0o755), folder) == ["./x.sh"]
    assert command(_program(folder, "y.sh", "#! /usr/bin/env bash -e\n", 0o644), folder) == ["/usr/bin/env", "bash", "-e", "./y.sh"]
    assert command(_program(folder, "z.txt", "no interpreter\n", 0o644), folder) is None
    _program(folder, "ksft_runner.sh", "#!/bin/sh\n", 0o755)  # a directory's own runner takes the non-executable ones
    assert command(folder / "z.txt", folder) == ["./ksft_runner.sh", "./z.txt"]


def test_a_test_runs_from_its_own_directory(tmp_path: Path) -> None:
    """A listed path below the directory (kvm's x86_64/...) runs as ./name from where it is, and a
    non-executable one through the directory's ksft_runner.sh (net/packetdrill's *.pkt), as runner.sh does."""
    folder = tmp_path / SELFTESTS / "d"
    _program(folder, "sub/where.sh", '#!/bin/sh\n[ "${PWD##*/}" = sub ] && [ -f where.sh ]\n', 0o755)
    _program(folder, "a.pkt", "ok\n", 0o644)
    _program(folder, "ksft_runner.sh", '#!/bin/sh\n[ "$(cat "$1")" = ok ]\n', 0o755)
    sandbox = Sandbox(tmp_path / "scratch")
    runs = [run_test(tmp_path, TestRef("d", n), tree="base", env="plain", sandbox=sandbox) for n in ("sub/where.sh", "a.pkt")]
    assert [(r.test, r.result, r.reason) for r in runs] == [("d:sub/where.sh", ktap.Result.PASS, ""), ("d:a.pkt", ktap.Result.PASS, "")]
