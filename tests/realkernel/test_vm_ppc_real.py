"""Issue 17 for another architecture: a powerpc series is tested in ppc64le kernels booted under qemu-system-ppc64 -M pseries.

The series makes the powerpc vDSO's getrandom() (arch/powerpc/kernel/vdso/vgetrandom.c) hand every
buffer to the syscall: vdso_test_getrandom's own check catches it ("vgetrandom passed buffer to
syscall getrandom unexpectedly"), but only in a powerpc kernel that has the change. The kernels
are cross-built (powerpc64le-linux-gnu-gcc) in REVIEWER_BOOT_CACHE, the tests too, and the guest's
userspace is the ppc64el root `review guest-root ppc64le` makes from Debian's packages (made here
when the machine has none: that command is part of what is tested).

The same file is also the 32-bit vDSO's (VDSO32): with --arch ppc32 the series is tested in 32-bit
kernels booted under qemu-system-ppc -M mac99, whose userspace is an initramfs of the statically
built tests and the tool's own init (Debian 12 has no 32-bit powerpc bash or busybox).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from tests.helpers import review
from tests.realkernel.kernel import BOOT_CACHE as CACHE
from tests.realkernel.kernel import GUEST_ROOTS as ROOTS
from tests.realkernel.kernel import edit_series
from tests.realkernel.test_vm_real import (
    BENCH,
    FLAGS,
    SPIN,
    TEST,
    _qemu_running,
    _runs,
    _why,
    bench_text,
    caught_in_its_guests,
    guest_root,
    panic_series,
    short_bench,
    syscall_series,
)

pytestmark = [pytest.mark.slow, pytest.mark.boot]
SRC = "arch/powerpc/kernel/vdso/vgetrandom.c"
GENERIC = "lib/vdso/getrandom.c"


@pytest.fixture(scope="module")
def ppc_series(linux: Path, linux_head: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return syscall_series(linux, linux_head, SRC, "\treturn __cvdso_getrandom_data(vd, buffer, len, flags, opaque_state, opaque_len);\n",
                          "powerpc/vdso: getrandom: Always use the syscall", tmp_path_factory.mktemp("series") / "ppc.mbox",
                          includes="#include <asm/vdso/getrandom.h>\n")


@pytest.fixture(scope="module")
def ppc_root() -> str:
    """The ppc64el guest root, made with the tool's own command when this machine has none."""
    return guest_root(ROOTS, "ppc64le", "ppc64el")


def test_a_powerpc_series_is_tested_in_its_ppc64le_kernels(linux: Path, linux_head: str, ppc_series: Path, ppc_root: str,
                                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", CACHE)
    monkeypatch.setenv("REVIEWER_GUEST_ROOTS", ppc_root)
    vm_said = caught_in_its_guests(linux, linux_head, ppc_series, "ppc64le", tmp_path / "tmp")
    assert vm_said == [("info", "the ppc64le guests ran the 64-bit vDSO only: a little-endian kernel has no VDSO32")], vm_said


def test_arch_tests_a_generic_change_and_its_benchmark_in_the_kernels_of_another_architecture(
        linux: Path, linux_head: str, ppc_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # lib/vdso/getrandom.c is every architecture's: the series' own arch is the host's, --arch ppc64le asks for
    # powerpc's kernels. The review's worktrees did not check out arch/powerpc/ (the series does not touch it):
    # the tests' `make ARCH=powerpc headers` needs it, and gets it. The series is the x86_64 benchmark's (a spin in
    # every call, on the base with bench-single's trials 250 times fewer): the test passes on both kernels, and
    # bench-single, two runs per side in each side's ppc64le guest, plain and timens, shows the vdso flavour several
    # times slower in its figures, and no verdict: two runs a side are not enough for one, however far apart (the
    # verdict itself, with five runs a side in TCG guests, is test_vm_real.py's; five here would add six ppc64le
    # boots, ~150 s, to CI). The default threshold under TCG, 1.5x: the libc and syscall flavours do the same work on
    # both sides, yet timens runs under TCG here were 1.25x (12.0 s against 9.6 s) and 1.32x apart.
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", CACHE)
    monkeypatch.setenv("REVIEWER_GUEST_ROOTS", ppc_root)
    base = short_bench(linux, linux_head)
    mbox, _ = edit_series(linux, base, GENERIC, FLAGS, SPIN + FLAGS, "vdso: getrandom: Spin in every call",
                          "Every architecture's vDSO getrandom() slower, on purpose.", tmp_path / "generic.mbox")
    result = review(mbox, "--tree", linux, "--tests", TEST, "--arch", "ppc64le", "--env", "plain,timens", "--bench-runs", "2",
                    "--no-checkpatch", "--format", "json", tmp=tmp_path / "tmp", timeout=3600)
    assert result.rc == ExitStatus.OK, _why(result)
    doc = result.json()
    runs = _runs(doc)
    built = {v["result"] for (_, _, env), v in runs.items() if env == "-"}
    assert built == {"pass"}, _why(result)  # the kernels, the tests' build (make headers included) and their run list
    for tree in ("base", "patched"):
        for env in ("plain", "timens"):
            assert runs[(TEST, tree, env)]["result"] == "pass" and runs[(TEST, tree, env)]["where"].endswith(" ppc64le tcg"), _why(result)
    marks = {(b["metric"], b["env"]): b for b in doc["benchmarks"] if b["name"] == BENCH}
    assert set(marks) == {(m, e) for m in ("vdso", "libc", "syscall") for e in ("plain", "timens")}, doc["benchmarks"]
    assert {b["threshold"] for b in marks.values()} == {1.5}, bench_text(doc)
    for env in ("plain", "timens"):
        vdso = marks[("vdso", env)]
        assert vdso["runs"] == 2 and vdso["where"].startswith("booted ppc64le tcg: base "), bench_text(doc)
        # The spin, in powerpc's vDSO: its slowest base run against its fastest patched run, and its ratio against the
        # flavours the spin does not touch (CI once saw those two runs a side 0.65x to 1.3x apart, and vdso 5.8x).
        assert min(vdso["patched_runs"]) > 3 * max(vdso["base_runs"]), bench_text(doc)
        assert vdso["ratio"] > 3 * max(marks[(m, env)]["ratio"] for m in ("libc", "syscall")), bench_text(doc)
    assert {b["verdict"] for b in marks.values()} == {"not-enough-runs"}, bench_text(doc)
    assert all("not enough runs for a verdict (2 runs per side" in b["verdict_text"] for b in marks.values()), bench_text(doc)
    assert not any(f["rule"] == "benchmarks" for f in doc["findings"]), doc["findings"]  # figures, never a finding
    assert _qemu_running() == []
    result.assert_nothing_left()


def test_the_vdso32_path_is_tested_in_32_bit_powerpc_kernels(linux: Path, linux_head: str, ppc_series: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", CACHE)
    assert caught_in_its_guests(linux, linux_head, ppc_series, "ppc32", tmp_path / "tmp", "--arch", "ppc32") == []


def test_a_32_bit_guest_that_panics_or_hangs_is_its_finding_and_leaves_no_qemu(linux: Path, linux_head: str, tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # The initramfs guest's own ways to end: QEMU exits at the panic (-no-reboot, panic=-1), and our /init stops a hung test
    # at its timeout and goes on. The panic series is the x86_64 tests' (init/main.c, every architecture's).
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", CACHE)
    result = review(panic_series(linux, linux_head, tmp_path / "panic.mbox"), "--tree", linux, "--tests", TEST, "--arch", "ppc32",
                    "--run-on", "vm", "--bench-runs", "0",
                    "--no-checkpatch", "--format", "json", tmp=tmp_path / "panic", timeout=3600)
    assert result.rc == ExitStatus.SELFTESTS, _why(result)
    doc = result.json()
    runs = _runs(doc)
    assert runs[(TEST, "base", "plain")]["result"] == "pass"
    reason = runs[(TEST, "patched", "plain")]["reason"]
    assert reason == "not run: the kernel died: Kernel panic - not syncing: reviewer test: a panic on purpose"
    errors = [f for f in doc["findings"] if f["level"] == "error"]
    assert [(f["rule"], f["message"]) for f in errors] == [
        ("vm", "the patched kernel: Kernel panic - not syncing: reviewer test: a panic on purpose")]
    # The console's trace, from the panic to the kernel thread's entry. (Not kernel_init by name: panic() does not return,
    # so on ppc32 its return address is past kernel_init's end and the unwinder names the next symbol.)
    quote = errors[0]["quote"]
    assert quote[0].startswith("Kernel panic") and "Call Trace:" in "\n".join(quote), quote
    assert any("vpanic+" in line for line in quote) and any("ret_from_kernel_user_thread+" in line for line in quote), quote
    assert _qemu_running() == []
    result.assert_nothing_left()

    path = "tools/testing/selftests/vDSO/vdso_test_getrandom.c"
    old = "\tksft_print_header();\n"
    mbox, _ = edit_series(linux, linux_head, path, old, old + "\tfor (;;)\n\t\tpause();\n", "selftests/vDSO: Hang on purpose",
                          "A test that never ends.", tmp_path / "hang.mbox")
    result = review(mbox, "--tree", linux, "--tests", TEST, "--arch", "ppc32", "--run-on", "vm", "--test-timeout", "5",
                    "--env", "plain,timens", "--bench-runs", "0", "--no-checkpatch", "--format", "json", tmp=tmp_path / "hang",
                    timeout=3600)
    assert result.rc == ExitStatus.SELFTESTS, _why(result)
    runs = _runs(result.json())
    for env in ("plain", "timens"):
        assert runs[(TEST, "base", env)]["result"] == "pass"
        hung = runs[(TEST, "patched", env)]
        assert hung["result"] == "timeout" and hung["reason"].startswith("killed after 5s (--test-timeout"), hung
        assert 5 <= hung["seconds"] < 15 and hung["where"].endswith(" ppc32 tcg"), hung
    assert _qemu_running() == []
    result.assert_nothing_left()
