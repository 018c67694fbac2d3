"""Issue 17 for arm64: an arm64 series is tested in arm64 kernels booted by virtme-ng under qemu-system-aarch64 -M virt.

The series makes the arm64 vDSO's getrandom() (arch/arm64/kernel/vdso/vgetrandom.c) hand every
buffer to the syscall: vdso_test_getrandom's own check catches it, but only in an arm64 kernel
that has the change. The kernels and the tests are cross-built (aarch64-linux-gnu-gcc) in
REVIEWER_BOOT_CACHE, and the guest's userspace is the arm64 root `review guest-root arm64` makes
from Debian's packages (made here when the machine has none).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.realkernel.kernel import BOOT_CACHE as CACHE
from tests.realkernel.kernel import GUEST_ROOTS as ROOTS
from tests.realkernel.test_vm_real import caught_in_its_guests, guest_root, syscall_series

pytestmark = [pytest.mark.slow, pytest.mark.boot]
SRC = "arch/arm64/kernel/vdso/vgetrandom.c"


@pytest.fixture(scope="module")
def arm64_series(linux: Path, linux_head: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return syscall_series(linux, linux_head, SRC, "\tif (alternative_has_cap_likely(ARM64_HAS_FPSIMD))\n",
                          "arm64/vdso: getrandom: Always use the syscall", tmp_path_factory.mktemp("series") / "arm64.mbox")


@pytest.fixture(scope="module")
def arm64_root() -> str:
    """The arm64 guest root, made with the tool's own command when this machine has none."""
    guest_root(ROOTS, "arm64", "arm64")
    root = Path(ROOTS) / "arm64"
    # The root is arm64's, not the host's: bash is an AArch64 ELF (e_machine 183 at offset 18, little-endian).
    head = (root / "bin/bash").read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183
    return ROOTS


def test_an_arm64_series_is_tested_in_its_arm64_kernels(linux: Path, linux_head: str, arm64_series: Path, arm64_root: str,
                                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", CACHE)
    monkeypatch.setenv("REVIEWER_GUEST_ROOTS", arm64_root)
    assert caught_in_its_guests(linux, linux_head, arm64_series, "arm64", tmp_path / "tmp") == []  # no caveat: all of it was tested
