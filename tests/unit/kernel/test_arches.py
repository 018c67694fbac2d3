"""THE architecture registry (reviewer/kernel/arches.py): which architectures a series is built for, with which toolchain."""
from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from reviewer.errors import UsageError
from reviewer.kernel import arches
from reviewer.kernel.arches import BY_NAME, belongs, for_series, host


def _names(touched: list[str], only: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    ts, unknown = for_series(touched, only)
    return [t.name for t in ts], unknown


def test_x86() -> None:
    ts, unknown = for_series(["arch/x86/kernel/cpu/common.c", "arch/x86/include/asm/vdso/getrandom.h"])
    assert [(t.name, t.arch, t.srcarch) for t in ts] == [("x86_64", "x86_64", "x86")] and unknown == []


def test_powerpc_is_ppc64le_and_ppc32_only_for_the_vdso() -> None:
    assert _names(["arch/powerpc/kernel/time.c"]) == (["ppc64le"], [])
    assert _names(["arch/powerpc/kernel/vdso/vgetrandom.c"]) == (["ppc64le", "ppc32"], [])
    assert _names(["arch/powerpc/include/asm/vdso/getrandom.h", "arch/powerpc/kernel/vdso/vdso32.lds.S"]) == (["ppc64le", "ppc32"], [])
    ppc64, ppc32 = for_series(["arch/powerpc/kernel/vdso/Makefile"])[0]
    assert (ppc64.arch, ppc64.cross, ppc64.clang) == ("powerpc", "powerpc64le-linux-gnu-", False)
    assert {"PPC64", "CPU_LITTLE_ENDIAN"} <= set(ppc64.build_symbols)
    assert (ppc32.arch, ppc32.cross, ppc32.build_symbols) == ("powerpc", "powerpc-linux-gnu-", ())


def test_loongarch_is_built_with_clang() -> None:
    [t] = for_series(["arch/loongarch/vdso/vgetrandom.c"])[0]
    assert (t.name, t.arch, t.clang, t.cross) == ("loongarch", "loongarch", True, "")
    assert {"clang-19", "lld-19", "llvm-19"} == set(t.packages)


def test_generic_files_are_the_hosts() -> None:
    assert _names(["mm/dmapool.c", "include/linux/mm.h", "lib/vdso/getrandom.c"]) == ([host().name], [])
    assert host().cross == "" and not host().clang


def test_documentation_tools_and_top_level_files_build_nothing() -> None:
    assert _names(["Documentation/mm/index.rst", "tools/testing/selftests/vDSO/Makefile", "samples/bpf/x.c", "MAINTAINERS"]) == ([], [])


def test_an_unknown_arch_directory_is_reported() -> None:
    assert _names(["arch/mips/kernel/time.c", "arch/mips/vdso/vgettimeofday.c", "arch/powerpc/kernel/time.c", "mm/x.c"]) == \
        (["ppc64le", host().name], ["mips"])


def test_each_target_once_in_first_seen_order() -> None:
    assert _names(["arch/powerpc/kernel/a.c", "mm/x.c", "arch/powerpc/kernel/b.c", "arch/loongarch/kernel/c.c", "mm/y.c"]) == \
        (["ppc64le", host().name, "loongarch"], [])


def test_arch_option() -> None:
    ts, unknown = for_series(["mm/x.c"], ("ppc32", "loongarch", "ppc32"))
    assert [t.name for t in ts] == ["ppc32", "loongarch"] and unknown == []
    with pytest.raises(UsageError) as exc:
        for_series(["arch/mips/kernel/time.c"], ("mips",))
    assert "mips" in exc.value.message and "ppc64le" in exc.value.hint and "loongarch" in exc.value.hint


def test_belongs() -> None:
    x86, ppc64, ppc32 = BY_NAME["x86_64"], BY_NAME["ppc64le"], BY_NAME["ppc32"]
    assert belongs("arch/x86/kernel/x.c", x86) and not belongs("arch/x86/kernel/x.c", ppc64)
    assert belongs("arch/powerpc/kernel/vdso/x.c", ppc32) and belongs("arch/powerpc/kernel/vdso/x.c", ppc64)
    assert belongs("mm/x.c", ppc64) and belongs("include/vdso/x.h", BY_NAME["loongarch"])
    assert not belongs("arch/x86_64/x.c", x86)  # the directory is x86, not the ARCH= value


PathOf = Callable[[dict[str, str]], Path]


@pytest.fixture
def path_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PathOf:
    """Set PATH to a fresh directory holding links named NAMES to the real tools TARGETS."""
    def make(links: dict[str, str]) -> Path:
        d = tmp_path / "bin"
        d.mkdir(exist_ok=True)
        for name, real in links.items():
            found = shutil.which(real)
            assert found, f"{real} is not installed"
            (d / name).symlink_to(found)
        monkeypatch.setenv("PATH", str(d))
        return d
    return make


def test_variables_gcc() -> None:
    me = host()
    assert me.variables(ccache=False) == (f"ARCH={me.arch}",)
    assert me.variables(ccache=True) == (f"ARCH={me.arch}", "CC=ccache gcc")  # the host's own gcc, no CROSS_COMPILE
    ppc = BY_NAME["ppc64le"]
    assert ppc.variables(ccache=False) == ("ARCH=powerpc", "CROSS_COMPILE=powerpc64le-linux-gnu-")
    assert ppc.variables(ccache=True) == ("ARCH=powerpc", "CROSS_COMPILE=powerpc64le-linux-gnu-", "CC=ccache powerpc64le-linux-gnu-gcc")
    assert BY_NAME["ppc32"].variables(ccache=True)[-1] == "CC=ccache powerpc-linux-gnu-gcc"


def test_variables_clang_versioned(path_of: PathOf) -> None:
    path_of({"clang-19": "clang-19"})  # Debian's clang-19 without the unversioned `clang`
    la = BY_NAME["loongarch"]
    assert la.variables(ccache=False) == ("ARCH=loongarch", "LLVM=-19")
    assert la.variables(ccache=True) == ("ARCH=loongarch", "LLVM=-19", "CC=ccache clang-19")
    assert not any(v.startswith("CROSS_COMPILE=") for v in la.variables(ccache=True))


def test_variables_clang_unversioned(path_of: PathOf) -> None:
    path_of({"clang": "clang-19"})
    assert BY_NAME["loongarch"].variables(ccache=True) == ("ARCH=loongarch", "LLVM=1", "CC=ccache clang")


def test_missing_tools_when_nothing_is_on_path(path_of: PathOf) -> None:
    path_of({})
    assert BY_NAME["ppc64le"].missing() == ("powerpc64le-linux-gnu-gcc", "powerpc64le-linux-gnu-ld", "powerpc64le-linux-gnu-objcopy")
    assert BY_NAME["loongarch"].missing() == ("clang-19", "ld.lld-19", "llvm-objcopy-19", "llvm-readelf-19")
    assert host().missing() == ("gcc", "ld", "objcopy")


def test_partly_missing(path_of: PathOf) -> None:
    path_of({"clang-19": "clang-19", "ld.lld-19": "ld.lld-19"})
    assert BY_NAME["loongarch"].missing() == ("llvm-objcopy-19", "llvm-readelf-19")


def test_the_toolchains_the_tests_use_are_installed() -> None:
    # What `./dev deps` installs: on this machine's PATH nothing is missing for these targets.
    for name in ("ppc64le", "ppc32", "loongarch"):
        assert BY_NAME[name].missing() == (), name
    assert host().missing() == ()


def test_readelf() -> None:
    assert Path(BY_NAME["loongarch"].readelf()).name == f"llvm-readelf-{arches.CLANG_VERSION}"
    assert Path(BY_NAME["ppc64le"].readelf()).name == "readelf"  # GNU readelf reads every ELF machine
