"""Where the selftests run (--run-on), and the guest kernel's fragment."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from reviewer import vm
from reviewer.vm import kernel

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
    assert not ppc.vm and ppc.missing.startswith("no powerpc guest can be booted here yet")
    both = vm.decide(["arch/powerpc/kernel/vdso/getrandom.S", "arch/x86/entry/vdso/vgetrandom.c"], "auto", tree)
    assert both.vm  # the host's architecture is among the series': its guest is the one booted
    bare = vm.decide(LIB, "vm", tmp_path / "nowhere")
    assert not bare.vm and "is not a kernel tree with arch/x86/" in bare.missing
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(vm.sys, "executable", str(tmp_path / "empty" / "python"))
    none = vm.decide(LIB, "vm", tree)
    assert not none.vm and none.missing.startswith("booting a guest needs vng, qemu-system-x86_64, udevadm")
    assert "virtme-ng (pip), qemu-system-x86, udev" in none.missing


def test_the_fragment_is_the_userspace_set_and_the_tests_own_config(tmp_path: Path) -> None:
    d = tmp_path / "tools/testing/selftests/timens"
    d.mkdir(parents=True)
    (d / "config").write_text("CONFIG_TIME_NS=y\nCONFIG_GENERIC_VDSO_TIME_NS=m\n# a comment\n# CONFIG_X is not set\nnonsense\n")
    lines = kernel.fragment(tmp_path, ["timens", "vDSO"])  # vDSO has no config file in 6.12
    assert lines[: len(kernel.USERSPACE)] == tuple(f"CONFIG_{s}=y" for s in kernel.USERSPACE)
    assert lines[len(kernel.USERSPACE):] == ("CONFIG_GENERIC_VDSO_TIME_NS=y", "# CONFIG_X is not set")  # TIME_NS: already there
    (d / "config").unlink()
    (d / "config").symlink_to("/etc/passwd")
    assert kernel.asked(tmp_path, "timens") == []  # the series' file: never through a link
