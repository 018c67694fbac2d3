"""THE architectures: one `Arch` an architecture, for every stage that builds or boots a kernel (issue 31).

An entry says, by concern:
- what it is: the name the reports and `--arch` use, its arch/ directory, make's ARCH=, the
  machine (`uname -m`) of that architecture;
- its build (`--build`, compile/): the gcc cross prefix or clang, the tinyconfig symbols that pick
  the variant, the Debian packages that bring the toolchain, its vDSO directories, and, for the
  second architecture of a directory, the paths that call for it too;
- its guest (`--run-on vm`, kernel/guest.py and kernel/initramfs.py): the kernel's symbols beyond
  the shared userspace set, the image make builds, the QEMU binary and package, virtme-ng's (and
  Debian's) name for it or the initramfs guest's QEMU machine, its console and firmware, its rough
  costs, and what its guests cannot test; or why no guest of it can be booted here.

A series is built for each architecture whose arch/<x>/ it changes, and for the host's when it
changes code outside arch/ (or nothing under arch/ at all). Each build is the arch's tinyconfig
(the smallest configuration kbuild knows; measured: 20 s to configure, 17 s to build the ppc64le
vDSO cold) plus the few symbols that pick the variant: ppc64le for powerpc, and the 32-bit powerpc
build as well when the series touches the powerpc vDSO (that is where VDSO32 lives). The compiler
is the host's gcc, a Debian cross gcc, or clang/lld with LLVM= where Debian has no gcc (LoongArch).

The host's own architecture boots with virtme-ng's usual root, the host's file system. Another
architecture boots with `vng --arch <debian name> --root DIR`: DIR is made from that architecture's
Debian packages (kernel/guestroot.py), and the test programs are cross-built for it. 32-bit powerpc
has neither a virtme-ng architecture nor, in Debian 12, a bash or busybox, and Debian 12 has no
riscv64 packages at all (its cross toolchains and libc, yes): these boot QEMU with an initramfs of
the statically built tests and our own init (kernel/initramfs.py), and so does s390x, whose tests
need no more than that (one boot takes about a second under TCG; vng would need an s390x root first).
Measured (docs/design.md#measured-facts): ppc64le pseries needs PPC_OF_BOOT_TRAMPOLINE, or SLOF stops at
"Program Exception"; x86_64 needs ACPI, or the guest hangs before init; mac99 needs the PMAC
platform, its Zilog serial ports as ttyS0/ttyS1 and the ADB/CUDA controller (its power switch);
riscv64 needs RISCV_ISA_FALLBACK (QEMU 7.2's device tree has only the old riscv,isa string: without
it the kernel stops silently after OpenSBI) and FPU (Debian's riscv64 is the double-float ABI: without
it /init dies of SIGILL); s390x needs the SCLP console and `-cpu max`, whose
vector facility the vDSO getrandom() (and vdso_test_chacha) need.
"""
from __future__ import annotations

import platform
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace

from reviewer.errors import UsageError

CLANG_VERSION = 19
QEMU_DATA = "/usr/share/qemu"  # Debian's QEMU firmware (qemu-system-data)


@dataclass(frozen=True)
class Gap:
    """What an architecture's guests cannot test of a series touching PATH (an anchored regex): said once, as MESSAGE."""

    path: str
    message: str
    hint: str = ""


@dataclass(frozen=True)
class Arch:
    # What it is.
    name: str  # what the reports and --arch say: x86_64, ppc64le, ppc32, arm64, ...
    srcarch: str  # its arch/ directory
    arch: str  # make ARCH=
    uname: str = ""  # `uname -m` of a machine of this architecture (host()); "" for none we run on
    # Its build (--build).
    cross: str = ""  # CROSS_COMPILE= (gcc); "" for the host's gcc or for clang
    clang: bool = False  # LLVM=: clang, lld and the LLVM binutils
    build_symbols: tuple[str, ...] = ()  # on top of tinyconfig
    packages: tuple[str, ...] = ()  # the Debian packages that bring the toolchain
    vdso: tuple[str, ...] = ()  # its vDSO directories (6.12), as make targets: arch/<srcarch>/.../
    also_for: str = ""  # a second architecture of its arch/ directory: the paths (regex) that call for it too
    # Its guest (--run-on vm): none without QEMU.
    qemu: str = ""  # the emulator (vng starts it, or we do for an initramfs guest)
    qemu_package: str = ""
    deb: str = ""  # Debian's name for it (vng --arch, the guest root's packages)
    guest_symbols: tuple[str, ...] = ()  # the guest kernel's, beyond the shared userspace set (kernel/guestkernel.USERSPACE)
    make_target: str = ""  # what make builds
    image: str = ""  # where the build leaves the kernel the guest boots, in the build directory
    initramfs: bool = False  # booted by kernel/initramfs.py (own init, static tests), not by vng
    machine: str = ""  # QEMU's -M for an initramfs guest
    build_minutes: int = 6  # the first kernel build at -j2, at least (measured: docs/design.md#measured-facts, bench/vm_cost.py)
    bench_minutes: int = 4  # one `vdso_test_getrandom bench-single` run in the guest under TCG
    console: str = "ttyS0"  # the kernel's console= in an initramfs guest
    qemu_args: tuple[str, ...] = ()  # more of QEMU's options for an initramfs guest (s390x: -cpu max)
    without: tuple[str, ...] = ()  # symbols of the shared userspace set this guest does without (no such hardware, no use)
    off: tuple[str, ...] = ()  # symbols tinyconfig turns on that this guest has no use for (riscv64's EFI stub: 77 objects;
    # PORTABLE selects it unless NONPORTABLE is on)
    firmware: tuple[tuple[str, str], ...] = ()  # (file, Debian package): what QEMU loads before the kernel
    gaps: tuple[Gap, ...] = ()  # what its guests cannot test
    unbootable: str = ""  # with no guest: why none can be booted here

    # The toolchain.
    def llvm(self) -> str:
        """The LLVM= value: 1 when unversioned clang is installed, else Debian's versioned suffix."""
        return "1" if shutil.which("clang") else f"-{CLANG_VERSION}"

    def cc(self) -> str:
        if self.clang:
            return "clang" if self.llvm() == "1" else f"clang-{CLANG_VERSION}"
        return f"{self.cross}gcc"

    def variables(self, *, ccache: bool) -> tuple[str, ...]:
        """make's variables for this architecture (ccache in front of the compiler when installed)."""
        out = [f"ARCH={self.arch}"]
        if self.clang:
            out.append(f"LLVM={self.llvm()}")
        elif self.cross:
            out.append(f"CROSS_COMPILE={self.cross}")
        if ccache:
            out.append(f"CC=ccache {self.cc()}")
        return tuple(out)

    def tools(self) -> tuple[str, ...]:
        if self.clang:
            v = "" if self.llvm() == "1" else f"-{CLANG_VERSION}"
            return (f"clang{v}", f"ld.lld{v}", f"llvm-objcopy{v}", f"llvm-readelf{v}")
        return (self.cc(), f"{self.cross}ld", f"{self.cross}objcopy")

    def missing(self) -> tuple[str, ...]:
        """The commands this architecture's build needs that are not installed."""
        return tuple(t for t in self.tools() if shutil.which(t) is None)

    def readelf(self) -> str:
        """A readelf that reads this architecture's ELF files (GNU readelf reads every ELF machine)."""
        if self.clang and (tool := shutil.which(self.tools()[-1])):
            return tool
        return shutil.which("readelf") or shutil.which(f"{self.cross}readelf") or "readelf"

    # The guest.
    @property
    def bootable(self) -> bool:
        return bool(self.qemu)

    @property
    def native(self) -> bool:
        """The machine's own: its root file system is the guest's, and KVM may run it."""
        return self.name == host().name

    @property
    def toolchain(self) -> Arch:
        """This architecture as this machine builds it: the machine's own gcc when native, else itself."""
        return host() if self.native else self

    def make_vars(self, *, ccache: bool) -> tuple[str, ...]:
        """make's variables for the guest kernel (ccache in front of the compiler when installed)."""
        return self.toolchain.variables(ccache=ccache)

    def test_vars(self) -> tuple[str, ...]:
        """make's variables for the selftests: none natively, else ARCH= and CROSS_COMPILE= (and static
        programs for an initramfs guest, which has no libc)."""
        t = self.toolchain
        static = ("LDFLAGS=-static",) if self.initramfs else ()
        return () if self.native else (f"ARCH={t.arch}", f"CROSS_COMPILE={t.cross}", *static)


ARCHES: tuple[Arch, ...] = (
    Arch("x86_64", "x86", "x86_64", "x86_64", "x86_64-linux-gnu-", packages=("gcc",), vdso=("arch/x86/entry/vdso/",),
         qemu="qemu-system-x86_64", qemu_package="qemu-system-x86", deb="amd64",
         guest_symbols=("64BIT", "X86_64", "SERIAL_8250", "SERIAL_8250_CONSOLE", "EARLY_PRINTK", "HYPERVISOR_GUEST", "PARAVIRT",
                        "KVM_GUEST", "RTC_DRV_CMOS", "ACPI"),
         make_target="bzImage", image="arch/x86/boot/bzImage", build_minutes=8, bench_minutes=3,
         firmware=(("/usr/share/seabios/bios-256k.bin", "seabios"),)),
    Arch("ppc64le", "powerpc", "powerpc", "ppc64le", "powerpc64le-linux-gnu-",
         build_symbols=("PPC64", "PPC_BOOK3S_64", "CPU_LITTLE_ENDIAN"),
         packages=("gcc-powerpc64le-linux-gnu",), vdso=("arch/powerpc/kernel/vdso/",),
         qemu="qemu-system-ppc64", qemu_package="qemu-system-ppc", deb="ppc64el",
         guest_symbols=("PPC64", "PPC_BOOK3S_64", "CPU_LITTLE_ENDIAN", "POWERPC64_CPU", "PPC_PSERIES", "ALTIVEC", "VSX",
                        "PPC_RADIX_MMU", "HVC_CONSOLE", "PPC_OF_BOOT_TRAMPOLINE"),
         make_target="vmlinux", image="vmlinux", firmware=((f"{QEMU_DATA}/slof.bin", "qemu-system-data"),),
         gaps=(Gap(r"^arch/powerpc/(kernel/vdso/|include/asm/vdso)",  # where VDSO32's sources are (with the 64-bit ones)
                   "the ppc64le guests ran the 64-bit vDSO only: a little-endian kernel has no VDSO32",
                   "--arch ppc32 runs the tests in 32-bit powerpc kernels (qemu-system-ppc -M mac99), on the series' VDSO32"),)),
    # ARCH=powerpc's tinyconfig is 32-bit book3s: the VDSO32 build.
    Arch("ppc32", "powerpc", "powerpc", cross="powerpc-linux-gnu-", packages=("gcc-powerpc-linux-gnu",),
         vdso=("arch/powerpc/kernel/vdso/",), also_for=r"^arch/powerpc/(kernel/vdso|include/asm/vdso)",
         qemu="qemu-system-ppc", qemu_package="qemu-system-ppc", deb="powerpc",
         guest_symbols=("PPC_BOOK3S_32", "PPC_PMAC", "ALTIVEC", "PPC_OF_BOOT_TRAMPOLINE", "SERIAL_PMACZILOG", "SERIAL_PMACZILOG_TTYS",
                        "SERIAL_PMACZILOG_CONSOLE", "MACINTOSH_DRIVERS", "ADB", "ADB_CUDA", "ADB_PMU"),
         make_target="vmlinux", image="vmlinux", initramfs=True, machine="mac99", build_minutes=8, bench_minutes=4,
         firmware=((f"{QEMU_DATA}/openbios-ppc", "qemu-system-data"),)),
    Arch("arm64", "arm64", "arm64", "aarch64", "aarch64-linux-gnu-", packages=("gcc-aarch64-linux-gnu",),
         vdso=("arch/arm64/kernel/vdso/",),
         qemu="qemu-system-aarch64", qemu_package="qemu-system-arm", deb="arm64",
         guest_symbols=("SERIAL_AMBA_PL011", "SERIAL_AMBA_PL011_CONSOLE", "RTC_DRV_PL031"),
         make_target="Image", image="arch/arm64/boot/Image", build_minutes=8,
         gaps=(Gap(r"^arch/arm64/kernel/vdso32/",  # the compat vDSO of 32-bit tasks: COMPAT kernels only
                   "the arm64 guests ran the 64-bit vDSO only: their kernel has no COMPAT, so the series' "
                   "arch/arm64/kernel/vdso32/ was neither built nor tested"),)),
    Arch("arm", "arm", "arm", cross="arm-linux-gnueabihf-", packages=("gcc-arm-linux-gnueabihf",), vdso=("arch/arm/vdso/",)),
    Arch("riscv64", "riscv", "riscv", "riscv64", "riscv64-linux-gnu-", packages=("gcc-riscv64-linux-gnu",),
         vdso=("arch/riscv/kernel/vdso/",),
         qemu="qemu-system-riscv64", qemu_package="qemu-system-misc", deb="riscv64",
         guest_symbols=("ARCH_VIRT", "SERIAL_8250", "SERIAL_8250_CONSOLE", "SERIAL_OF_PLATFORM", "RISCV_ISA_FALLBACK", "FPU",
                        "NONPORTABLE"),
         make_target="Image", image="arch/riscv/boot/Image", initramfs=True, machine="virt", without=("PCI",), off=("EFI",),
         firmware=((f"{QEMU_DATA}/opensbi-riscv64-generic-fw_dynamic.bin", "qemu-system-data"),)),
    Arch("s390x", "s390", "s390", "s390x", "s390x-linux-gnu-", packages=("gcc-s390x-linux-gnu",), vdso=("arch/s390/kernel/vdso64/",),
         qemu="qemu-system-s390x", qemu_package="qemu-system-misc", deb="s390x",
         guest_symbols=("SCLP_TTY", "SCLP_CONSOLE", "SCLP_VT220_TTY", "SCLP_VT220_CONSOLE"),
         make_target="bzImage", image="arch/s390/boot/bzImage", initramfs=True, machine="s390-ccw-virtio", console="ttysclp0",
         qemu_args=("-cpu", "max"), without=("PCI", "RTC_CLASS"), firmware=((f"{QEMU_DATA}/s390-ccw.img", "qemu-system-data"),)),
    Arch("loongarch", "loongarch", "loongarch", clang=True,
         packages=(f"clang-{CLANG_VERSION}", f"lld-{CLANG_VERSION}", f"llvm-{CLANG_VERSION}"), vdso=("arch/loongarch/vdso/",),
         unbootable="no loongarch guest can be booted here: Debian 12 has no LoongArch gcc and no LoongArch libc for the test "
                    "programs, and no LoongArch kernel boots under its QEMU 7.2 without firmware (--build compiles the "
                    "LoongArch vDSO with clang and checks its exports)"),
)
BY_NAME: dict[str, Arch] = {a.name: a for a in ARCHES}
GUESTS: dict[str, Arch] = {a.name: a for a in ARCHES if a.bootable}  # the architectures a guest can be booted for
X86_64 = BY_NAME["x86_64"]  # the in-kernel tests' (boot/), and the guests' when no other is asked for
_ARCH = re.compile(r"^arch/([^/]+)/")


def rooted() -> list[str]:
    """The guests that boot a Debian root file system `review guest-root` makes (not the machine's own, not an initramfs)."""
    return [n for n, a in GUESTS.items() if not a.native and not a.initramfs]


def initramfs_guests() -> list[str]:
    """The guests that boot an initramfs of the tests and our own init, and need no root."""
    return [n for n, a in GUESTS.items() if a.initramfs]


def spoken(names: Sequence[str], last: str) -> str:
    """NAMES as a sentence says them: "a", "a or b", "a, b and c" (LAST: "and" or "or")."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


def of_dir(srcarch: str) -> Arch | None:
    """The first architecture of the directory arch/SRCARCH/ (powerpc's: ppc64le), or None."""
    return next((a for a in ARCHES if a.srcarch == srcarch and not a.also_for), None)


def guest(name: str) -> Arch | None:
    """The guests of NAME: an architecture's name, or an arch/ directory (its first guest: powerpc's is ppc64le)."""
    return GUESTS.get(name) or next((a for a in GUESTS.values() if a.srcarch == name), None)


def find(name: str) -> Arch | None:
    """NAME: an architecture's name, or an arch/ directory (its first architecture)."""
    return BY_NAME.get(name) or of_dir(name)


def host() -> Arch:
    """The architecture of the machine (its gcc, no CROSS_COMPILE)."""
    machine = platform.machine()
    a = next((a for a in ARCHES if a.uname and a.uname == machine), None)
    if a is None:
        return Arch(machine, machine, machine, packages=("gcc",))
    return replace(a, cross="", packages=("gcc",))


def for_series(touched: Sequence[str], only: Sequence[str] = ()) -> tuple[list[Arch], list[str]]:
    """The architectures to build TOUCHED for (ONLY: the user's --arch names), and the arch directories
    no architecture is known for. arch/<x>/ files go to x's architectures, the rest to the host's."""
    me = host()
    if only:
        return [me if n == me.name else BY_NAME[n] if n in BY_NAME else _unknown(n) for n in dict.fromkeys(only)], []
    names: dict[str, None] = {}
    unknown: dict[str, None] = {}
    for path in touched:
        m = _ARCH.match(path)
        if not m:
            if _kernel_code(path):
                names[me.name] = None
            continue
        if of_dir(m[1]) is None:
            unknown[m[1]] = None
        names.update((a.name, None) for a in ARCHES if a.srcarch == m[1] and (not a.also_for or re.match(a.also_for, path)))
    return [me if n == me.name else BY_NAME[n] for n in names], list(unknown)


def belongs(path: str, arch: Arch) -> bool:
    """Whether ARCH builds PATH: arch/<x>/ files only on x's architectures, the rest on every one."""
    m = _ARCH.match(path)
    return m is None or arch.srcarch == m[1]


# What kbuild does not compile into the kernel: documentation, the tools and selftests, samples.
_OUTSIDE = re.compile(r"^(Documentation|tools|samples|LICENSES|usr/include)/|^[^/]+$")


def _kernel_code(path: str) -> bool:
    return not _OUTSIDE.match(path)


def _unknown(name: str) -> Arch:

    raise UsageError(f"unknown build architecture {name!r}", f"choose from: {', '.join(BY_NAME)}")
