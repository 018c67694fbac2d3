"""--run-on vm with no guest root made yet: the review makes it itself (apt-get download of Debian's ppc64el
packages: this test needs apt's ppc64el lists, as ./dev deps sets them up, and the network, as the real tier's
`review guest-root` does), saying so as it goes, and then goes on to the guests. The tree is the mini one with an
arch/powerpc/ and no kernel to build: the guest kernels' build fails at once, which keeps the test to the download
(about 10 s here)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from tests.cli.test_run_on import _powerpc
from tests.helpers import review


@pytest.mark.slow
def test_run_on_vm_makes_the_missing_guest_root_with_progress(kernel_repo: Path, tmp_path: Path) -> None:
    mbox, roots = _powerpc(kernel_repo, tmp_path / "ppc.mbox"), tmp_path / "roots"
    result = review(mbox, "--tree", kernel_repo, "--tests", "vDSO:vdso_test_gettimeofday", "--run-on", "vm", "--bench-runs", "0",
                    "--format", "json", tmp=tmp_path / "tmp",
                    env={"REVIEWER_GUEST_ROOTS": str(roots), "XDG_CACHE_HOME": str(tmp_path / "cache")},
                    timeout=900)
    made = roots / "ppc64el"
    said = [ln for ln in result.stderr.splitlines() if ln.startswith("selftests: ")]
    assert said[:2] == [f"selftests: no ppc64el guest root at {made}: making it, once, as `review guest-root ppc64le` does",
                        "selftests: downloading 30 ppc64el Debian packages (apt-get download: nothing is installed)"], result.stderr
    assert re.fullmatch(rf"selftests: unpacking 30 packages \(\d+ MB\) into {re.escape(str(made))}", said[2]), said
    assert re.fullmatch(rf"selftests: made the ppc64el guest root {re.escape(str(made))} in \d+s", said[3]), said
    assert (made / ".reviewer-root").is_file() and (made / "bin/bash").is_file() and (made / "bin/busybox").is_file()
    # Then the guests, not the host: the mini tree has no kernel to build, so both sides' builds fail (exit 6).
    assert result.rc == ExitStatus.SELFTESTS, result.stderr
    doc = result.json()
    builds = [r for r in doc["selftests"] if r["name"] == "vm:kernel-build"]
    assert {r["tree"] for r in builds} == {"base", "patched"} and all(r["where"].endswith(" ppc64le") for r in builds), builds
    assert not any(r["where"].startswith("host ") for r in doc["selftests"])
    assert not any(f["rule"] == "selftests/host-kernel" for f in doc["findings"])
    result.assert_nothing_left()
