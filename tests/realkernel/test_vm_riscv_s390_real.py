"""Issue 17 for riscv64 and s390x: a series is tested in kernels of its own architecture, booted by QEMU with an initramfs.

Debian 12 has no riscv64 packages to make a root of (its cross gcc and libc, yes), and s390x needs
none: both guests boot the cross-built kernel with an initramfs of the statically built tests and
the tool's own init (kernel/initramfs.py), riscv64 under `qemu-system-riscv64 -M virt` (OpenSBI),
s390x under `qemu-system-s390x -M s390-ccw-virtio -cpu max`. Each series breaks its architecture's
vDSO in a way vdso_test_correctness sees (vDSO against syscall; not KTAP: it exits 1, its own [FAIL]
line in the output), and only in a kernel that has the change: riscv64's clock_gettime() a second ahead, s390x's
getcpu() naming a CPU that is not the one it runs on. (6.12's riscv has no vDSO getrandom(), and under TCG s390x's vdso_test_getrandom
divides by a cache line size glibc cannot read there, -1, on any kernel: correctness is the test
both architectures can pass.) A boot takes about a second; the cost is the first kernel build.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.realkernel.kernel import BOOT_CACHE as CACHE
from tests.realkernel.kernel import edit_series
from tests.realkernel.test_vm_real import caught_in_its_guests

pytestmark = [pytest.mark.slow, pytest.mark.boot]
TEST = "vDSO:vdso_test_correctness"
RISCV = "arch/riscv/kernel/vdso/vgettimeofday.c"
RISCV_OLD = "\treturn __cvdso_clock_gettime(clock, ts);\n"
RISCV_NEW = ("\tint ret = __cvdso_clock_gettime(clock, ts);\n\n"
             "\tif (!ret)\n\t\tts->tv_sec++;\t/* a second ahead, on purpose */\n\treturn ret;\n")
S390 = "arch/s390/kernel/vdso64/getcpu.c"
S390_OLD = "\t\t*cpu = clk.pf;\n"
S390_NEW = "\t\t*cpu = clk.pf + 1;\t/* the next CPU, on purpose */\n"


@pytest.mark.parametrize(("arch", "path", "old", "new", "subject", "check"), [
    ("riscv64", RISCV, RISCV_OLD, RISCV_NEW, "riscv: vdso: Run clock_gettime() a second ahead", "[FAIL]\tTimes are out of sequence"),
    ("s390x", S390, S390_OLD, S390_NEW, "s390/vdso: Report the next CPU from getcpu()", "[FAIL]\tCPU 0:"),
])
def test_a_series_is_tested_in_its_own_architectures_kernels(arch: str, path: str, old: str, new: str, subject: str, check: str,
                                                             linux: Path, linux_head: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", CACHE)
    mbox, _ = edit_series(linux, linux_head, path, old, new, subject, "A wrong vDSO, on purpose.", tmp_path / f"{arch}.mbox")
    said = caught_in_its_guests(linux, linux_head, mbox, arch, tmp_path / "tmp", test=TEST, check=check, field="log")
    assert said == [], said  # no caveat: the whole series was tested
