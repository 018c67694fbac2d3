"""The guest's results against `make run_tests` run in the same kernel (issue 17's oracle).

The review runs a whole selftest directory (vDSO) in the patched x86_64 kernel of a series that
makes the vDSO's getrandom() take the syscall. The oracle is the kernel tree's own runner: the
same commit's selftests built here, then `make TARGETS=vDSO run_tests` booted in the same cached
kernel image, its output read by the tree's kunit_parser.py. Every test the runner ran must have
the result the review gave it, and no test may be in only one of them.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reviewer.kernel import guest
from reviewer.kernel import guestkernel as kernel
from reviewer.kernel.jobs import Job
from reviewer.run.sandbox import Sandbox
from reviewer.selftests import where as vm
from tests.helpers import review
from tests.realkernel.kernel import BOOT_CACHE as CACHE
from tests.realkernel.kernel import edit_series, git
from tests.realkernel.test_ktap_oracle import kunit_leaves, kunit_parser
from tests.realkernel.test_vm_real import FLAGS, SRC, _qemu_running, _why

pytestmark = [pytest.mark.slow, pytest.mark.boot]
# kunit_parser's statuses, in the review's terms
STATUS = {"SUCCESS": "pass", "FAILURE": "fail", "SKIPPED": "skip", "TEST_CRASHED": "error"}


def test_a_directory_in_a_guest_has_the_results_make_run_tests_gives_there(linux: Path, linux_head: str, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    mbox, tip = edit_series(linux, linux_head, SRC, FLAGS, "\t/* Let the kernel fill every buffer. */\n\tgoto "
                                                           "fallback_syscall;\n\n" + FLAGS,
                            "vdso: getrandom: Always use the syscall", "A slower vDSO getrandom(), on purpose.", tmp_path / "fallback.mbox")
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", CACHE)
    result = review(mbox, "--tree", linux, "--tests", "vDSO", "--run-on", "vm", "--env", "plain", "--bench-runs", "0", "--no-checkpatch",
                    "--format", "json", tmp=tmp_path / "tmp", timeout=3600)
    doc = result.json()
    ours = {r["name"]: r["result"] for r in doc["selftests"] if r["tree"] == "patched" and r["env"] == "plain"
            and r["name"].startswith("vDSO:")}
    assert ours.get("vDSO:vdso_test_getrandom") == "fail", _why(result)

    wt = tmp_path / "wt"
    git(linux, "worktree", "add", "-q", "--detach", str(wt), tip)
    try:
        subprocess.run(["make", "-C", str(wt / "tools/testing/selftests"), "TARGETS=vDSO", "-j2"], capture_output=True, check=True,
                       timeout=900)
        made = vm.kernels(Path(git(linux, "rev-parse", "--absolute-git-dir").strip()), {"patched": tip},
                          kernel.fragment(wt, ["vDSO"]), Path(CACHE), 3600)
        image = made.images["patched"]
        assert image is not None and made.runs[0].log == "(cached image)", made.runs  # the kernel the review booted
        runner = Job(wt / "tools/testing/selftests", ("make", "--no-print-directory", "TARGETS=vDSO", "run_tests"), "plain", 900)
        booted = guest.run(image, [runner], [wt], Sandbox(tmp_path / "scratch"))
    finally:
        git(linux, "worktree", "remove", "--force", str(wt))
    (ran,) = booted.ran
    assert ran is not None, booted.console[-3000:]
    tree = kunit_parser(linux).parse_run_tests(ran.output.splitlines())
    theirs = {f"vDSO:{path[-1].removeprefix('selftests: vDSO: ')}": STATUS[status] for path, status in kunit_leaves(tree)}
    assert theirs == ours, ran.output[-3000:]
    assert _qemu_running() == []
    result.assert_nothing_left()
