"""The vDSO as built (reviewer/compile/vdso.py): real shared objects linked here with a version script
(as the kernel links its vDSO), read with GNU readelf and llvm-readelf-19."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from reviewer.compile import vdso
from reviewer.kernel.arches import BY_NAME

SOURCE = """\
extern int helper_from_elsewhere(void);
int __vdso_clock_data = 7;
int __vdso_gettime(void) { return 1; }
int __vdso_getcpu(void) { return helper_from_elsewhere() + __vdso_clock_data; }
int vdso_internal(void) { return 3; }
int gettime(void) __attribute__((weak, alias("__vdso_gettime")));
"""
# Two functions (and a weak alias) under LINUX_2.6, the data object exported too, the rest local.
VERSIONS = """\
LINUX_2.6 {
global:
\t__vdso_gettime;
\t__vdso_getcpu;
\tgettime;
\t__vdso_clock_data;
local: *;
};
"""
EXPORTED = ("__vdso_getcpu@@LINUX_2.6", "__vdso_gettime@@LINUX_2.6", "gettime@@LINUX_2.6")


def _link(out: Path, name: str, cc: tuple[str, ...]) -> Path:
    """A vDSO-like shared object OUT/arch/x/vdso/NAME linked by CC (a compiler and its flags)."""
    d = out / "arch" / "x" / "vdso"
    d.mkdir(parents=True, exist_ok=True)
    (d / "v.c").write_text(SOURCE)
    (d / "v.lds").write_text(VERSIONS)
    subprocess.run([*cc, "-O2", "-shared", "-fPIC", "-nostdlib", "-Wl,--version-script=v.lds", "-o", name, "v.c"], cwd=d, check=True)
    return d / name


def _readelf(image: Path) -> str:
    return subprocess.run(["readelf", "--dyn-syms", "-W", str(image)], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("readelf", ["readelf", "llvm-readelf-19"])
def test_read_lists_the_exported_functions_with_their_version(tmp_path: Path, readelf: str) -> None:
    image = _link(tmp_path, "vdso64.so.dbg", ("gcc",))
    assert "vdso_internal" not in _readelf(image) and "helper_from_elsewhere" in _readelf(image)  # local; undefined
    tool = shutil.which(readelf)
    assert tool, f"{readelf} is not installed"
    got = vdso.read(image, tmp_path, tool)
    # Not the data object, not the undefined helper, not the version node's own ABS symbol, not the local one.
    assert got.symbols == EXPORTED
    assert got.path == "arch/x/vdso/vdso64.so.dbg"
    assert got.names() == {"__vdso_getcpu", "__vdso_gettime", "gettime"}
    assert got.exports("__vdso_getrandom", "__vdso_getcpu") and not got.exports(*vdso.GETRANDOM)


def test_read_a_ppc64le_image(tmp_path: Path) -> None:
    # ELFv2: a function with a local entry point shows `[<localentry>: 8]` (GNU) or `[<other: 0x60>]`
    # (LLVM) between Vis and Ndx; the target's own readelf must still give its name.
    image = _link(tmp_path, "vdso64.so.dbg", ("powerpc64le-linux-gnu-gcc",))
    assert "[<localentry>: 8]" in _readelf(image)
    ppc = BY_NAME["ppc64le"]
    assert vdso.read(image, tmp_path, ppc.readelf()).symbols == EXPORTED
    assert vdso.read(image, tmp_path, shutil.which("llvm-readelf-19") or "llvm-readelf-19").symbols == EXPORTED


def test_read_a_loongarch_image_with_the_targets_llvm_readelf(tmp_path: Path) -> None:
    la = BY_NAME["loongarch"]
    image = _link(tmp_path, "vdso.so.dbg", ("clang-19", "--target=loongarch64-linux-gnu", "-fuse-ld=lld"))
    assert Path(la.readelf()).name == "llvm-readelf-19"
    assert vdso.read(image, tmp_path, la.readelf()).symbols == EXPORTED


def test_images_prefers_the_dbg_file_and_ignores_symlinks(tmp_path: Path) -> None:
    d = tmp_path / "arch" / "powerpc" / "kernel" / "vdso"
    d.mkdir(parents=True)
    for name in ("vdso64.so", "vdso64.so.dbg", "vdso32.so", "vdso-image-64.c", "vdso64.lds", "vdso64.so.dbg.cmd", "note.so"):
        (d / name).write_text("x")
    (d / "vdso.so").symlink_to(d / "vdso64.so")
    (d / "vdsox.so.dbg").symlink_to(d / "vdso64.so.dbg")
    (d / "vdso_dir.so").mkdir()
    got = vdso.images(tmp_path, "arch/powerpc/kernel/vdso/")
    assert got == [d / "vdso32.so", d / "vdso64.so.dbg"]


def test_images_of_a_directory_not_built(tmp_path: Path) -> None:
    assert vdso.images(tmp_path, "arch/x86/entry/vdso/") == []
    (tmp_path / "arch" / "x86" / "entry" / "vdso").mkdir(parents=True)
    assert vdso.images(tmp_path, "arch/x86/entry/vdso/") == []


def test_images_then_read_end_to_end(tmp_path: Path) -> None:
    # A build directory as kbuild leaves it: the stripped image, the .dbg one and a link to it.
    dbg = _link(tmp_path, "vdso64.so.dbg", ("gcc",))
    subprocess.run(["objcopy", "--strip-all", str(dbg), str(dbg.with_suffix(""))], check=True)
    (dbg.parent / "vdso.so").symlink_to("vdso64.so")
    [image] = vdso.images(tmp_path, "arch/x/vdso/")
    assert image == dbg
    assert vdso.read(image, tmp_path, "readelf").symbols == EXPORTED
