"""Issue 4 on Debian's real 6.12 tree: apply a series made from real code, build and run
tools/testing/selftests/vDSO on base and patched, and bench-single in plain and timens."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from tests.helpers import review
from tests.realkernel.kernel import commit, format_patch, git, show

TEST = "tools/testing/selftests/vDSO/vdso_test_getrandom.c"
AUTHOR = "Kernel Fixture <kernel-fixture@example.org>"
VDSO_TESTS = {"vdso_test_gettimeofday", "vdso_test_getcpu", "vdso_test_abi", "vdso_test_clock_getres",
              "vdso_standalone_test_x86", "vdso_test_correctness", "vdso_test_getrandom", "vdso_test_chacha"}


def _state(repo: Path) -> list[str]:
    # The shared cached repository may carry other sessions' worktrees: ours live in the
    # test's TMPDIR, which assert_nothing_left() checks is empty again.
    return [git(repo, *a) for a in (("status", "--porcelain"), ("branch", "-a"), ("stash", "list"))]


@pytest.fixture(scope="module")
def comment_series(linux: Path, linux_head: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = show(linux, linux_head, TEST)
    at = src.index("static void bench_single(void)")
    new = src[:at] + "/* Time one thread calling each getrandom() flavour in turn. */\n" + src[at:]
    msg = f"selftests/vDSO: Say what bench_single() measures\n\nA comment for readers of the benchmark.\n\nSigned-off-by: {AUTHOR}\n"
    tip = commit(linux, linux_head, {TEST: new}, msg, author=AUTHOR)
    return format_patch(linux, linux_head, tip, tmp_path_factory.mktemp("series") / "comment.mbox")


def test_vdso_selftests_and_bench_single_base_vs_patched(linux: Path, comment_series: Path, tmp_path: Path) -> None:
    before = _state(linux)
    result = review(comment_series, "--tree", linux, "--tests", "vDSO", "--env", "plain,timens",
                    "--bench-runs", "1", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    assert doc["apply"]["base_source"] == "trailer" and doc["apply"]["patches"][0]["status"] == "applied"
    runs = {(r["name"].split(":", 1)[1], r["tree"], r["env"]): r["result"] for r in doc["selftests"]}
    for name in VDSO_TESTS:
        for tree in ("base", "patched"):
            for env in ("plain", "timens"):
                assert runs[(name, tree, env)] == "pass", (name, tree, env, json.dumps(doc["selftests"])[:2000])
    single = {(b["env"], b["metric"]): b for b in doc["benchmarks"] if b["name"] == "vdso_test_getrandom bench-single"}
    assert set(single) == {(e, m) for e in ("plain", "timens") for m in ("vdso", "libc", "syscall")}
    for b in single.values():
        assert b["base"] > 0 and b["patched"] > 0 and b["ratio"] == pytest.approx(b["patched"] / b["base"], rel=1e-2)
    # the vDSO really is faster than the syscall here (the host kernel has vDSO getrandom())
    assert single[("plain", "vdso")]["patched"] < single[("plain", "syscall")]["patched"]
    assert not [b for b in doc["benchmarks"] if "bench-multi" in b["name"]]  # opt-in only
    # Both columns ran on this machine's kernel, and every row says so; a tools/-only series gets no caveat.
    here = f"host {os.uname().release} {os.uname().machine}"
    assert {r["where"] for r in doc["selftests"]} == {here} and {b["where"] for b in doc["benchmarks"]} == {here}
    assert not [f for f in doc["findings"] if f["rule"] == "selftests/host-kernel"]
    assert _state(linux) == before
    result.assert_nothing_left()


def test_a_real_series_that_does_not_apply(linux: Path, linux_head: str, tmp_path: Path) -> None:
    path = "lib/vdso/Kconfig"
    src = show(linux, linux_head, path)
    first = commit(linux, linux_head, {path: src.replace("config VDSO_GETRANDOM", "config VDSO_GETRANDOM_RENAMED")},
                   f"lib/vdso: Rename VDSO_GETRANDOM\n\nSigned-off-by: {AUTHOR}\n", author=AUTHOR)
    series = format_patch(linux, linux_head, first, tmp_path / "rename.mbox")
    moved = commit(linux, linux_head, {path: src.replace("config VDSO_GETRANDOM", "config VDSO_GETRANDOM_ELSEWHERE")},
                   f"lib/vdso: Move VDSO_GETRANDOM\n\nSigned-off-by: {AUTHOR}\n", author=AUTHOR)
    before = _state(linux)
    result = review(series, "--tree", linux, "--base", moved, "--no-tests", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.APPLY, result.stderr
    assert "patch 1/1 does not apply" in result.stderr.splitlines()[0]
    detail = result.json()["apply"]["patches"][0]["detail"]
    assert detail.startswith("lib/vdso/Kconfig: hunk @@ -") and "does not apply" in detail
    assert _state(linux) == before
    result.assert_nothing_left()
