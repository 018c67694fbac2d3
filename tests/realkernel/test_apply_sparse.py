"""The apply check's narrow worktree on the full 6.12 tree (~87,000 files): seconds, not a checkout.

The series changes kernel/time/time.c (a KUnit suite, time_test.c, sits beside it), adds a
file in a new directory, renames one file and deletes another. It is made with git plumbing
(nothing checked out in the cached repository), so the patched tree to expect is known.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from reviewer import boot
from reviewer.apply import worktree
from reviewer.model import Series
from reviewer.series import target as targets
from reviewer.series.patchparse import parse_diff
from tests.realkernel.kernel import commit, format_patch, git, show

TIME_C = "kernel/time/time.c"
MARK = "/* sparse apply test: what follows is unchanged. */\n"


def _series(linux: Path, base: str, where: Path) -> tuple[Series, str]:
    text = show(linux, base, TIME_C)
    at = text.index("\nstatic ", len(text) // 2) + 1
    tip = commit(linux, base, {TIME_C: text[:at] + MARK + text[at:]}, "time: comment\n\nSigned-off-by: A <a@example.org>\n")
    tip = commit(linux, tip, {"drivers/misc/reviewer_new/new.c": "// SPDX-License-Identifier: GPL-2.0\n"}, "misc: new\n")
    tip = commit(linux, tip, {"mm/dmapool_test.c": None, "mm/dmapool_kunit.c": show(linux, base, "mm/dmapool_test.c")}, "mm: rename\n")
    tip = commit(linux, tip, {"lib/test_hexdump.c": None}, "lib: delete\n")
    mbox = format_patch(linux, base, tip, where, "--pretty=mboxrd")
    series = targets.load(targets.classify(str(mbox), where.parent), where.parent)
    return replace(series, patches=tuple(replace(p, files=parse_diff(p.diff, p.subject)) for p in series.patches)), tip


def _touched(series: Series) -> list[str]:
    return sorted({p for patch in series.patches for f in patch.files for p in (f.path, f.old_path) if p})


def test_narrow_apply_on_the_full_tree(linux: Path, linux_head: str, tmp_path: Path) -> None:
    series, tip = _series(linux, linux_head, tmp_path / "series.mbox")
    touched = _touched(series)
    assert "mm/dmapool_kunit.c" in touched and "lib/test_hexdump.c" in touched
    before = [git(linux, "config", "--local", "--list"), git(linux, "worktree", "list")]
    start = time.perf_counter()
    with worktree.isolated(linux, linux_head, touched, build=False) as wt:
        files = git(wt, "ls-files", "-t").splitlines()
        checked_out = [f for f in files if f.startswith("H ")]
        assert len(files) > 80_000 and len(checked_out) < 200, len(checked_out)  # the index is whole, the checkout is not
        results = worktree.apply_series(wt, series)
        assert [r.status for r in results] == ["applied"] * 4
        assert git(wt, "rev-parse", "HEAD^{tree}") == git(linux, "rev-parse", f"{tip}^{{tree}}")
        suites = {t.name for t, _ in boot.relevant(touched, wt)}
    print(f"narrow worktree + apply of 4 patches: {time.perf_counter() - start:.2f} s, {len(checked_out)} files checked out")
    assert "kunit:time_test_cases" in suites
    assert [git(linux, "config", "--local", "--list"), git(linux, "worktree", "list")] == before


def test_three_way_and_failure_on_the_full_tree(linux: Path, linux_head: str, tmp_path: Path) -> None:
    series, _ = _series(linux, linux_head, tmp_path / "series.mbox")
    text = show(linux, linux_head, TIME_C)
    at = text.index("\nstatic ", len(text) // 2) + 1
    lines_before = text[:at].splitlines(keepends=True)
    # The hunk's first context line changed: git apply refuses, a 3-way merge is clean (two lines apart).
    edge = "".join([*lines_before[:-3], lines_before[-3].rstrip("\n") + "/* moved on in the base */\n", *lines_before[-2:]]) + text[at:]
    moved = commit(linux, linux_head, {TIME_C: edge}, "time: the base moved on\n")
    with worktree.isolated(linux, moved, _touched(series), build=False) as wt:
        results = worktree.apply_series(wt, series)
        assert [r.status for r in results] == ["applied (3-way merge)", "applied", "applied", "applied"]
        patched = git(wt, "show", f"HEAD:{TIME_C}")
        assert MARK in patched and "/* moved on in the base */" in patched
    clash = commit(linux, linux_head, {TIME_C: text[:at] + "/* the base put its own comment here */\n" + text[at:]}, "clash\n")
    with worktree.isolated(linux, clash, _touched(series), build=False) as wt:
        results = worktree.apply_series(wt, series)
    hunk = series.patches[0].files[0].hunks[0].header
    assert [r.status for r in results] == ["failed"]
    assert results[0].detail.startswith(f"{TIME_C}: hunk {hunk} does not apply; "), results[0].detail
