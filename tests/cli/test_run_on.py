"""--run-on: a bad value is a usage error; a VM that cannot be booted is said, and nothing runs on the host instead."""
from __future__ import annotations

from pathlib import Path

from reviewer.errors import ExitStatus
from tests.conftest import SERIES
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
    assert caveat["hint"].startswith("not in the series' kernels: no loongarch guest can be booted here: Debian 12 has no LoongArch gcc")
