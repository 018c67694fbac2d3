"""--run-on: a bad value is a usage error; a VM that cannot be booted is said, and nothing runs on the host instead."""
from __future__ import annotations

from pathlib import Path

from reviewer.errors import ExitStatus
from tests.conftest import SERIES, git
from tests.helpers import review

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"  # arch/loongarch and the vDSO selftests


def test_an_unknown_place_is_a_usage_error(kernel_repo: Path, tmp_path: Path) -> None:
    result = review(DEMO, "--tree", kernel_repo, "--run-tests", "--run-on", "cloud", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.USAGE
    assert result.stderr.splitlines()[0] == "review: error: --run-on 'cloud': not a place tests can run"
    assert "choose from auto, host, vm" in result.stderr and "Traceback" not in result.stderr
    result.assert_nothing_left()


def test_a_vm_that_cannot_boot_is_one_info_and_no_host_run(kernel_repo: Path, tmp_path: Path) -> None:
    result = review(DEMO, "--tree", kernel_repo, "--run-tests", "--run-on", "vm", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    assert doc["selftests"] == []
    (info,) = [f for f in doc["findings"] if f["rule"] == "vm"]
    assert info["level"] == "info"
    assert info["message"].startswith("the selftests were not run: no loongarch guest can be booted here: Debian 12 has no "
                                      "LoongArch gcc and no LoongArch libc for the test programs"), info
    assert "--build compiles the LoongArch vDSO with clang" in info["message"]  # what can be done here, and where
    stage = next(st for st in doc["stages"] if st["name"] == "selftests")
    assert stage["status"] == "skipped" and "in the series' kernels, but no loongarch guest" in stage["detail"]
    result.assert_nothing_left()


def test_auto_falls_back_to_the_host_and_says_why_once(kernel_repo: Path, tmp_path: Path) -> None:
    result = review(DEMO, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    assert {r["where"].split()[0] for r in doc["selftests"]} == {"host"}
    (caveat,) = [f for f in doc["findings"] if f["rule"].startswith(("selftests/host", "vm"))]
    assert caveat["rule"] == "selftests/host-kernel"
    assert "were not tested: the selftests ran on this machine's kernel" in caveat["message"]
    assert caveat["message"].endswith("not in the series' kernels: no loongarch guest can be booted here: Debian 12 has no LoongArch gcc "
                                      "and no LoongArch libc for the test programs, and no LoongArch kernel boots under its "
                                      "QEMU 7.2 without firmware (--build compiles the LoongArch vDSO with clang and checks its "
                                      "exports)"), caveat
    assert caveat["hint"] is None  # nothing here makes it possible
    assert "selftests: on this machine's kernel, not in the series' kernels: no loongarch guest" in result.stderr


def _powerpc(repo: Path, out: Path) -> Path:
    """REPO with an arch/powerpc/ (its Makefile: what tells a kernel tree), and a series touching its vDSO (the mbox)."""
    vdso = repo / "arch/powerpc/kernel/vdso/vgetrandom.c"
    vdso.parent.mkdir(parents=True)
    (repo / "arch/powerpc/Makefile").write_text("# SPDX-License-Identifier: GPL-2.0\n")
    vdso.write_text("// SPDX-License-Identifier: GPL-2.0\n")
    git(repo, "add", "arch/powerpc")
    git(repo, "commit", "-q", "-m", "powerpc: a vDSO")
    with vdso.open("a") as f:
        f.write("/* the change */\n")
    git(repo, "commit", "-q", "-s", "-am", "powerpc/vdso: Change it")
    out.write_text(git(repo, "format-patch", "--stdout", "--base=HEAD~1", "HEAD~1"))
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    return out


def test_auto_without_the_guest_root_says_why_and_the_command_and_downloads_nothing(kernel_repo: Path, tmp_path: Path) -> None:
    """A powerpc series, no ppc64el guest root made yet (an empty REVIEWER_GUEST_ROOTS): the tests run on the host, and
    the stderr, the finding and the stage's detail say why not in ppc64le kernels, and the command that makes the root."""
    mbox, roots = _powerpc(kernel_repo, tmp_path / "ppc.mbox"), tmp_path / "roots"
    roots.mkdir()
    result = review(mbox, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday", "--bench-runs", "0", "--format", "json",
                    tmp=tmp_path / "tmp", env={"REVIEWER_GUEST_ROOTS": str(roots)})
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    assert {r["where"].split()[0] for r in doc["selftests"]} == {"host"}
    lack = f"no ppc64el guest root at {roots}/ppc64el"
    assert f"selftests: on this machine's kernel, not in the series' kernels: {lack} (make it: review guest-root ppc64le)" in result.stderr
    (caveat,) = [f for f in doc["findings"] if f["rule"].startswith(("selftests/host", "vm"))]
    assert caveat["message"].startswith("the series' kernel changes (arch/powerpc/kernel/vdso/vgetrandom.c) were not tested: ")
    assert caveat["message"].endswith(f"for base and patched alike, not in the series' kernels: {lack}"), caveat
    assert caveat["hint"].startswith("make it: review guest-root ppc64le (it downloads 30 "
                                     "ppc64el Debian packages") and "--run-on vm" in caveat["hint"]
    stage = next(st for st in doc["stages"] if st["name"] == "selftests")
    assert f"on this machine's kernel, not in the series' kernels: {lack} (make it: review guest-root ppc64le)" in stage["detail"]
    assert list(roots.iterdir()) == []  # auto downloads nothing
    result.assert_nothing_left()


def test_run_on_vm_makes_the_missing_root_and_says_why_it_could_not(kernel_repo: Path, tmp_path: Path) -> None:
    """--run-on vm asks for the guests: the review makes their root itself, saying so; here apt knows no ppc64el packages
    (an apt configuration of our own with no package lists), so it says what failed and what makes it possible, leaves
    no half-made root and runs nothing on the host."""
    mbox, roots, apt = _powerpc(kernel_repo, tmp_path / "ppc.mbox"), tmp_path / "roots", tmp_path / "apt"
    for d in ("lists/partial", "cache/archives/partial"):
        (apt / d).mkdir(parents=True)
    conf = apt / "apt.conf"
    conf.write_text(f'Dir::State::Lists "{apt}/lists";\nDir::Cache "{apt}/cache";\nDir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n')
    result = review(mbox, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday", "--run-on", "vm", "--format", "json",
                    tmp=tmp_path / "tmp", env={"REVIEWER_GUEST_ROOTS": str(roots), "APT_CONFIG": str(conf)})
    assert result.rc == ExitStatus.OK, result.stderr
    lack = f"no ppc64el guest root at {roots}/ppc64el"
    assert result.stderr.splitlines()[:2] == [f"selftests: {lack}: making it, once, as `review guest-root ppc64le` does",
                                              "selftests: downloading 30 ppc64el Debian packages (apt-get download: nothing is installed)"]
    doc = result.json()
    assert doc["selftests"] == []
    (info,) = [f for f in doc["findings"] if f["rule"] in ("vm", "selftests/host-kernel")]
    assert info["message"] == (f"the selftests were not run: {lack}, and making it failed: apt-get cannot download the ppc64el packages: "
                               "E: Unable to locate package bash:ppc64el")
    assert info["hint"] == ("as root, once: dpkg --add-architecture ppc64el && apt-get update; "
                            "--run-on host runs them on this machine's kernel")
    stage = next(st for st in doc["stages"] if st["name"] == "selftests")
    assert stage["status"] == "skipped" and "making it failed" in stage["detail"] and "dpkg --add-architecture ppc64el" in stage["detail"]
    assert not roots.exists() or list(roots.iterdir()) == []
    result.assert_nothing_left()
