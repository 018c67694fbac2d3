"""The architectures a guest can be booted for: what its kernel needs on top of the shared userspace set,
how it is built (build/targets: ARCH=, CROSS_COMPILE=) and booted (vng, QEMU), and where its userspace comes from.

The host's own architecture boots with virtme-ng's usual root, the host's file system. Another
architecture boots with `vng --arch <debian name> --root DIR`: DIR is made from that
architecture's Debian packages (vm/root.py), and the test programs are cross-built for it.
32-bit powerpc has neither a virtme-ng architecture nor, in Debian 12, a bash or busybox: it boots
QEMU's mac99 with an initramfs of the statically built tests and our own init (vm/initramfs.py).
Measured (KERNEL-NOTES): ppc64le pseries needs PPC_OF_BOOT_TRAMPOLINE, or SLOF stops at
"Program Exception"; x86_64 needs ACPI, or the guest hangs before init; mac99 needs the PMAC
platform, its Zilog serial ports as ttyS0/ttyS1 and the ADB/CUDA controller (its power switch).
"""
from __future__ import annotations

from dataclasses import dataclass

from reviewer.build.targets import TARGETS, Target, host


@dataclass(frozen=True)
class GuestArch:
    name: str  # build/targets' name, and what the report says: x86_64, ppc64le
    srcarch: str  # its arch/ directory
    symbols: tuple[str, ...]  # the kernel's, beyond the shared userspace set (vm/kernel.USERSPACE)
    make_target: str  # what make builds
    image: str  # where the build leaves the kernel vng boots, in the build directory
    qemu: str  # the emulator vng starts
    deb: str  # Debian's name for it (vng --arch, the root's packages)
    qemu_package: str
    initramfs: bool = False  # booted by vm/initramfs.py (own init, static tests), not by vng
    machine: str = ""  # QEMU's -M for an initramfs guest
    build_minutes: int = 6  # the first kernel build at -j2, at least (measured: KERNEL-NOTES, bench/vm_cost.py)
    bench_minutes: int = 4  # one `vdso_test_getrandom bench-single` run in the guest under TCG

    @property
    def native(self) -> bool:
        """The machine's own: its root file system is the guest's, and KVM may run it."""
        return self.name == host().name

    @property
    def target(self) -> Target:
        return host() if self.native else TARGETS[self.name]

    def make_vars(self, ccache: bool) -> tuple[str, ...]:
        """make's variables for the kernel (ccache in front of the compiler when installed)."""
        return self.target.variables(ccache)

    def test_vars(self) -> tuple[str, ...]:
        """make's variables for the selftests: none natively, else ARCH= and CROSS_COMPILE= (and static
        programs for an initramfs guest, which has no libc)."""
        t = self.target
        static = ("LDFLAGS=-static",) if self.initramfs else ()
        return () if self.native else (f"ARCH={t.arch}", f"CROSS_COMPILE={t.cross}", *static)


GUESTS: dict[str, GuestArch] = {g.name: g for g in (
    GuestArch("x86_64", "x86", ("64BIT", "X86_64", "SERIAL_8250", "SERIAL_8250_CONSOLE", "EARLY_PRINTK", "HYPERVISOR_GUEST",
                                "PARAVIRT", "KVM_GUEST", "RTC_DRV_CMOS", "ACPI"),
              "bzImage", "arch/x86/boot/bzImage", "qemu-system-x86_64", "amd64", "qemu-system-x86", build_minutes=8, bench_minutes=3),
    GuestArch("ppc64le", "powerpc", ("PPC64", "PPC_BOOK3S_64", "CPU_LITTLE_ENDIAN", "POWERPC64_CPU", "PPC_PSERIES", "ALTIVEC",
                                     "VSX", "PPC_RADIX_MMU", "HVC_CONSOLE", "PPC_OF_BOOT_TRAMPOLINE"),
              "vmlinux", "vmlinux", "qemu-system-ppc64", "ppc64el", "qemu-system-ppc"),
    GuestArch("ppc32", "powerpc", ("PPC_BOOK3S_32", "PPC_PMAC", "ALTIVEC", "PPC_OF_BOOT_TRAMPOLINE", "SERIAL_PMACZILOG",
                                   "SERIAL_PMACZILOG_TTYS", "SERIAL_PMACZILOG_CONSOLE", "MACINTOSH_DRIVERS", "ADB", "ADB_CUDA",
                                   "ADB_PMU"),
              "vmlinux", "vmlinux", "qemu-system-ppc", "powerpc", "qemu-system-ppc", initramfs=True, machine="mac99",
              build_minutes=8, bench_minutes=4),
    GuestArch("arm64", "arm64", ("SERIAL_AMBA_PL011", "SERIAL_AMBA_PL011_CONSOLE", "RTC_DRV_PL031"),
              "Image", "arch/arm64/boot/Image", "qemu-system-aarch64", "arm64", "qemu-system-arm",
              build_minutes=8),
)}
BY_DIR = {g.srcarch: g for g in reversed(GUESTS.values())}  # arch/<dir> -> its guest (the first of a directory's: powerpc's is ppc64le)
