"""THE architecture registry (reviewer/kernel/arches.py): which architectures a series is built for, with which toolchain."""
from __future__ import annotations

import ast
import re
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


# --- the registry: every entry complete and consistent, and the one place that names an architecture ----------------


@pytest.mark.parametrize("a", arches.ARCHES, ids=[a.name for a in arches.ARCHES])
def test_every_entry_is_complete(a: arches.Arch) -> None:
    assert a.name and a.arch and a.srcarch and a.packages
    assert a.clang != bool(a.cross)  # a gcc cross prefix, or clang: one toolchain
    assert a.vdso and all(d.startswith(f"arch/{a.srcarch}/") and d.endswith("/") for d in a.vdso)
    assert not (a.bootable and a.unbootable)  # a guest, or (said in --run-on vm's finding) why none can be booted
    for gap in a.gaps:
        assert re.compile(gap.path).pattern.startswith(f"^arch/{a.srcarch}/") and gap.message
    if a.also_for:
        assert re.compile(a.also_for).pattern.startswith(f"^arch/{a.srcarch}/")


@pytest.mark.parametrize("g", arches.GUESTS.values(), ids=list(arches.GUESTS))
def test_every_guest_says_how_it_boots(g: arches.Arch) -> None:
    assert g.qemu.startswith("qemu-system-") and g.qemu_package and g.deb and g.make_target and g.image and g.guest_symbols
    assert g.machine if g.initramfs else not g.machine  # QEMU's -M for our own initramfs guest; vng --arch <deb> picks its own
    assert g.image == "vmlinux" or g.image.startswith(f"arch/{g.srcarch}/boot/")
    assert all(f.startswith("/") and pkg for f, pkg in g.firmware)
    assert g.build_minutes > 0 and g.bench_minutes > 0 and not g.unbootable


def test_names_are_unique_and_the_lookups_round_trip() -> None:
    names = [a.name for a in arches.ARCHES]
    assert len(set(names)) == len(names) == len(arches.BY_NAME)
    assert len({a.deb for a in arches.GUESTS.values()}) == len(arches.GUESTS)  # one guest root a Debian architecture
    assert len({a.uname for a in arches.ARCHES if a.uname}) == len([a for a in arches.ARCHES if a.uname])
    for a in arches.ARCHES:
        assert arches.BY_NAME[a.name] is a and arches.find(a.name) is a
        first = arches.of_dir(a.srcarch)
        assert first is not None and first.srcarch == a.srcarch and not first.also_for
        assert arches.find(a.srcarch) is (a if a.name == a.srcarch else arches.BY_NAME.get(a.srcarch, first))
        assert (a.name in arches.GUESTS) == a.bootable
        if a.bootable:
            assert arches.guest(a.name) is a and arches.guest(a.srcarch) is not None
    assert arches.of_dir("powerpc") is arches.BY_NAME["ppc64le"] and arches.guest("powerpc") is arches.BY_NAME["ppc64le"]
    assert arches.of_dir("x86") is arches.X86_64 and arches.find("mips") is None and arches.guest("loongarch") is None


def test_the_machines_own_is_the_registrys_entry_with_its_own_gcc(monkeypatch: pytest.MonkeyPatch) -> None:
    for a in arches.ARCHES:
        if a.uname:
            monkeypatch.setattr(arches.platform, "machine", lambda u=a.uname: u)
            assert host().name == a.name and host().cross == "" and host().srcarch == a.srcarch and a.native
            assert a.toolchain == host() and all(b.toolchain is b for b in arches.ARCHES if b.name != a.name)
    monkeypatch.setattr(arches.platform, "machine", lambda: "mips64")
    assert (host().name, host().arch, host().packages) == ("mips64", "mips64", ("gcc",))


REVIEWER = Path(__file__).resolve().parents[3] / "reviewer"
# The architecture names (and Debian's and uname's) appear in code only in kernel/arches.py (the CLI's help texts
# are made from it too). Not checked: docstrings and comments (prose explaining a measured fact).


def _arch_names() -> set[str]:
    return {n for a in arches.ARCHES for n in (a.name, a.deb, a.uname) if n}


def _strings(path: Path) -> list[tuple[int, str]]:
    """Every string constant of PATH but the docstrings, f-strings' pieces included."""
    tree = ast.parse(path.read_text(), str(path))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def named_in(path: Path, root: Path = REVIEWER.parent) -> list[str]:
    """Where PATH's code names an architecture: a string that is one, or holds one as a word (not inside a path)."""
    word = re.compile(rf"(?<![\w/-])({'|'.join(map(re.escape, sorted(_arch_names())))})(?![\w/-])")
    exact = _arch_names() | {a.srcarch for a in arches.ARCHES}
    return [f"{path.relative_to(root)}:{line}: {text[:80]!r}" for line, text in _strings(path)
            if text in exact or word.search(text)]


def test_architecture_names_are_written_only_in_the_registry() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted(REVIEWER.rglob("*.py")):
        if path != REVIEWER / "kernel" / "arches.py" and (hits := named_in(path)):
            found[str(path.relative_to(REVIEWER.parent))] = hits
    assert found == {}


def test_the_name_check_catches_a_table_elsewhere(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('"""A docstring may say x86_64."""\nVDSO = {"ppc64le": "arch/powerpc/kernel/vdso/"}\n'
                     'def f(a: str) -> str:\n    return f"booted {a} riscv64" if a != "powerpc" else "arch/s390x/"\n')
    assert [h.split(": ", 1)[0] for h in named_in(probe, tmp_path)] == ["probe.py:2", "probe.py:4", "probe.py:4"]
