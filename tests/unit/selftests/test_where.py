"""Where the selftests run (--run-on), and the guest kernel's fragment."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from reviewer.kernel import arches
from reviewer.kernel import guestkernel as kernel
from reviewer.kernel import guestroot as root
from reviewer.kernel.arches import GUESTS
from reviewer.selftests import where as vm

LIB = ["lib/vdso/getrandom.c"]
TOOLS_ONLY = ["tools/testing/selftests/vDSO/vdso_test_getrandom.c", "Documentation/x.rst", "MAINTAINERS"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "arch/x86").mkdir(parents=True)
    (tmp_path / "arch/x86/Makefile").write_text("# x86\n")
    return tmp_path


def test_auto_is_vm_exactly_when_the_kernel_changes(tree: Path) -> None:
    if os.uname().machine != "x86_64":
        pytest.fail("these tests describe an x86_64 machine")
    d = vm.decide(LIB, "auto", tree)
    assert d.vm and not d.missing and "lib/vdso/getrandom.c" in d.why
    d = vm.decide(TOOLS_ONLY, "auto", tree)
    assert not d.vm and not d.missing and d.why == "the series changes nothing the kernel is built from"
    assert not vm.decide(LIB, "host", tree).vm
    assert vm.decide(TOOLS_ONLY, "vm", tree).vm  # asked for: even a tools-only series boots


def test_a_vm_that_cannot_be_booted_says_what_is_missing(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ppc = vm.decide(["arch/powerpc/kernel/vdso/getrandom.S"], "auto", tree)
    assert not ppc.vm and ppc.missing == f"{tree} is not a kernel tree with arch/powerpc/ (its kernel cannot be built)"
    (tree / "arch/powerpc").mkdir()
    (tree / "arch/powerpc/Makefile").write_text("# powerpc\n")
    monkeypatch.setenv("REVIEWER_GUEST_ROOTS", str(tmp_path / "roots"))
    ppc = vm.decide(["arch/powerpc/kernel/vdso/getrandom.S"], "auto", tree)
    assert not ppc.vm and ppc.missing == f"no ppc64el guest root at {tmp_path}/roots/ppc64el" and ppc.fix == "review guest-root ppc64le"
    assert ppc.root is GUESTS["ppc64le"]  # its one lack: what --run-on vm makes itself
    assert ppc.lacking == f"no ppc64el guest root at {tmp_path}/roots/ppc64el (make it: review guest-root ppc64le)"
    assert root.missing(GUESTS["ppc64le"]) == ppc.lacking
    (tmp_path / "roots/ppc64el").mkdir(parents=True)
    (tmp_path / "roots/ppc64el" / root.STAMP).write_text("bash.deb\n")
    ppc = vm.decide(["arch/powerpc/kernel/vdso/getrandom.S"], "auto", tree)
    assert ppc.vm and ppc.arch is not None and ppc.arch.name == "ppc64le"
    both = vm.decide(["arch/powerpc/kernel/vdso/getrandom.S", "arch/x86/entry/vdso/vgetrandom.c"], "auto", tree)
    assert both.vm and both.arch is not None and both.arch.name == "x86_64"  # the host's architecture is among the series'
    assert vm.decide(LIB, "vm", tree, ["ppc64le"]).arch.name == "ppc64le"  # type: ignore[union-attr]  # --arch
    loong = vm.decide(["arch/loongarch/vdso/vgetrandom.c"], "auto", tree)
    assert not loong.vm and loong.missing.startswith("no loongarch guest can be booted here: Debian 12 has no LoongArch gcc")
    missing = vm.decide(LIB, "vm", tree, ["arm"]).missing
    assert missing == "the tool boots no arm guests yet (its guests: x86_64, ppc64le, ppc32, arm64, riscv64, s390x)"
    arm = vm.decide(["arch/arm64/kernel/vdso/vgetrandom.c"], "auto", tree)
    assert not arm.vm and arm.missing == f"{tree} is not a kernel tree with arch/arm64/ (its kernel cannot be built)"
    bare = vm.decide(LIB, "vm", tmp_path / "nowhere")
    assert not bare.vm and "is not a kernel tree with arch/x86/" in bare.missing
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(vm.sys, "executable", str(tmp_path / "empty" / "python"))
    none = vm.decide(LIB, "vm", tree)
    assert not none.vm and none.missing.startswith("booting a x86_64 guest needs vng, qemu-system-x86_64, udevadm") and none.root is None
    assert none.fix.startswith("apt-get install qemu-system-x86 udev make gcc ")  # one command for Debian's, one for virtme-ng
    assert none.fix.endswith(f"; {vm.sys.executable} -m pip install virtme-ng")


def test_the_fragment_is_the_userspace_set_and_the_tests_own_config(tmp_path: Path) -> None:
    d = tmp_path / "tools/testing/selftests/timens"
    d.mkdir(parents=True)
    (d / "config").write_text("CONFIG_TIME_NS=y\nCONFIG_GENERIC_VDSO_TIME_NS=m\n# a comment\n# CONFIG_X is not set\nnonsense\n")
    lines = kernel.fragment(tmp_path, ["timens", "vDSO"])  # vDSO has no config file in 6.12
    own = GUESTS["x86_64"].guest_symbols + kernel.USERSPACE
    assert lines[: len(own)] == tuple(f"CONFIG_{s}=y" for s in own)
    off = tuple(f"# CONFIG_{s} is not set" for s in kernel.UNWANTED)
    assert lines[len(own):] == (*off, "CONFIG_GENERIC_VDSO_TIME_NS=y", "# CONFIG_X is not set")  # TIME_NS: already there
    (d / "config").write_text("CONFIG_INET=y\nCONFIG_IPV6=y\n")  # a test that needs the network keeps it
    net = kernel.fragment(tmp_path, ["timens"])
    assert "# CONFIG_INET is not set" not in net and net[-2:] == ("CONFIG_INET=y", "CONFIG_IPV6=y") and "# CONFIG_VT is not set" in net
    (d / "config").write_text("CONFIG_TIME_NS=y\nCONFIG_GENERIC_VDSO_TIME_NS=m\n")
    ppc = kernel.fragment(tmp_path, ["timens"], GUESTS["ppc64le"])
    assert "CONFIG_PPC_OF_BOOT_TRAMPOLINE=y" in ppc and "CONFIG_ACPI=y" not in ppc and "CONFIG_9P_FS=y" in ppc
    ppc32 = kernel.fragment(tmp_path, ["timens"], GUESTS["ppc32"])  # an initramfs guest: no 9p, virtio or overlay root
    assert "CONFIG_SERIAL_PMACZILOG_TTYS=y" in ppc32 and "CONFIG_TIME_NS=y" in ppc32 and "CONFIG_GENERIC_VDSO_TIME_NS=y" in ppc32
    assert not {f"CONFIG_{s}=y" for s in kernel.SHARED_ROOT} & set(ppc32)
    (d / "config").unlink()
    (d / "config").symlink_to("/etc/passwd")
    assert kernel.asked(tmp_path, "timens") == []  # the series' file: never through a link


def test_a_32_bit_powerpc_guest_needs_no_root_and_no_vng(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "arch/powerpc").mkdir()
    (tree / "arch/powerpc/Makefile").write_text("# powerpc\n")
    monkeypatch.setenv("REVIEWER_GUEST_ROOTS", str(tmp_path / "no-roots"))
    d = vm.decide(["arch/powerpc/kernel/vdso/vgetrandom.c"], "auto", tree, ["ppc32"])
    assert d.vm and d.arch is GUESTS["ppc32"] and not d.missing
    assert root.missing(GUESTS["ppc32"]) == ""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(vm.sys, "executable", str(tmp_path / "empty" / "python"))
    none = vm.decide(["arch/powerpc/kernel/vdso/vgetrandom.c"], "auto", tree, ["ppc32"])
    assert none.missing.startswith("booting a ppc32 guest needs qemu-system-ppc, ") and "vng" not in none.missing
    assert "powerpc-linux-gnu-gcc" in none.missing
    assert none.fix.startswith("apt-get install qemu-system-ppc ") and "gcc-powerpc-linux-gnu" in none.fix
    assert "pip" not in none.fix


def test_guests_say_once_which_vdso_they_cannot_test() -> None:
    gap = vm.uncovered(["arch/powerpc/kernel/vdso/vgetrandom.c", "arch/powerpc/kernel/vdso/vdso32.lds.S"], GUESTS["ppc64le"])
    assert gap is not None and gap.message == "the ppc64le guests ran the 64-bit vDSO only: a little-endian kernel has no VDSO32"
    assert gap.hint is not None and gap.hint.startswith("--arch ppc32 ")
    assert vm.uncovered(["arch/powerpc/kernel/vdso/vgetrandom.c"], GUESTS["ppc32"]) is None
    assert vm.uncovered(["arch/powerpc/mm/fault.c", "lib/vdso/getrandom.c"], GUESTS["ppc64le"]) is None
    compat = vm.uncovered(["arch/arm64/kernel/vdso32/vgettimeofday.c", "arch/arm64/kernel/vdso/vgetrandom.c"], GUESTS["arm64"])
    assert compat is not None and compat.message.startswith("the arm64 guests ran the 64-bit vDSO only: their kernel has no COMPAT")
    assert vm.uncovered(["arch/arm64/kernel/vdso/vgetrandom.c"], GUESTS["arm64"]) is None
    assert vm.uncovered(["arch/arm64/kernel/vdso32/vgettimeofday.c"], GUESTS["x86_64"]) is None


@pytest.mark.parametrize(("name", "srcarch", "path"), [("riscv64", "riscv", "arch/riscv/kernel/vdso/vgettimeofday.c"),
                                                       ("s390x", "s390", "arch/s390/kernel/vdso64/getcpu.c")])
def test_riscv64_and_s390x_guests_boot_an_initramfs_and_name_a_missing_firmware(name: str, srcarch: str, path: str, tree: Path,
                                                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "arch" / srcarch).mkdir()
    (tree / "arch" / srcarch / "Makefile").write_text("# its own\n")
    monkeypatch.setenv("REVIEWER_GUEST_ROOTS", str(tmp_path / "no-roots"))
    d = vm.decide([path], "auto", tree)  # the series' own architecture
    assert d.vm and d.arch is GUESTS[name] and not d.missing and root.missing(GUESTS[name]) == ""
    lost = dataclasses.replace(GUESTS[name], firmware=((str(tmp_path / "fw.bin"), "qemu-system-data"),))
    monkeypatch.setitem(arches.GUESTS, name, lost)
    gone = vm.decide([path], "vm", tree, [name])
    assert not gone.vm and gone.missing == f"booting a {name} guest needs QEMU's firmware {tmp_path}/fw.bin"
    assert gone.fix == "apt-get install qemu-system-data" and gone.lacking == f"{gone.missing} (apt-get install qemu-system-data)"
    monkeypatch.setattr(vm.sys, "executable", str(tmp_path / "empty" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    none = vm.decide([path], "vm", tree, [name])
    assert none.missing.startswith(f"booting a {name} guest needs qemu-system-{name}, ")
    assert none.fix.startswith("apt-get install qemu-system-misc ")


def test_riscv64_and_s390x_kernels_leave_out_what_their_guests_lack(tmp_path: Path) -> None:
    rv = kernel.fragment(tmp_path, ["vDSO"], GUESTS["riscv64"])
    assert "CONFIG_RISCV_ISA_FALLBACK=y" in rv and "CONFIG_SERIAL_OF_PLATFORM=y" in rv  # without it QEMU 7.2's virt boots silently nowhere
    assert "CONFIG_FPU=y" in rv  # Debian's riscv64 programs use the FPU: without it /init dies of SIGILL
    assert "# CONFIG_EFI is not set" in rv  # OpenSBI jumps to the Image: the EFI stub would be 77 objects for nothing
    assert "CONFIG_PCI=y" not in rv and "CONFIG_9P_FS=y" not in rv and "CONFIG_TIME_NS=y" in rv
    s390 = kernel.fragment(tmp_path, ["vDSO"], GUESTS["s390x"])
    assert "CONFIG_SCLP_VT220_CONSOLE=y" in s390 and not {"CONFIG_PCI=y", "CONFIG_RTC_CLASS=y"} & set(s390)
    assert "CONFIG_PCI=y" in kernel.fragment(tmp_path, ["vDSO"], GUESTS["ppc32"])  # mac99's devices are on its PCI bus


def test_the_estimate_says_how_each_guest_boots() -> None:
    assert "a boot per tree (about 30 s under TCG, a few seconds with KVM)" in vm.cost(["plain"], 0)
    assert "a boot per tree (a few seconds under TCG (an initramfs; no KVM" in vm.cost(["plain"], 0, GUESTS["s390x"])
    assert "a boot per tree (about 30 s under TCG (no KVM for another architecture))" in vm.cost(["plain"], 0, GUESTS["arm64"])
    assert "boots once per run and tree, 2 run(s) a tree, each running bench-single in every environment (2)" in \
        vm.cost(["plain", "timens"], 2, GUESTS["ppc64le"])
