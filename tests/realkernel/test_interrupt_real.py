"""Issue 13 on Debian's 6.12 tree: SIGTERM, SIGHUP, one Ctrl-C and two Ctrl-Cs, while the series is
applied (the patched worktree being checked out) and while the selftests build (make), each end
with 143, 129 or 130 and leave no worktree, no registration in the tree, no process and nothing in
$TMPDIR after the next run at most. The times are printed (bench/interrupt.py measures them
against `git worktree remove --force`); they are not asserted.
"""
from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from bench._procs import making, our_worktrees, processes_in, registrations_of
from reviewer.errors import ExitStatus
from tests.cli.interrupting import reaper, start, wait_until  # noqa: F401 (reaper: an autouse fixture)
from tests.realkernel.kernel import commit, format_patch, git, show

TEST = "tools/testing/selftests/vDSO/vdso_test_getrandom.c"
MODES = {"SIGTERM": (signal.SIGTERM, 143), "SIGHUP": (signal.SIGHUP, 129), "ctrl-c": (signal.SIGINT, 130),
         "two ctrl-c": (signal.SIGINT, 130)}


@pytest.fixture(scope="module")
def series(linux: Path, linux_head: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = show(linux, linux_head, TEST)
    tip = commit(linux, linux_head, {TEST: "/* Interrupted on purpose. */\n" + src},
                 "selftests/vDSO: Say so\n\nSigned-off-by: Kernel Fixture <kernel-fixture@example.org>\n")
    return format_patch(linux, linux_head, tip, tmp_path_factory.mktemp("series") / "s.mbox")


def _state(repo: Path) -> list[str]:
    return [git(repo, *a) for a in (("status", "--porcelain"), ("branch", "-a"), ("stash", "list"))]


def _checking_out(linux: Path, tmp: Path) -> bool:
    """The apply stage's worktree is there (registered in the review's shadow repository) and a git command runs in it."""
    return bool(our_worktrees(linux, tmp)) and any(Path(f"/proc/{p}/comm").read_text().strip() == "git"
                                                      for p in processes_in(tmp) if Path(f"/proc/{p}").exists())


@pytest.mark.parametrize("moment", ["apply", "build"])
@pytest.mark.parametrize("mode", list(MODES))
def test_every_end_is_clean_on_the_real_tree(mode: str, moment: str, linux: Path, series: Path, tmp_path: Path) -> None:
    sig, status = MODES[mode]
    before = _state(linux)
    tmp = tmp_path / "tmp"
    run = start(series, "--tree", linux, "--tests", "vDSO", "--no-checkpatch", "--format", "json", tmp=tmp)
    if moment == "apply":
        wait_until(run, lambda: _checking_out(linux, tmp), timeout=300, what="the patched worktree's checkout")
    else:
        wait_until(run, lambda: making(tmp), timeout=600, what="the selftests' build")
    run.send(sig)
    said = run.line(f"review: interrupted{'' if sig == signal.SIGINT else f' ({signal.Signals(sig).name})'}, cleaning up") - run.sent[0]
    if mode == "two ctrl-c":
        time.sleep(0.05)
        run.send(sig)
    rc, took = run.finish(timeout=300)
    print(f"\n{mode} during {moment}: said after {said:.3f} s, exited after {took:.2f} s")
    assert rc == status, run.stderr
    assert processes_in(tmp) == []  # git checkout, make and the sandboxed programs were stopped
    if mode != "two ctrl-c":
        assert our_worktrees(linux, tmp) == [] and registrations_of(linux, run.proc.pid) == []  # at once, not after the next run
    after = start(series, "--tree", linux, "--no-tests", "--no-checkpatch", "--format", "json", tmp=tmp)
    assert after.finish(timeout=300)[0] == ExitStatus.OK, after.stderr
    assert our_worktrees(linux, tmp) == [] and registrations_of(linux, run.proc.pid) == []
    assert _state(linux) == before
    assert list(tmp.iterdir()) == []
