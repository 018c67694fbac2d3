"""The architectures a series is built for, and the toolchain each one needs.

A series is built for each architecture whose arch/<x>/ it changes, and for the host's when it
changes code outside arch/ (or nothing under arch/ at all). Each target is the arch's tinyconfig
(the smallest configuration kbuild knows; measured: 20 s to configure, 17 s to build the ppc64le
vDSO cold) plus the few symbols that pick the variant: ppc64le for powerpc, and the 32-bit
powerpc build as well when the series touches the powerpc vDSO (that is where VDSO32 lives).
The compiler is the host's gcc, a Debian cross gcc, or clang/lld with LLVM= where Debian has no gcc
(LoongArch). A target whose tools are missing is named with the packages that bring them.
"""
from __future__ import annotations

import platform
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str  # what the reports say: x86_64, ppc64le, ppc32, arm64, ...
    arch: str  # make ARCH=
    cross: str = ""  # CROSS_COMPILE= (gcc); "" for the host's gcc or for clang
    clang: bool = False  # LLVM=: clang, lld and the LLVM binutils
    symbols: tuple[str, ...] = ()  # on top of tinyconfig
    packages: tuple[str, ...] = ()  # the Debian packages that bring the toolchain

    @property
    def srcarch(self) -> str:
        """The arch/ directory."""
        return {"x86_64": "x86", "i386": "x86"}.get(self.arch, self.arch)

    def llvm(self) -> str:
        """The LLVM= value: 1 when unversioned clang is installed, else Debian's versioned suffix."""
        return "1" if shutil.which("clang") else f"-{CLANG_VERSION}"

    def cc(self) -> str:
        if self.clang:
            return "clang" if self.llvm() == "1" else f"clang-{CLANG_VERSION}"
        return f"{self.cross}gcc"

    def variables(self, *, ccache: bool) -> tuple[str, ...]:
        """make's variables for this target (ccache in front of the compiler when installed)."""
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
        """The commands this target needs that are not installed."""
        return tuple(t for t in self.tools() if shutil.which(t) is None)

    def readelf(self) -> str:
        """A readelf that reads this target's ELF files (GNU readelf reads every ELF machine)."""
        if self.clang and (tool := shutil.which(self.tools()[-1])):
            return tool
        return shutil.which("readelf") or shutil.which(f"{self.cross}readelf") or "readelf"


CLANG_VERSION = 19

TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("x86_64", "x86_64", "x86_64-linux-gnu-", packages=("gcc",)),
    Target("ppc64le", "powerpc", "powerpc64le-linux-gnu-", symbols=("PPC64", "PPC_BOOK3S_64", "CPU_LITTLE_ENDIAN"),
           packages=("gcc-powerpc64le-linux-gnu",)),
    # ARCH=powerpc's tinyconfig is 32-bit book3s: the VDSO32 build.
    Target("ppc32", "powerpc", "powerpc-linux-gnu-", packages=("gcc-powerpc-linux-gnu",)),
    Target("arm64", "arm64", "aarch64-linux-gnu-", packages=("gcc-aarch64-linux-gnu",)),
    Target("arm", "arm", "arm-linux-gnueabihf-", packages=("gcc-arm-linux-gnueabihf",)),
    Target("riscv64", "riscv", "riscv64-linux-gnu-", packages=("gcc-riscv64-linux-gnu",)),
    Target("s390x", "s390", "s390x-linux-gnu-", packages=("gcc-s390x-linux-gnu",)),
    Target("loongarch", "loongarch", clang=True, packages=(f"clang-{CLANG_VERSION}", f"lld-{CLANG_VERSION}", f"llvm-{CLANG_VERSION}")),
)}
# arch/<dir> -> the targets that build it.
BY_DIR: dict[str, tuple[str, ...]] = {
    "x86": ("x86_64",), "powerpc": ("ppc64le",), "arm64": ("arm64",), "arm": ("arm",), "riscv": ("riscv64",),
    "s390": ("s390x",), "loongarch": ("loongarch",),
}
_POWERPC_VDSO = re.compile(r"^arch/powerpc/(kernel/vdso|include/asm/vdso)")
_ARCH = re.compile(r"^arch/([^/]+)/")


def host() -> Target:
    """The target of the machine's own architecture (its gcc, no CROSS_COMPILE)."""
    name = {"x86_64": "x86_64", "aarch64": "arm64", "ppc64le": "ppc64le", "riscv64": "riscv64",
            "s390x": "s390x"}.get(platform.machine(), "")
    t = TARGETS.get(name)
    if t is None:
        return Target(platform.machine(), platform.machine(), packages=("gcc",))
    return Target(t.name, t.arch, "", t.clang, t.symbols, ("gcc",))


def for_series(touched: Sequence[str], only: Sequence[str] = ()) -> tuple[list[Target], list[str]]:
    """The targets to build TOUCHED for (ONLY: the user's --arch names), and the arch directories
    no target is known for. arch/<x>/ files go to their arch's targets, the rest to the host's."""
    me = host()
    if only:
        return [me if n == me.name else TARGETS[n] if n in TARGETS else _unknown(n) for n in dict.fromkeys(only)], []
    names: dict[str, None] = {}
    unknown: dict[str, None] = {}
    for path in touched:
        m = _ARCH.match(path)
        if not m:
            if _kernel_code(path):
                names[me.name] = None
            continue
        for n in BY_DIR.get(m[1], ()):
            names[n] = None
        if m[1] not in BY_DIR:
            unknown[m[1]] = None
        if _POWERPC_VDSO.match(path):
            names["ppc32"] = None
    return [me if n == me.name else TARGETS[n] for n in names], list(unknown)


def belongs(path: str, target: Target) -> bool:
    """Whether TARGET builds PATH: arch/<x>/ files only on x's targets, the rest on every target."""
    m = _ARCH.match(path)
    return m is None or target.srcarch == m[1]


# What kbuild does not compile into the kernel: documentation, the tools and selftests, samples.
_OUTSIDE = re.compile(r"^(Documentation|tools|samples|LICENSES|usr/include)/|^[^/]+$")


def _kernel_code(path: str) -> bool:
    return not _OUTSIDE.match(path)


def _unknown(name: str) -> Target:
    from reviewer.errors import UsageError

    raise UsageError(f"unknown build architecture {name!r}", f"choose from: {', '.join(TARGETS)}")
