"""The goal kbuild builds from a touched file (reviewer/compile/sources.py), on a small kernel-shaped tree
written here, then on the real 6.12 tree (each expectation read off its Kbuild and Makefiles)."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.compile import objects, sources, steps
from reviewer.kernel.arches import BY_NAME
from tests.realkernel.kernel import ensure_repo

# Shaped like 6.12's files, each reduced to the lines that matter here.
TREE = {
    "Kbuild": (
        "bounds-file := include/generated/bounds.h\n"
        "targets := kernel/bounds.s\n"
        "$(bounds-file): kernel/bounds.s FORCE\n\t$(call filechk,offsets,__LINUX_BOUNDS_H__)\n"
        "$(timeconst-file): kernel/time/timeconst.bc FORCE\n\t$(call filechk,gentimeconst)\n"
        "targets += arch/$(SRCARCH)/kernel/asm-offsets.s\n"
        "arch/$(SRCARCH)/kernel/asm-offsets.s: $(timeconst-file) $(bounds-file)\n"
        "prepare: $(offsets-file) missing-syscalls\n\t@:\n"
        "obj-y += kernel/ mm/ lib/\n"
    ),
    "kernel/bounds.c": "#include <linux/kbuild.h>\n",
    "kernel/time/timeconst.bc": "scale=0\n",
    "kernel/sched/Makefile": "obj-y += core.o\nobj-y += build_policy.o\n",
    "kernel/sched/core.c": "#include \"sched.h\"\n",
    "kernel/sched/build_policy.c": "#include \"sched.h\"\n#include \"idle.c\"\n#include \"rt.c\"\n",
    "kernel/sched/rt.c": "int rt;\n",
    "kernel/sched/idle.c": "int idle;\n",
    "kernel/sched/sched.h": "struct rq;\n",
    "kernel/sched/unlisted.c": "int nobody_includes_me;\n",
    "arch/powerpc/kernel/Makefile": "obj-y := cputable.o\nextra-y += vmlinux.lds\n",
    "arch/powerpc/kernel/asm-offsets.c": "#include <linux/kbuild.h>\n",
    "arch/powerpc/kernel/cputable.c": "int cpu;\n",
    "arch/powerpc/kernel/vmlinux.lds.S": "SECTIONS {}\n",
    "arch/powerpc/kernel/unused.lds.S": "SECTIONS {}\n",
    "arch/x86/kernel/Makefile": "obj-y += process.o\n",
    "arch/x86/kernel/asm-offsets.c": "#ifdef CONFIG_X86_32\n# include \"asm-offsets_32.c\"\n#else\n# include "
                                     "\"asm-offsets_64.c\"\n#endif\n",
    "arch/x86/kernel/asm-offsets_64.c": "int x;\n",
    "arch/x86/kvm/Makefile": (
        "obj-$(CONFIG_KVM_X86) += kvm.o\n"
        "$(obj)/kvm-asm-offsets.h: $(obj)/kvm-asm-offsets.s FORCE\n\t$(call filechk,offsets,__KVM_ASM_OFFSETS_H__)\n"
        "targets += kvm-asm-offsets.s\n"
    ),
    "arch/x86/kvm/kvm-asm-offsets.c": "#include <linux/kbuild.h>\n",
    "arch/arm64/kvm/Makefile": "always-y := hyp_constants.h hyp-constants.s\n$(obj)/hyp-constants.s: $(src)/hyp/hyp-constants.c FORCE\n",
    "arch/arm64/kvm/hyp/Makefile": "obj-y += nvhe/\n",
    "arch/arm64/kvm/hyp/hyp-constants.c": "#include <linux/kbuild.h>\n",
    "lib/Makefile": (
        "obj-$(CONFIG_CRC32)\t+= crc32.o\n"
        "hostprogs\t:= gen_crc32table\n"
        "hostprogs += mkstandalone\n"
        "$(obj)/crc32.o: $(obj)/crc32table.h\n"
        "$(obj)/crc32table.h: $(obj)/gen_crc32table\n\t$(call cmd,crc32)\n"
    ),
    "lib/crc32.c": "#include \"crc32table.h\"\n",
    "lib/gen_crc32table.c": "#include <stdio.h>\n",
    "lib/mkstandalone.c": "#include <stdio.h>\n",
    "crypto/Makefile": "rsa_generic-y := rsapubkey.asn1.o\n",
    "crypto/rsapubkey.asn1": "RsaPubKey ::= SEQUENCE {}\n",
    "drivers/scsi/Makefile": "obj-$(CONFIG_SCSI_NCR_Q720) += 53c700.o\n",
    "drivers/scsi/53c700.c": "#include \"53c700_d.h\"\n",
    "drivers/scsi/53c700_d.h_shipped": "static u32 SCRIPT[] = {};\n",
    "scripts/mod/file2alias.c": "int main(void);\n",
    "scripts/mod/modpost.h": "struct module;\n",
    "mm/Makefile": "obj-y := memory.o\n",
    "mm/memory.c": "int page;\n",
    "include/linux/mm.h": "struct page;\n",
}


def _listing(directory: str) -> list[str]:
    prefix = f"{directory}/" if directory else ""
    return [p[len(prefix):] for p in TREE if p.startswith(prefix) and "/" not in p[len(prefix):]]


def _goal(path: str, srcarch: str = "powerpc") -> str | None:
    return sources.goal(path, srcarch, TREE.get, _listing)


@pytest.mark.parametrize(("path", "srcarch", "expected"), [
    # The top-level Kbuild compiles these to .s for include/generated/*.h: `prepare`, never their .o.
    ("arch/powerpc/kernel/asm-offsets.c", "powerpc", "prepare"),
    ("arch/x86/kernel/asm-offsets.c", "x86", "prepare"),
    ("kernel/bounds.c", "powerpc", "prepare"),
    ("kernel/time/timeconst.bc", "powerpc", "prepare"),  # read by a rule of the top-level Kbuild
    ("arch/x86/kernel/asm-offsets_64.c", "x86", "prepare"),  # only #included by x86's asm-offsets.c
    # Another arch's asm-offsets.c is not this build's (arch/$(SRCARCH)/): its Makefile does not name it.
    ("arch/powerpc/kernel/asm-offsets.c", "x86", "arch/powerpc/kernel/asm-offsets.o"),
    # A file only #included by a sibling object: the includer's object.
    ("kernel/sched/rt.c", "powerpc", "kernel/sched/build_policy.o"),
    ("kernel/sched/idle.c", "powerpc", "kernel/sched/build_policy.o"),
    # A directory's .s for a generated header, by name or by an explicit rule in a parent's Makefile.
    ("arch/x86/kvm/kvm-asm-offsets.c", "x86", "arch/x86/kvm/kvm-asm-offsets.s"),
    ("arch/arm64/kvm/hyp/hyp-constants.c", "arm64", "arch/arm64/kvm/hyp-constants.s"),
    # A linker script its Makefile names (extra-y += vmlinux.lds); one it does not name builds nothing.
    ("arch/powerpc/kernel/vmlinux.lds.S", "powerpc", "arch/powerpc/kernel/vmlinux.lds"),
    ("arch/powerpc/kernel/unused.lds.S", "powerpc", None),
    # Generated sources: a host program's file (crc32table.h) is read by lib/crc32.o; a .asn1 is compiled
    # as X.asn1.o; a _shipped file is copied to its name, which 53c700.c includes.
    ("lib/gen_crc32table.c", "powerpc", "lib/crc32.o"),
    ("lib/mkstandalone.c", "powerpc", None),  # a host program whose output nothing here uses: no kernel object
    ("crypto/rsapubkey.asn1", "powerpc", "crypto/rsapubkey.asn1.o"),
    ("drivers/scsi/53c700_d.h_shipped", "powerpc", "drivers/scsi/53c700.o"),
    # scripts/: host programs of archprepare's `scripts` and prepare0's scripts/mod.
    ("scripts/mod/file2alias.c", "powerpc", "prepare"),
    ("scripts/mod/modpost.h", "powerpc", None),
    # Plain objects, named by their Makefile or not (kbuild's pattern rule builds either).
    ("mm/memory.c", "powerpc", "mm/memory.o"),
    ("arch/powerpc/kernel/cputable.c", "powerpc", "arch/powerpc/kernel/cputable.o"),
    ("kernel/sched/unlisted.c", "powerpc", "kernel/sched/unlisted.o"),
    # Headers are compiled through the objects that include them.
    ("include/linux/mm.h", "powerpc", None),
    ("kernel/sched/sched.h", "powerpc", None),
])
def test_goal(path: str, srcarch: str, expected: str | None) -> None:
    assert _goal(path, srcarch) == expected


def test_prepared_names_the_s_files_of_the_top_level_kbuild() -> None:
    assert sources.prepared(TREE.get, "powerpc") == {"kernel/bounds.c": "kernel/bounds.s",
                                                     "arch/powerpc/kernel/asm-offsets.c": "arch/powerpc/kernel/asm-offsets.s"}


def test_goals_put_prepare_first_and_once() -> None:
    paths = ["mm/memory.c", "arch/powerpc/kernel/asm-offsets.c", "kernel/bounds.c", "kernel/sched/rt.c", "kernel/sched/idle.c"]
    got = objects.goals(paths, BY_NAME["ppc64le"], TREE.__contains__, TREE.get, _listing)
    assert got == ["prepare", "mm/memory.o", "kernel/sched/build_policy.o"]


def test_make_is_asked_for_prepare_only_when_it_is_alone() -> None:
    # `make prepare mm/memory.o` is a mixed build, run one goal at a time under `set -e` (a failure stops
    # the rest even with -k); every single target builds prepare first anyway.
    assert steps._asked(["prepare", "mm/memory.o", "arch/powerpc/kernel/vdso/"]) == ("mm/memory.o", "arch/powerpc/kernel/vdso/")
    assert steps._asked(["prepare"]) == ("prepare",)


# -- the real 6.12 tree --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def linux() -> Path:
    return ensure_repo()


@pytest.mark.parametrize(("path", "target", "expected"), [
    # Kbuild:30 `targets += arch/$(SRCARCH)/kernel/asm-offsets.s`, Kbuild:12 `targets := kernel/bounds.s`
    ("arch/powerpc/kernel/asm-offsets.c", "ppc32", ["prepare"]),
    ("arch/powerpc/kernel/asm-offsets.c", "ppc64le", ["prepare"]),
    ("arch/x86/kernel/asm-offsets.c", "x86_64", ["prepare"]),
    ("arch/loongarch/kernel/asm-offsets.c", "loongarch", ["prepare"]),
    ("kernel/bounds.c", "x86_64", ["prepare"]),
    # arch/x86/kernel/asm-offsets.c:31 `# include "asm-offsets_64.c"`
    ("arch/x86/kernel/asm-offsets_64.c", "x86_64", ["prepare"]),
    # arch/x86/kvm/Makefile:45-48 `$(obj)/kvm-asm-offsets.h: $(obj)/kvm-asm-offsets.s`, `targets += kvm-asm-offsets.s`
    ("arch/x86/kvm/kvm-asm-offsets.c", "x86_64", ["arch/x86/kvm/kvm-asm-offsets.s"]),
    # arch/arm64/kvm/Makefile:39 `$(obj)/hyp-constants.s: $(src)/hyp/hyp-constants.c FORCE`
    ("arch/arm64/kvm/hyp/hyp-constants.c", "arm64", ["arch/arm64/kvm/hyp-constants.s"]),
    # arch/powerpc/kernel/Makefile:129 `extra-y += vmlinux.lds`
    ("arch/powerpc/kernel/vmlinux.lds.S", "ppc64le", ["arch/powerpc/kernel/vmlinux.lds"]),
    # lib/Makefile:306 `hostprogs := gen_crc32table`, :316 `$(obj)/crc32table.h: $(obj)/gen_crc32table`; lib/crc32.c:48
    ("lib/gen_crc32table.c", "x86_64", ["lib/crc32.o"]),
    # crypto/Makefile:46 `rsa_generic-y := rsapubkey.asn1.o`
    ("crypto/rsapubkey.asn1", "x86_64", ["crypto/rsapubkey.asn1.o"]),
    # drivers/scsi/53c700.c includes "53c700_d.h", made from 53c700_d.h_shipped (scripts/Makefile.lib:291)
    ("drivers/scsi/53c700_d.h_shipped", "x86_64", ["drivers/scsi/53c700.o"]),
    # kernel/sched/build_policy.c includes rt.c
    ("kernel/sched/rt.c", "x86_64", ["kernel/sched/build_policy.o"]),
    ("lib/sort.c", "x86_64", ["lib/sort.o"]),
    ("scripts/mod/file2alias.c", "x86_64", ["prepare"]),
])
def test_goals_on_the_real_tree(linux: Path, path: str, target: str, expected: list[str]) -> None:
    def read(p: str) -> str | None:
        f = linux / p
        return f.read_text(errors="replace") if f.is_file() else None

    def listing(d: str) -> list[str]:
        return [p.name for p in (linux / d).iterdir() if p.is_file()]

    assert objects.goals([path], BY_NAME[target], lambda p: (linux / p).exists(), read, listing) == expected
