"""The selftest stage end to end: only on request, regressions exit 6, hangs time out, the tree is untouched."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    mbox = _series_from_commit(kernel_repo, tmp_path / "s.mbox", {f"{VDSO}/vdso_test_gettimeofday.c": broken},
                               "selftests/vDSO: Break the gettimeofday test")
    before = _state(kernel_repo)
    logs = tmp_path / "logs"
    result = review(mbox, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday", "--log-dir", logs, "--format", "json",
                    tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.SELFTESTS, result.stderr
    assert "selftest regression" in result.stderr.splitlines()[0]
    (run_dir,) = logs.iterdir()  # one directory for the run, named <UTC time>-<pid>
    assert f"the output of each run is in {run_dir / 'selftests'}" in result.stderr
    kept = {p.name: p.read_text() for p in (run_dir / "selftests").iterdir()}
    # the base run printed its KTAP; the broken patched one printed nothing, so it has no file
    assert list(kept) == ["base-plain-vDSO_vdso_test_gettimeofday.log"]
    assert "ok 1 gettimeofday syscall" in kept["base-plain-vDSO_vdso_test_gettimeofday.log"]
    doc = result.json()
    runs = {(r["name"], r["tree"]): (r["result"], r["reason"]) for r in doc["selftests"]}
    assert runs[("vDSO:vdso_test_gettimeofday", "base")][0] == "pass"
    assert runs[("vDSO:vdso_test_gettimeofday", "patched")] == ("fail", "exit=1")
    (finding,) = [f for f in doc["findings"] if f["rule"] == "selftests"]
    assert finding["level"] == "error" and "fails on the patched tree (plain), pass on base" in finding["message"]
    assert _state(kernel_repo) == before
    result.assert_nothing_left()


def test_an_unwritable_log_directory_is_a_configuration_error(kernel_repo: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the log directory should go\n")
    before = _state(kernel_repo)
    result = review(DEMO, "--tree", kernel_repo, "--run-tests", "--log-dir", blocked / "logs", "--format", "json", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.CONFIG, f"log directory {blocked / 'logs'}: cannot create it")
    assert "--log-dir" in result.stderr.splitlines()[1]
    assert result.stdout == ""  # a configuration error: no report, as for any other
    assert _state(kernel_repo) == before
    result.assert_nothing_left()


def test_a_hanging_selftest_times_out(kernel_repo: Path, tmp_path: Path) -> None:
    source = (kernel_repo / VDSO / "vdso_test_gettimeofday.c").read_text()
    hang = (source.replace("int main(", "#include <unistd.h>\nstatic int main_orig(", 1)
            + "\nint main(void) { (void)main_orig; for (;;) pause(); }\n")
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
    result = review(mbox, "--tree", kernel_repo, "--run-tests", "--test-env", "VDSO_BENCH_CALLS=20000", "--format", "json",
                    tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.SELFTESTS, result.stderr
    doc = result.json()
    builds = [r for r in doc["selftests"] if r["name"].startswith("build ")]
    assert [(b["tree"], b["result"]) for b in builds] == [("patched", "error")]
    assert any(f["message"].startswith("the selftests in vDSO do not build on the patched tree") for f in doc["findings"])
    assert doc["benchmarks"] == []  # nothing to compare against


def test_unknown_environment_is_a_usage_error(tmp_path: Path) -> None:
    result = review(DEMO, "--env", "plain,chroot", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.USAGE, "unknown environment chroot")


def _procs_under(root: Path) -> list[int]:
    """Processes whose working directory is below ROOT (the test's private TMPDIR)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(Path(os.readlink(proc / "cwd"))).startswith(str(root)):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def test_ctrl_c_during_a_selftest(kernel_repo: Path, tmp_path: Path) -> None:
    source = (kernel_repo / VDSO / "vdso_test_gettimeofday.c").read_text()
    hang = (source.replace("int main(", "#include <unistd.h>\nstatic int main_orig(", 1)
            + "\nint main(void) { (void)main_orig; for (;;) pause(); }\n")
    mbox = _series_from_commit(kernel_repo, tmp_path / "s.mbox", {f"{VDSO}/vdso_test_gettimeofday.c": hang}, "selftests/vDSO: Hang")
    before = _state(kernel_repo)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "reviewer", str(mbox), "--tree", str(kernel_repo), "--tests",
                             "vDSO:vdso_test_gettimeofday"],
                            env={**os.environ, "TMPDIR": str(tmp)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not any(Path(f"/proc/{pid}/exe").exists() and "vdso_test_gettimeofday" in os.readlink(f"/proc/{pid}/exe")
                  for pid in _procs_under(tmp) if _readable(pid)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == ExitStatus.INTERRUPTED, err
    assert "review: interrupted" in err.decode()
    assert _procs_under(tmp) == []  # the test program's whole process group is gone
    assert _state(kernel_repo) == before
    assert list(tmp.iterdir()) == []


def _readable(pid: int) -> bool:
    try:
        os.readlink(f"/proc/{pid}/exe")
        return True
    except OSError:
        return False


def test_a_selftest_cannot_reach_the_network(kernel_repo: Path, tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.5)
    port = server.getsockname()[1]
    probe = f"""// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void)
{{
	struct sockaddr_in sa = {{ .sin_family = AF_INET, .sin_port = htons({port}) }};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {{
		printf("# connect: %s\\n", strerror(errno));
		return 1;
	}}
	printf("# connected\\n");
	return 0;
}}
"""
    mbox = _series_from_commit(kernel_repo, tmp_path / "s.mbox", {f"{VDSO}/vdso_test_gettimeofday.c": probe}, "selftests/vDSO: Phone home")
    result = review(mbox, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.SELFTESTS, result.stderr
    patched = next(r for r in result.json()["selftests"] if r["tree"] == "patched")
    assert patched["result"] == "fail" and "connect: Network is unreachable" in patched["log"]
    with pytest.raises(TimeoutError):
        server.accept()  # nothing ever connected
    server.close()


def test_reused_worktrees_are_reset_between_runs(kernel_repo: Path, tmp_path: Path) -> None:
    git(kernel_repo, "config", "reviewer.reuseWorktrees", "true")
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "reviewer" / "worktrees"
    for attempt in range(2):
        result = review(DEMO, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_getrandom", "--test-env", "VDSO_BENCH_CALLS=20000",
                        "--format", "json", tmp=tmp_path / f"tmp{attempt}")
        assert result.rc == ExitStatus.OK, result.stderr
        assert [p["status"] for p in result.json()["apply"]["patches"]] == ["applied"] * 4
    slots = sorted(p for p in cache.glob("*/*") if p.is_dir() and p.name != "shadow.git")
    assert len(slots) == 2  # patched and base, kept for the next run
    # registered in the shadow repository kept beside them, not in the user's repository
    listed = git(slots[0].parent / "shadow.git", "worktree", "list", "--porcelain")
    assert git(kernel_repo, "worktree", "list").count("\n") == 1
    base = git(kernel_repo, "rev-parse", "HEAD").strip()
    for slot in slots:
        assert f"worktree {slot}" in listed
        assert git(slot, "status", "--porcelain", "--ignored") == ""  # no build products, no half-applied series
        assert git(slot, "rev-parse", "HEAD").strip() == base
    git(kernel_repo, "config", "reviewer.reuseWorktrees", "maybe")
    result = review(DEMO, "--tree", kernel_repo, tmp=tmp_path / "tmp3")
    result.assert_one_line_error(ExitStatus.CONFIG, "reviewer.reuseWorktrees: expected a boolean")


def test_in_kernel_tests_are_listed_not_booted_without_asking(kernel_repo: Path, tmp_path: Path) -> None:
    result = review(SERIES / "dmapool-v1-v2.mbox", "--tree", kernel_repo, "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc in (ExitStatus.OK, ExitStatus.FINDINGS), result.stderr
    doc = result.json()
    stage = next(st for st in doc["stages"] if st["name"] == "boot")
    assert stage["status"] == "skipped"
    assert "would boot dmapool_test: tinyconfig + CONFIG_DMAPOOL_TEST=y, booted under QEMU on base and patched" in stage["detail"]
    (chosen,) = [c for c in doc["selftests_chosen"] if c["test"] == "boot:dmapool_test"]
    assert any("mm/dmapool.c" in why for why in chosen["why"])
    assert doc["boot"] is None and not [r for r in doc["selftests"] if r["name"].startswith("boot:")]


def test_unknown_boot_environment_is_a_usage_error(tmp_path: Path) -> None:
    result = review(DEMO, "--boot-env", "plain,kasan", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.USAGE, "unknown environment kasan")
