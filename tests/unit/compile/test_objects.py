"""Make goals and the Kconfig symbols that guard them (reviewer/compile/objects.py), on Makefiles and
Kconfig files written here, and once against the real 6.12 tree (guards read off its Makefiles by hand)."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.compile import objects
from reviewer.kernel import arches
from reviewer.kernel.arches import BY_NAME
from tests.realkernel.kernel import ensure_repo

X86, PPC64, LOONG = BY_NAME["x86_64"], BY_NAME["ppc64le"], BY_NAME["loongarch"]


def _reader(files: dict[str, str]) -> objects.Read:
    return files.get


# -- goals ---------------------------------------------------------------------------------------

TOUCHED = (
    "mm/foo.c", "arch/x86/lib/memcpy_64.S", "arch/x86/kernel/vmlinux.lds.S", "include/linux/foo.h",
    "arch/x86/entry/vdso/vclock_gettime.c", "arch/x86/include/asm/vdso/getrandom.h", "lib/vdso/getrandom.c",
    "arch/powerpc/kernel/time.c", "mm/gone.c", "mm/Makefile", "mm/Kconfig", "Documentation/mm/foo.rst",
)
EXISTING = {p for p in TOUCHED if p != "mm/gone.c"} | {"arch/x86/entry/vdso/Makefile", "arch/powerpc/kernel/vdso/Makefile"}


def test_goals_for_x86() -> None:
    # .c and .S are objects (not a linker script), headers/Kconfig/Makefiles none of their own, a
    # file the step does not have (mm/gone.c) none, every vDSO file the one vDSO directory.
    assert objects.goals(TOUCHED, X86, EXISTING.__contains__) == ["mm/foo.o", "arch/x86/lib/memcpy_64.o", "arch/x86/entry/vdso/"]


def test_goals_for_another_arch() -> None:
    # x86 files are not powerpc's; lib/vdso/ is every arch's vDSO: here the powerpc vDSO directory.
    assert objects.goals(TOUCHED, PPC64, EXISTING.__contains__) == ["mm/foo.o", "arch/powerpc/kernel/vdso/", "arch/powerpc/kernel/time.o"]


def test_a_vdso_file_without_the_targets_vdso_makefile_is_no_goal() -> None:
    # LoongArch's vDSO directory has no Makefile in this tree: no goal rather than "No rule to make target".
    assert objects.goals(["lib/vdso/getrandom.c", "include/vdso/getrandom.h"], LOONG, EXISTING.__contains__) == []
    assert objects.goals(["include/vdso/getrandom.h"], X86, EXISTING.__contains__) == ["arch/x86/entry/vdso/"]


def test_goals_only_for_what_kbuild_compiles() -> None:
    # tools/ (selftests), samples/ and Documentation/ .c files are not kernel objects: `make
    # tools/testing/selftests/vDSO/vdso_test_getrandom.o` would run the selftest's Makefile under kbuild.
    paths = ["tools/testing/selftests/vDSO/vdso_test_getrandom.c", "Documentation/foo/example.c", "samples/bpf/x.c", "mm/foo.c"]
    assert objects.goals(paths, X86, lambda _p: True) == ["mm/foo.o"]


def test_compiled() -> None:
    yes = ["mm/foo.c", "include/linux/mm.h", "mm/Kconfig", "arch/x86/Kconfig.debug", "mm/Makefile", "fs/ext4/Kbuild",
           "arch/x86/entry/vdso/vdso.lds.S", "arch/x86/lib/memcpy_64.S", "lib/vdso/Makefile"]
    no = ["Documentation/mm/foo.rst", "tools/testing/selftests/vDSO/Makefile", "tools/lib/x.c", "samples/bpf/x.c", "MAINTAINERS",
          "scripts/checkpatch.pl", "arch/powerpc/kernel/time.c", "arch/powerpc/kernel/vdso/vdso64.lds.S", "mm/README"]
    assert [p for p in yes if not objects.compiled(p, X86)] == []
    assert [p for p in no if objects.compiled(p, X86)] == []
    assert objects.compiled("arch/powerpc/kernel/time.c", PPC64) and not objects.compiled("arch/x86/lib/memcpy_64.S", PPC64)


# -- guards --------------------------------------------------------------------------------------

TREE = {
    "Kbuild": "obj-y\t\t\t+= kernel/\nobj-$(CONFIG_NET)\t+= net/\n",
    "Makefile": "libs-y\t\t:= lib/\ncore-y += usr/\n",
    "net/Makefile": "obj-$(CONFIG_FOO)\t+= foo/ \\\n\t\t\t   bar/\nobj-y += core/\n",
    "net/foo/Makefile": (
        "# obj-$(CONFIG_NOPE) += a.o (a comment)\n"
        "obj-$(CONFIG_FOO_CORE) += foo.o\n"
        "foo-y := a.o \\\n\tb.o\n"
        "foo-$(CONFIG_FOO_EXTRA)\t+= c.o\n"
        "obj-$(CONFIG_FOO_ALONE) += d.o e.o \\\n\t\tf.o\n"
        "ccflags-$(CONFIG_FOO_DEBUG) += -DDEBUG\n"
        "CFLAGS_a.o := -O2\n"
        "targets += g.o\n"
    ),
    "net/bar/Makefile": "obj-y += x.o\n",
    "net/core/Kbuild": "obj-y += y.o\n",
    "lib/Makefile": "obj-$(CONFIG_ZLIB)\t+= z.o\nlib-y += w.o\n",
    "kernel/Makefile": "obj-y = fork.o\nobj-$(CONFIG_TIMERS) += time/\n",
    "kernel/time/Makefile": "obj-$(CONFIG_TIME_NS)\t\t+= namespace.o\n",
}


@pytest.mark.parametrize(("goal", "expected"), [
    ("net/foo/a.o", ["FOO_CORE", "FOO", "NET"]),  # a composite object's line, the directory's, the top-level Kbuild's
    ("net/foo/b.o", ["FOO_CORE", "FOO", "NET"]),  # ... on a continuation line
    ("net/foo/c.o", ["FOO_EXTRA", "FOO_CORE", "FOO", "NET"]),  # a guarded part of a composite object
    ("net/foo/f.o", ["FOO_ALONE", "FOO", "NET"]),  # a continuation line of an obj- line
    ("net/foo/g.o", ["FOO", "NET"]),  # in no obj- line: only its directories'
    ("net/bar/x.o", ["FOO", "NET"]),  # the directory on the parent's continuation line
    ("net/core/y.o", ["NET"]),  # a Kbuild file; obj-y guards nothing
    ("net/foo/", ["FOO", "NET"]),  # a directory goal
    ("lib/z.o", ["ZLIB"]),  # lib/ is the top-level Makefile's libs-y: unguarded
    ("lib/w.o", []),
    ("kernel/time/namespace.o", ["TIME_NS", "TIMERS"]),
    ("init/main.o", []),  # no Makefile at all
])
def test_guards(goal: str, expected: list[str]) -> None:
    assert objects.guards(goal, _reader(TREE)) == expected


# -- depends -------------------------------------------------------------------------------------

KCONFIG = {
    "net/foo/Kconfig": (
        "config FOO\n"
        "\ttristate \"foo\"\n"
        "\tdepends on NET && INET\n"
        "\tdepends on IPV6 || !IPV6\n"
        "\tdepends on !KMSAN # a comment\n"
        "\tdepends on BAR=y\n"
        "\tdepends on m\n"
        "\tselect CRC32\n"
        "\n"
        "config FOO_CORE\n"
        "\tbool\n"
        "\tdepends on FOO&&PCI # FOO is wanted already\n"
        "\n"
        "menu \"things\"\n"
        "\tdepends on MENU_ONLY\n"
        "endmenu\n"
        "config UNWANTED\n"
        "\tdepends on NOT_ASKED\n"
    ),
    "net/Kconfig": "menuconfig FOO_EXTRA\n\tbool \"extra\"\n\tdepends on SYSFS\n",
    "Kconfig": "config FOO_ALONE\n\tdepends on TOP_LEVEL_NOT_READ\n",
}


def test_depends_keeps_plain_conjunctions_only() -> None:
    got = objects.depends(["FOO", "FOO_CORE", "FOO_EXTRA"], ["net/foo"], _reader(KCONFIG))
    assert got == ["NET", "INET", "PCI", "SYSFS"]


def test_depends_reads_only_the_kconfig_files_of_the_dirs_and_their_parents() -> None:
    assert objects.depends(["FOO"], ["lib"], _reader(KCONFIG)) == []
    assert objects.depends(["FOO_EXTRA"], ["net/bar", "net/foo"], _reader(KCONFIG)) == ["SYSFS"]


# -- the real 6.12 tree --------------------------------------------------------------------------

def _linux() -> Path:
    """The 6.12 tree, made from Debian's linux-source-6.12 the first time (as the real-kernel tier does)."""
    return ensure_repo()


def _read_tree(root: Path) -> objects.Read:
    def read(path: str) -> str | None:
        p = root / path
        return p.read_text(errors="replace") if p.is_file() else None
    return read


@pytest.mark.parametrize(("goal", "expected"), [
    # mm/Makefile:79 `obj-$(CONFIG_HAS_DMA) += dmapool.o`; Kbuild:85 `obj-y += mm/`
    ("mm/dmapool.o", ["HAS_DMA"]),
    # lib/Makefile:161 `obj-$(CONFIG_CRC32) += crc32.o`; Makefile:758 `libs-y := lib/`
    ("lib/crc32.o", ["CRC32"]),
    # arch/x86/entry/Makefile:17 `obj-y += vdso/`; arch/x86/Kbuild:4 `obj-y += entry/`; Kbuild:81 `obj-y += arch/$(SRCARCH)/`
    ("arch/x86/entry/vdso/", []),
    # kernel/time/Makefile:26 `obj-$(CONFIG_TIME_NS) += namespace.o`; kernel/Makefile:59 `obj-y += time/`; Kbuild:83 `obj-y += kernel/`
    ("kernel/time/namespace.o", ["TIME_NS"]),
    # fs/ext4/Makefile:6 `obj-$(CONFIG_EXT4_FS) += ext4.o`, :8-13 `ext4-y := ... inode.o ...` (continued),
    # :15 `ext4-$(CONFIG_EXT4_FS_POSIX_ACL) += acl.o`; fs/Makefile:65 `obj-$(CONFIG_EXT4_FS) += ext4/`; Kbuild:86 `obj-y += fs/`
    ("fs/ext4/inode.o", ["EXT4_FS"]),
    ("fs/ext4/acl.o", ["EXT4_FS_POSIX_ACL", "EXT4_FS"]),
    # net/sched/Makefile:58 `obj-$(CONFIG_NET_SCH_FQ) += sch_fq.o`; net/Makefile:15 `obj-y += ... sched/ ...`;
    # Kbuild:97 `obj-$(CONFIG_NET) += net/`
    ("net/sched/sch_fq.o", ["NET_SCH_FQ", "NET"]),
    # drivers/net/wireguard/Makefile:5-8 `wireguard-y += noise.o`, :17 `obj-$(CONFIG_WIREGUARD) := wireguard.o`;
    # drivers/net/Makefile:13 `obj-$(CONFIG_WIREGUARD) += wireguard/`; drivers/Makefile:92 `obj-y += net/`
    ("drivers/net/wireguard/noise.o", ["WIREGUARD"]),
])
def test_guards_on_the_real_tree(goal: str, expected: list[str]) -> None:
    assert objects.guards(goal, _read_tree(_linux())) == expected


def test_depends_on_the_real_tree() -> None:
    # drivers/net/Kconfig:77-79: `depends on NET && INET`, `depends on IPV6 || !IPV6`, `depends on !KMSAN # ...`
    assert objects.depends(["WIREGUARD"], ["drivers/net/wireguard"], _read_tree(_linux())) == ["NET", "INET"]
    # fs/ext4/Kconfig `config EXT4_FS` has only selects
    assert objects.depends(["EXT4_FS"], ["fs/ext4"], _read_tree(_linux())) == []


def test_an_included_c_file_is_compiled_through_its_includer_on_the_real_tree() -> None:
    # kernel/sched/Makefile names fair.o but not rt.o: build_policy.c has `#include "rt.c"`.
    root = _linux()
    read = _read_tree(root)

    def listing(d: str) -> list[str]:
        return [p.name for p in (root / d).iterdir() if p.is_file()]

    def exists(p: str) -> bool:
        return (root / p).exists()

    x86 = arches.host()
    assert objects.goals(["kernel/sched/rt.c", "kernel/sched/fair.c", "lib/sort.c"], x86, exists, read, listing) == [
        "kernel/sched/build_policy.o", "kernel/sched/fair.o", "lib/sort.o"]
    assert objects.goals(["kernel/sched/rt.c"], x86, exists) == ["kernel/sched/rt.o"]  # without READ: the file's own
