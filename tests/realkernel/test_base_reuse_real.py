"""Issue 34 on Debian's real 6.12 tree: the base side once per base.

Two different series on the same base, reviewed one after the other with the same cache (as a
maintainer or a bot worker does): the first builds and boots both kernels; the second boots only its
own. Its base rows are the first review's, each saying from when, and its selftests were not built
again: the base's build was kept, and the second series' patched build started from it. Nor was a worktree of
the base made (selftests/trees.py): the git the reviews run is the real one behind a script that logs its
arguments, and the second review added one worktree, the patched one.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from reviewer.errors import ExitStatus
from tests.helpers import review
from tests.realkernel.kernel import BOOT_CACHE as CACHE
from tests.realkernel.kernel import edit_series
from tests.realkernel.test_vm_real import TEST, _why

pytestmark = [pytest.mark.slow, pytest.mark.boot]
SRC = "lib/vdso/getrandom.c"
FLAGS = "\t/* Handle unexpected flags by falling back to the kernel. */\n"


def _logged_git(where: Path) -> tuple[dict[str, str], Path]:
    """An environment whose `git` logs its arguments (one line a call) to the file returned, then runs git."""
    where.mkdir(parents=True)
    log, wrapper = where / "calls", where / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {shutil.which("git")} "$@"\n')
    wrapper.chmod(0o755)
    return {"PATH": f"{where}:{os.environ['PATH']}"}, log


def _worktrees_added(log: Path) -> int:
    return sum(" worktree add " in f" {line} " for line in log.read_text().splitlines())


def _rows(doc: dict[str, Any], tree: str) -> dict[str, dict[str, Any]]:
    return {r["env"]: r for r in doc["selftests"] if r["tree"] == tree and r["name"] == TEST}


def test_a_second_series_on_the_same_base_reuses_the_base_side(linux: Path, linux_head: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", CACHE)
    first, _ = edit_series(linux, linux_head, SRC, FLAGS, "\t/* Let the kernel fill every buffer. */\n\tgoto fallback_syscall;\n\n" + FLAGS,
                           "vdso: getrandom: Always use the syscall", "A slower vDSO getrandom(), on purpose.", tmp_path / "first.mbox")
    second, _ = edit_series(linux, linux_head, SRC, FLAGS, "\t/* Flags the vDSO does not know go to the kernel. */\n",
                            "vdso: getrandom: Reword a comment", "Words only, and a kernel to build.", tmp_path / "second.mbox")
    args = ("--tree", linux, "--tests", TEST, "--run-on", "vm", "--bench-runs", "0", "--no-checkpatch", "--format", "json")
    logged, calls = _logged_git(tmp_path / "bin")
    one = review(first, *args, tmp=tmp_path / "tmp1", timeout=3600, env=logged)
    assert one.rc == ExitStatus.SELFTESTS, _why(one)
    store = Path(os.environ["XDG_CACHE_HOME"]) / "reviewer" / "selftests"
    assert len([p for p in store.iterdir() if (p / ".complete").is_file()]) == 2  # the base's build and the first series'
    base_one = _rows(one.json(), "base")
    assert base_one["plain"]["result"] == "pass" and "kept from" not in base_one["plain"]["where"], base_one
    assert _worktrees_added(calls) == 2  # the patched tree's and the base's
    calls.unlink()

    two = review(second, *args, tmp=tmp_path / "tmp2", timeout=3600, env=logged)
    assert two.rc == ExitStatus.OK, _why(two)
    doc = two.json()
    base_two, patched_two = _rows(doc, "base"), _rows(doc, "patched")
    # The base's rows are the first review's, saying so; the patched kernel was booted for this series.
    row = base_two["plain"]
    assert row["where"].startswith(base_one["plain"]["where"] + "; kept from "), row
    assert {k: row[k] for k in ("result", "reason", "log")} == {k: base_one["plain"][k] for k in ("result", "reason", "log")}
    assert patched_two["plain"]["result"] == "pass" and "kept from" not in patched_two["plain"]["where"], patched_two
    # The base's guest was not booted: only the patched one's console was kept.
    logs = sorted(p.name for p in Path(os.environ["XDG_STATE_HOME"]).rglob("guest-*.log"))
    assert logs.count("guest-base.log") == 1 and logs.count("guest-patched.log") == 2, logs
    # Three kept builds now: the second series' patched build was made on top of the base's (make's note in its log).
    assert len([p for p in store.iterdir() if (p / ".complete").is_file()]) == 3
    # Nothing of the base was read but kept results: no worktree of it was made.
    assert _worktrees_added(calls) == 1, calls.read_text()
    two.assert_nothing_left()
