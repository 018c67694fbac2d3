"""The architectures a guest can be booted for: what its kernel needs on top of the shared userspace set,
how it is built (build/targets: ARCH=, CROSS_COMPILE=) and booted (vng, QEMU), and where its userspace comes from.

The host's own architecture boots with virtme-ng's usual root, the host's file system. Another
architecture boots with `vng --arch <debian name> --root DIR`: DIR is made from that
architecture's Debian packages (vm/root.py), and the test programs are cross-built for it.
32-bit powerpc has neither a virtme-ng architecture nor, in Debian 12, a bash or busybox, and Debian 12
has no riscv64 packages at all (its cross toolchains and libc, yes): these boot QEMU with an initramfs
of the statically built tests and our own init (vm/initramfs.py), and so does s390x, whose tests need
no more than that (one boot takes about a second under TCG; vng would need an s390x root first).
Measured (docs/design.md#measured-facts): ppc64le pseries needs PPC_OF_BOOT_TRAMPOLINE, or SLOF stops at
"Program Exception"; x86_64 needs ACPI, or the guest hangs before init; mac99 needs the PMAC
platform, its Zilog serial ports as ttyS0/ttyS1 and the ADB/CUDA controller (its power switch);
riscv64 needs RISCV_ISA_FALLBACK (QEMU 7.2's device tree has only the old riscv,isa string: without
it the kernel stops silently after OpenSBI) and FPU (Debian's riscv64 is the double-float ABI: without
it /init dies of SIGILL); s390x needs the SCLP console and `-cpu max`, whose
vector facility the vDSO getrandom() (and vdso_test_chacha) need.
"""
from __future__ import annotations

from dataclasses import dataclass

from reviewer.kernel.targets import TARGETS, Target, host


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
    build_minutes: int = 6  # the first kernel build at -j2, at least (measured: docs/design.md#measured-facts, bench/vm_cost.py)
    bench_minutes: int = 4  # one `vdso_test_getrandom bench-single` run in the guest under TCG
    console: str = "ttyS0"  # the kernel's console= in an initramfs guest
    qemu_args: tuple[str, ...] = ()  # more of QEMU's options for an initramfs guest (s390x: -cpu max)
    without: tuple[str, ...] = ()  # symbols of the shared userspace set this guest does without (no such hardware, no use)
    off: tuple[str, ...] = ()  # symbols tinyconfig turns on that this guest has no use for (riscv64's EFI stub: 77 objects;
    # PORTABLE selects it unless NONPORTABLE is on)
    firmware: tuple[tuple[str, str], ...] = ()  # (file, Debian package): what QEMU loads before the kernel

    @property
    def native(self) -> bool:
        """The machine's own: its root file system is the guest's, and KVM may run it."""
        return self.name == host().name

    @property
    def target(self) -> Target:
        return host() if self.native else TARGETS[self.name]

    def make_vars(self, *, ccache: bool) -> tuple[str, ...]:
        """make's variables for the kernel (ccache in front of the compiler when installed)."""
        return self.target.variables(ccache=ccache)

    def test_vars(self) -> tuple[str, ...]:
        """make's variables for the selftests: none natively, else ARCH= and CROSS_COMPILE= (and static
        programs for an initramfs guest, which has no libc)."""
        t = self.target
        static = ("LDFLAGS=-static",) if self.initramfs else ()
        return () if self.native else (f"ARCH={t.arch}", f"CROSS_COMPILE={t.cross}", *static)


QEMU_DATA = "/usr/share/qemu"  # Debian's QEMU firmware (qemu-system-data)

GUESTS: dict[str, GuestArch] = {g.name: g for g in (
    GuestArch("x86_64", "x86", ("64BIT", "X86_64", "SERIAL_8250", "SERIAL_8250_CONSOLE", "EARLY_PRINTK", "HYPERVISOR_GUEST",
                                "PARAVIRT", "KVM_GUEST", "RTC_DRV_CMOS", "ACPI"),
              "bzImage", "arch/x86/boot/bzImage", "qemu-system-x86_64", "amd64", "qemu-system-x86", build_minutes=8, bench_minutes=3,
              firmware=(("/usr/share/seabios/bios-256k.bin", "seabios"),)),
    GuestArch("ppc64le", "powerpc", ("PPC64", "PPC_BOOK3S_64", "CPU_LITTLE_ENDIAN", "POWERPC64_CPU", "PPC_PSERIES", "ALTIVEC",
                                     "VSX", "PPC_RADIX_MMU", "HVC_CONSOLE", "PPC_OF_BOOT_TRAMPOLINE"),
              "vmlinux", "vmlinux", "qemu-system-ppc64", "ppc64el", "qemu-system-ppc",
              firmware=((f"{QEMU_DATA}/slof.bin", "qemu-system-data"),)),
    GuestArch("ppc32", "powerpc", ("PPC_BOOK3S_32", "PPC_PMAC", "ALTIVEC", "PPC_OF_BOOT_TRAMPOLINE", "SERIAL_PMACZILOG",
                                   "SERIAL_PMACZILOG_TTYS", "SERIAL_PMACZILOG_CONSOLE", "MACINTOSH_DRIVERS", "ADB", "ADB_CUDA",
                                   "ADB_PMU"),
              "vmlinux", "vmlinux", "qemu-system-ppc", "powerpc", "qemu-system-ppc", initramfs=True, machine="mac99",
              build_minutes=8, bench_minutes=4, firmware=((f"{QEMU_DATA}/openbios-ppc", "qemu-system-data"),)),
    GuestArch("arm64", "arm64", ("SERIAL_AMBA_PL011", "SERIAL_AMBA_PL011_CONSOLE", "RTC_DRV_PL031"),
              "Image", "arch/arm64/boot/Image", "qemu-system-aarch64", "arm64", "qemu-system-arm",
              build_minutes=8),
    GuestArch("riscv64", "riscv", ("ARCH_VIRT", "SERIAL_8250", "SERIAL_8250_CONSOLE", "SERIAL_OF_PLATFORM", "RISCV_ISA_FALLBACK", "FPU",
                                  "NONPORTABLE"),
              "Image", "arch/riscv/boot/Image", "qemu-system-riscv64", "riscv64", "qemu-system-misc", initramfs=True, machine="virt",
              without=("PCI",), off=("EFI",), firmware=((f"{QEMU_DATA}/opensbi-riscv64-generic-fw_dynamic.bin", "qemu-system-data"),)),
    GuestArch("s390x", "s390", ("SCLP_TTY", "SCLP_CONSOLE", "SCLP_VT220_TTY", "SCLP_VT220_CONSOLE"),
              "bzImage", "arch/s390/boot/bzImage", "qemu-system-s390x", "s390x", "qemu-system-misc", initramfs=True,
              machine="s390-ccw-virtio", console="ttysclp0", qemu_args=("-cpu", "max"), without=("PCI", "RTC_CLASS"),
              firmware=((f"{QEMU_DATA}/s390-ccw.img", "qemu-system-data"),)),
)}
BY_DIR = {g.srcarch: g for g in reversed(GUESTS.values())}  # arch/<dir> -> its guest (the first of a directory's: powerpc's is ppc64le)
