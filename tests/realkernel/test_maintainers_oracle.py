"""reviewer/tree/maintainers.py against the 6.12 tree's own scripts/get_maintainer.pl, run at test time.

For each path below (files, directories, globbed areas, paths an X: line excludes, paths only an N:
regex names, paths only THE REST covers), the entries our parser says cover it are the sections
`get_maintainer.pl --no-git --no-git-fallback --sections -f PATH` prints. The script runs in the
tree's working directory (it reads MAINTAINERS there and answers its `-d` from the files there);
it writes nothing. Whether a bare F: name is a directory we ask the tree as the checks do (the
commit's file listing, reviewer.tree.maintainers.dirs_after).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reviewer.model import Person, Series
from reviewer.tree.base import GitBaseTree
from reviewer.tree.maintainers import CATCH_ALL, IsDir, dirs_after, parse

ONLY_THE_REST = ("include/uapi/linux/ntsync.h", "kernel/time/test_udelay.c", "include/linux/mman.h", "README",
                 "lib/zlib_dfltcc/dfltcc.h", "drivers/cdx/controller/Kconfig")  # `F: lib/*`, `F: drivers/cdx/*` stop there
PATHS = (
    # plain files and top-level files (`F: *`)
    "mm/dmapool.c", "drivers/net/dummy.c", "arch/loongarch/vdso/vgetrandom.c", "lib/vdso/getrandom.c",
    "drivers/misc/ntsync.c", "Makefile", *ONLY_THE_REST,
    # globs: `*` within a component, `*` across components in a `dir/` pattern, `?`, `[ch]`, `dir/*`
    "arch/loongarch/include/asm/vdso/getrandom.h", "drivers/media/platform/qcom/camss/camss.c",
    "arch/arm/boot/dts/intel/axm/Makefile", "tools/testing/selftests/kvm/include/x86_64/processor.h",
    "drivers/input/misc/da7280.c", "drivers/regulator/da903x-regulator.c", "include/linux/slab.h",
    "drivers/edac/altera_edac.h", "fs/9p/Kconfig", "lib/842/842.h",
    # a pattern's end is not anchored
    "Documentation/ABI/testing/sysfs-class-power-mp2629", "arch/arm64/boot/dts/marvell/armada-8040-mcbin.dtsi",
    # a directory named without its slash: what is below it, and (not) its siblings
    "drivers/acpi/arm64/iort.c", "include/asm-generic/bitops.h", "include/asm-generic/bitops/atomic.h",
    "Documentation/userspace-api/media/cec.h.rst.exceptions",
    # X: excludes
    "drivers/iio/light/adjd_s311.c", "arch/arm/boot/dts/Makefile", "drivers/char/agp/generic.c",
    "arch/riscv/net/bpf_jit_comp64.c", "drivers/usb/cdns3/cdnsp-debug.h", "security/selinux/hooks.c",
    "drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c",
    # N: regexes
    "include/linux/page-flags.h", "Documentation/devicetree/bindings/serial/actions,owl-uart.yaml",
    "drivers/soc/tegra/fuse/fuse-tegra.c", "Documentation/devicetree/bindings/arm/sunxi/allwinner,sun4i-a10-mbus.yaml",
    # directories
    "mm", "lib", "drivers/net/ethernet/freescale/dpaa2", "tools/testing/selftests/vDSO", "drivers/acpi/arm64",
)


def _oracle(linux: Path, paths: tuple[str, ...]) -> dict[str, list[str]]:
    """The section titles get_maintainer.pl prints for each path, in one run for all of them: it prints
    each path's sections most specific first, so THE REST (`F: *`, depth -1, the only such) ends each."""
    done = subprocess.run(["perl", "scripts/get_maintainer.pl", "--no-git", "--no-git-fallback", "--sections", "-f", *paths],
                          cwd=linux, capture_output=True, text=True, check=True, timeout=300)
    groups: list[list[str]] = [[]]
    for block in done.stdout.split("\n\n"):
        if block.strip():
            groups[-1].append(block.strip("\n").split("\n", 1)[0])
            if groups[-1][-1] == CATCH_ALL:
                groups.append([])
    assert groups.pop() == [] and len(groups) == len(paths), done.stdout[-2000:]
    return dict(zip(paths, groups, strict=True))


@pytest.fixture(scope="module")
def oracle(linux: Path) -> dict[str, list[str]]:
    return _oracle(linux, PATHS)


@pytest.fixture(scope="module")
def is_dir(linux: Path, linux_head: str) -> IsDir:
    return dirs_after(Series("", 0, "", Person("", ""), None, 0, ()), GitBaseTree(linux, linux_head))


def test_paths_exist(linux: Path) -> None:
    assert [p for p in PATHS if not (linux / p).exists()] == []


@pytest.mark.parametrize("path", PATHS)
def test_entries_are_get_maintainers_sections(linux: Path, oracle: dict[str, list[str]], is_dir: IsDir, path: str) -> None:
    maintainers = parse((linux / "MAINTAINERS").read_text())
    asked = path + "/" if (linux / path).is_dir() else path  # get_maintainer.pl adds the slash to a directory
    ours = [e.title for e in maintainers.covering(asked, is_dir)]
    assert sorted(ours) == sorted(oracle[path])
    covered = maintainers.covered(asked, is_dir)
    assert covered is (path not in ONLY_THE_REST)
