"""The selftest stage end to end: only on request, regressions exit 6, hangs time out, the tree is untouched."""
from __future__ import annotations

from pathlib import Path

from reviewer.errors import ExitStatus
from tests.conftest import SERIES, git
from tests.helpers import review

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
VDSO = "tools/testing/selftests/vDSO"


def _series_from_commit(repo: Path, out: Path, edit: dict[str, str], subject: str) -> Path:
    """Commit EDIT (path -> new text) on a branch, export it, and leave the user's branch as it was."""
    git(repo, "checkout", "-q", "-b", "tmp-series")
    for path, text in edit.items():
        (repo / path).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-s", "-m", subject)
    out.write_text(git(repo, "format-patch", "--stdout", "--base=HEAD~1", "HEAD~1"))
    git(repo, "checkout", "-q", "master")
    git(repo, "branch", "-q", "-D", "tmp-series")
    return out


def _state(repo: Path) -> list[str]:
    return [git(repo, *a) for a in (("status", "--porcelain"), ("branch", "-a"), ("stash", "list"), ("worktree", "list"))]


def test_tests_are_listed_but_not_run_without_asking(kernel_repo: Path, tmp_path: Path) -> None:
    result = review(DEMO, "--tree", kernel_repo, "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    stage = next(st for st in doc["stages"] if st["name"] == "selftests")
    assert stage["status"] == "skipped" and "would run vDSO" in stage["detail"] and "--run-tests" in stage["detail"]
    assert doc["selftests"] == [] and [c["test"] for c in doc["selftests_chosen"]] == ["vDSO"]
    assert not list(kernel_repo.joinpath(VDSO).glob("vdso_test_getrandom"))  # nothing was built in the user's tree


def test_a_broken_selftest_is_a_regression_exit_6(kernel_repo: Path, tmp_path: Path) -> None:
    source = (kernel_repo / VDSO / "vdso_test_gettimeofday.c").read_text()
    broken = source.replace("int main(", "static int main_orig(", 1) + "\nint main(void) { (void)main_orig; return 1; }\n"
    mbox = _series_from_commit(kernel_repo, tmp_path / "s.mbox", {f"{VDSO}/vdso_test_gettimeofday.c": broken}, "selftests/vDSO: Break the gettimeofday test")
    before = _state(kernel_repo)
    result = review(mbox, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.SELFTESTS, result.stderr
    assert "selftest regression" in result.stderr.splitlines()[0]
    doc = result.json()
    runs = {(r["name"], r["tree"]): (r["result"], r["reason"]) for r in doc["selftests"]}
    assert runs[("vDSO:vdso_test_gettimeofday", "base")][0] == "pass"
    assert runs[("vDSO:vdso_test_gettimeofday", "patched")] == ("fail", "exit=1")
    (finding,) = [f for f in doc["findings"] if f["rule"] == "selftests"]
    assert finding["level"] == "error" and "fails on the patched tree (plain), pass on base" in finding["message"]
    assert _state(kernel_repo) == before
    result.assert_nothing_left()


def test_a_hanging_selftest_times_out(kernel_repo: Path, tmp_path: Path) -> None:
    source = (kernel_repo / VDSO / "vdso_test_gettimeofday.c").read_text()
    hang = source.replace("int main(", "#include <unistd.h>\nstatic int main_orig(", 1) + "\nint main(void) { (void)main_orig; for (;;) pause(); }\n"
    edit = {f"{VDSO}/vdso_test_gettimeofday.c": hang, f"{VDSO}/settings": "timeout=2\n"}
    mbox = _series_from_commit(kernel_repo, tmp_path / "s.mbox", edit, "selftests/vDSO: Hang the gettimeofday test")
    result = review(mbox, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.SELFTESTS, result.stderr
    patched = next(r for r in result.json()["selftests"] if r["tree"] == "patched")
    assert patched["result"] == "timeout" and patched["reason"] == "killed after 2s" and patched["seconds"] < 10
    result.assert_nothing_left()


def test_a_series_that_breaks_the_build(kernel_repo: Path, tmp_path: Path) -> None:
    edit = {f"{VDSO}/vdso_test_chacha.c": "this is not C\n"}
    mbox = _series_from_commit(kernel_repo, tmp_path / "s.mbox", edit, "selftests/vDSO: Break the build")
    result = review(mbox, "--tree", kernel_repo, "--run-tests", "--test-env", "VDSO_BENCH_CALLS=20000", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.SELFTESTS, result.stderr
    doc = result.json()
    builds = [r for r in doc["selftests"] if r["name"].startswith("build ")]
    assert [(b["tree"], b["result"]) for b in builds] == [("patched", "error")]
    assert any(f["message"].startswith("the selftests in vDSO do not build on the patched tree") for f in doc["findings"])
    assert doc["benchmarks"] == []  # nothing to compare against


def test_unknown_environment_is_a_usage_error(tmp_path: Path) -> None:
    result = review(DEMO, "--env", "plain,chroot", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.USAGE, "unknown environment chroot")
