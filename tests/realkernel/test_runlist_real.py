"""What `make run_tests` runs, on Debian's real 6.12 tree, against the tree's own kselftest rules:
the run list against lib.mk's emit_tests, the selftest-registered check's reading of every
selftest Makefile against make's, and the selftest stage's runs against `make run_tests`."""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewer.apply import worktree
from reviewer.checks.selftest_registered import HELPERS, RUN, lists_naming
from reviewer.errors import ExitStatus
from reviewer.run.sandbox import Sandbox
from reviewer.selftests.choose import SELFTESTS
from reviewer.selftests.run import run_list
from tests.helpers import review
from tests.realkernel.kernel import commit, format_patch, show

AUTHOR = "Kernel Fixture <kernel-fixture@example.org>"
# Arch filters (vDSO, x86, kvm's per-arch lists and paths below the directory), TEST_PROGS scripts
# with TEST_GEN_PROGS_EXTENDED helpers (splice, gpio), TEST_FILES (rseq, exec), a ksft_runner.sh (packetdrill).
DIRS = ("vDSO", "splice", "gpio", "rseq", "kvm", "exec", "timens", "x86", "mm", "futex", "net/forwarding", "net/packetdrill")
# Two directories whose tests run in seconds: splice (two scripts; its two programs are helpers)
# and exec (programs, a Python TEST_PROGS script, TEST_GEN_FILES that execveat uses).
RUN_DIRS = ("splice", "exec")
_RESULT = re.compile(r"^(?P<not>not )?ok \d+ selftests: (?P<dir>\S+): (?P<name>\S+)(?: # (?P<directive>SKIP|TIMEOUT))?", re.MULTILINE)


@pytest.fixture(scope="module")
def tree(linux: Path, linux_head: str) -> Iterator[Path]:
    """A worktree of 6.12 with the selftests checked out, as the selftest stage gets one."""
    with worktree.isolated(linux, linux_head, [f"{SELFTESTS}/{d}/Makefile" for d in DIRS]) as wt:
        yield wt


def _emit_tests(wt: Path, d: str, sandbox: Sandbox) -> list[str]:
    """The tree's own list: lib.mk's emit_tests, run as tools/testing/selftests/Makefile's install runs it."""
    folder = wt / SELFTESTS / d
    done = sandbox.run(["make", "-s", "--no-print-directory", f"OUTPUT={folder.resolve()}", f"COLLECTION={d}", "-C", folder, "emit_tests"],
                       cwd=wt, timeout=120)
    assert done.returncode == 0, done.output
    return [line.removeprefix(f"{d}:") for line in done.output.splitlines() if line.startswith(f"{d}:")]


def test_the_run_list_is_what_emit_tests_lists(tree: Path, tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path)
    for d in DIRS:
        listed = run_list(tree, d, sandbox)
        assert listed.error == "", (d, listed.error)
        expected = _emit_tests(tree, d, sandbox)
        assert expected, d
        assert [os.path.basename(t) for t in listed.tests] == list(dict.fromkeys(expected)), d
    splice = run_list(tree, "splice", sandbox)
    assert splice.others == (("default_file_splice_read", "TEST_GEN_PROGS_EXTENDED"), ("splice_read", "TEST_GEN_PROGS_EXTENDED"))
    assert all(t.startswith("x86_64/") for t in run_list(tree, "kvm", sandbox).tests if "/" in t)


def test_the_static_check_reads_every_makefile_as_make_does(tree: Path, tmp_path: Path) -> None:
    """For every selftest directory that includes lib.mk: each test make runs whose source (a .c or
    the script) is in the directory is registered for the check, and each helper make does not
    run is not. The check cannot evaluate conditionals, so it is lenient on the other arches' lists."""
    root = tree / SELFTESTS
    sandbox = Sandbox(tmp_path)
    dirs = sorted(str(m.parent.relative_to(root)) for m in root.glob("**/Makefile") if "lib.mk" in m.read_text(errors="replace"))
    checked = helpers = 0
    for d in dirs:
        listed = run_list(tree, d, sandbox)
        if listed.error:  # alsa needs alsa.pc
            continue
        makefile = (root / d / "Makefile").read_text(errors="replace")
        for name in listed.tests:
            if "/" not in name and ((root / d / f"{name}.c").is_file() or (root / d / name).is_file()):
                checked += 1
                assert set(lists_naming(makefile, name)) & set(RUN), (d, name)
        for name, var in listed.others:
            if var == "TEST_GEN_PROGS_EXTENDED" and name not in listed.tests and (root / d / f"{name}.c").is_file():
                helpers += 1
                found = lists_naming(makefile, name)
                assert found and found <= set(HELPERS), (d, name, found)
    print(f"{len(dirs)} directories, {checked} tests and {helpers} helpers read alike")
    assert len(dirs) > 150 and checked > 800 and helpers > 30


@pytest.fixture(scope="module")
def comment_series(linux: Path, linux_head: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    edits = {}
    for path in (f"{SELFTESTS}/splice/splice_read.c", f"{SELFTESTS}/exec/null-argv.c"):
        src = show(linux, linux_head, path)
        at = src.index("int main(")
        edits[path] = src[:at] + "/* The test starts here. */\n" + src[at:]
    msg = f"selftests: Say where the splice and exec tests start\n\nA comment for readers.\n\nSigned-off-by: {AUTHOR}\n"
    tip = commit(linux, linux_head, edits, msg, author=AUTHOR)
    return format_patch(linux, linux_head, tip, tmp_path_factory.mktemp("series") / "comment.mbox"), tip


def _kselftest(linux: Path, tip: str, scratch: Path) -> dict[tuple[str, str], str]:
    """(dir, test) -> result of the tree's own `make run_tests` on the patched tree, in the same sandbox."""
    with worktree.isolated(linux, tip, [f"{SELFTESTS}/{d}/Makefile" for d in RUN_DIRS]) as wt:
        done = Sandbox(scratch).run(["make", "-C", SELFTESTS, f"TARGETS={' '.join(RUN_DIRS)}", "run_tests"], cwd=wt, timeout=600)
    results = {}
    for m in _RESULT.finditer(done.output):
        results[(m["dir"], m["name"])] = "fail" if m["not"] else {"SKIP": "skip", "TIMEOUT": "timeout"}.get(m["directive"] or "", "pass")
    return results


def test_the_stage_runs_what_make_run_tests_runs(linux: Path, comment_series: tuple[Path, str], tmp_path: Path) -> None:
    series, tip = comment_series
    result = review(series, "--tree", linux, "--run-tests", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    assert sorted(c["test"] for c in doc["selftests_chosen"]) == sorted(RUN_DIRS)
    ours = {tuple(r["name"].split(":", 1)): r["result"] for r in doc["selftests"] if r["tree"] == "patched"}
    theirs = _kselftest(linux, tip, tmp_path / "scratch")
    assert ("splice", "default_file_splice_read.sh") in theirs and ("exec", "binfmt_script.py") in theirs
    assert ours == theirs, json.dumps(doc["selftests"])[:3000]
    assert ("splice", "splice_read") not in ours  # a TEST_GEN_PROGS_EXTENDED helper, not a test
    result.assert_nothing_left()
