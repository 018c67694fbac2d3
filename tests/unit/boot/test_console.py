"""Saved serial consoles of real boots (fixtures/boot/*.log, captured by tests/realkernel/test_boot_real.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.boot import ab, intests
from reviewer.kernel import console, kconfig
from reviewer.kernel.qemu import Boot
from reviewer.ktap import Result
from reviewer.model import Level
from reviewer.verdict import BENCH_RUNS

LOGS = Path(__file__).parents[3] / "fixtures" / "boot"
DMAPOOL = intests.BUILTIN[0]
CMDLINE = intests.InTest("kunit:cmdline", "kunit", ("KUNIT", "CMDLINE_KUNIT_TEST"))


def _log(name: str) -> str:
    return (LOGS / name).read_text()


def _side(tree: str, *logs: str, timed_out: bool = False) -> ab.BootedKernel:
    build = kconfig.Build(ok=True, seconds=1.0, image=Path("bzImage"), config=(), log="")
    return ab.BootedKernel(tree, "plain", build, tuple(Boot(_log(n), 2.0, timed_out, "kvm", None, None) for n in logs))


def test_dmapool_times() -> None:
    times = console.dmapool_times(_log("dmapool-base.log"))
    assert list(times) == ["size:16 align:16 blocks:8192", "size:64 align:64 blocks:8192", "size:256 align:256 blocks:8192",
                           "size:1024 align:1024 blocks:2048", "size:4096 align:4096 blocks:1024", "size:68 align:32 blocks:8192"]
    assert all(t > 0 for t in times.values())


def test_a_clean_boot_ends_as_expected() -> None:
    text = _log("dmapool-base.log")
    assert console.expected_end(text)
    assert console.splats(text) == []
    assert list(ab.side_findings(_side("base", "dmapool-base.log"))) == []


def test_ratios_and_slower_warning() -> None:
    # Five boots a side (the runner's default, verdict.BENCH_RUNS), so that a verdict can be reached: see
    # test_one_boot_a_side_is_no_verdict.
    base, slow = _side("base", *["dmapool-base.log"] * BENCH_RUNS), _side("patched", *["dmapool-slow.log"] * BENCH_RUNS)
    bench, findings = ab.compare([DMAPOOL], base, slow, 1.25)
    by_case = {b.metric: b for b in bench}
    assert len(by_case) == 6 and by_case["size:4096 align:4096 blocks:1024"].ratio > 2  # type: ignore[operator]
    assert [f.level for f in findings] == [Level.WARNING]
    assert "dmapool_test is slower on the patched tree (plain): " in findings[0].message


def test_one_boot_a_side_is_no_verdict() -> None:
    bench, findings = ab.compare([DMAPOOL], _side("base", "dmapool-base.log"), _side("patched", "dmapool-slow.log"), 1.25)
    assert findings == [] and {b.verdict.outcome for b in bench if b.verdict} == {"not-enough-runs"} and len(bench) == 6


def test_same_kernel_twice_is_no_warning() -> None:
    bench, findings = ab.compare([DMAPOOL], _side("base", "dmapool-base.log"), _side("patched", "dmapool-base.log"), 1.25)
    assert {b.ratio for b in bench} == {1.0} and findings == []


def test_splat_is_quoted() -> None:
    text = _log("panic.log")
    splats = console.splats(text)
    assert splats[0].first == "kernel BUG at mm/dmapool_test.c:109!"  # the path relative to the tree, not to O=
    assert any("dmapool_checks" in ln for ln in splats[0].quote)  # KALLSYMS: the trace has symbols
    findings = list(ab.side_findings(_side("patched", "panic.log")))
    assert findings and all(f.level is Level.ERROR for f in findings)
    assert findings[0].message.startswith("the patched kernel (plain): ") and findings[0].quote
    run = ab.runs([DMAPOOL], _side("patched", "panic.log"))[1]
    assert (run.result, run.reason) == (Result.FAIL, "kernel BUG at mm/dmapool_test.c:109!")


def test_hung_boot() -> None:
    side = _side("patched", "hang.log", timed_out=True)
    findings = list(ab.side_findings(side))
    assert [f.level for f in findings] == [Level.ERROR]
    assert "hung" in findings[0].message and "VM was killed" in findings[0].message
    assert ab.runs([DMAPOOL], side)[1].result is Result.TIMEOUT
    assert not console.expected_end(_log("hang.log"))


def test_kunit_ktap_from_console() -> None:
    parsed = console.kunit(_log("kunit-cmdline.log"))
    assert parsed is not None
    suite = next(t for t in parsed.tests if t.name == "cmdline")
    assert suite.result is Result.PASS and [s.name for s in suite.subtests] == [
        "cmdline_test_noint", "cmdline_test_lead_int", "cmdline_test_tail_int", "cmdline_test_range"]
    run = ab.runs([CMDLINE], _side("base", "kunit-cmdline.log"))[1]
    assert run.test == "boot:kunit:cmdline" and run.result is Result.PASS


def test_kunit_failure_on_patched_only() -> None:
    failing = _log("kunit-cmdline.log").replace("    ok 1 ", "    not ok 1 ", 1).replace("\nok 1 cmdline", "\nnot ok 1 cmdline")
    base, patched = _side("base", "kunit-cmdline.log"), _side("base", "kunit-cmdline.log")
    patched = ab.BootedKernel("patched", "plain", patched.build,
                              (Boot(failing, 2.0, timed_out=False, accel="kvm", returncode=None, log=None),))
    _, findings = ab.compare([CMDLINE], base, patched, 1.25)
    assert [f.level for f in findings] == [Level.ERROR] and "kunit:cmdline fails on the patched tree" in findings[0].message


@pytest.mark.parametrize(("line", "splat"), [
    ("[    1.0] BUG: kernel NULL pointer dereference, address: 0000000000000000", True),
    ("WARNING: CPU: 0 PID: 1 at mm/dmapool.c:300 pool_check_block+0x1/0x2", True),
    ("dmapool test block 0x1 corrupted at 0x2", True),
    ("Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b", True),
    ("Kernel panic - not syncing: No working init found.  Try passing init= option to kernel.", False),
    ("VFS: Unable to mount root fs on unknown-block(0,0)", False),
    ("dmapool test: size:16   align:16   blocks:8192 time:11860", False),
])
def test_splat_lines(line: str, *, splat: bool) -> None:
    assert bool(console.splats(line)) is splat


def test_first_compiler_error() -> None:
    log = ("  CC      mm/dmapool.o\n../src/mm/dmapool.c:432:9: error: 'blok' undeclared (first use in this function)\n"
           "make[3]: *** [../src/scripts/Makefile.build:229: mm/dmapool.o] Error 1\n")
    assert kconfig.first_error(log, Path("/cache/src")) == ("'blok' undeclared (first use in this function)", "mm/dmapool.c", 432)


def test_fragment() -> None:
    assert kconfig.fragment(["DMAPOOL_TEST"], "debug") == (
        "CONFIG_64BIT=y", "CONFIG_PRINTK=y", "CONFIG_TTY=y", "CONFIG_SERIAL_8250=y", "CONFIG_SERIAL_8250_CONSOLE=y", "CONFIG_BUG=y",
        "CONFIG_KALLSYMS=y", "CONFIG_KUNIT=y", "CONFIG_RUNTIME_TESTING_MENU=y",
        "CONFIG_SYSFS=y", "# CONFIG_SLUB_TINY is not set", "CONFIG_SLUB_DEBUG=y", "CONFIG_SLUB_DEBUG_ON=y", "CONFIG_DMAPOOL_TEST=y")


def test_relevant_kunit_beside(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "frob.c").write_text("int frob;\n")
    (tmp_path / "lib" / "frob_kunit.c").write_text(
        'static struct kunit_suite frob_suite = {\n\t.name = "frob",\n};\nkunit_test_suite(frob_suite);\n')
    (tmp_path / "lib" / "Makefile").write_text("obj-y += frob.o\nobj-$(CONFIG_FROB_KUNIT_TEST) += frob_kunit.o\n")
    found = intests.relevant(["lib/frob.c", "mm/dmapool.c", "README"], tmp_path)
    assert [(t.name, t.symbols) for t, _ in found] == [("dmapool_test", ("DMAPOOL_TEST",)), ("kunit:frob", ("KUNIT", "FROB_KUNIT_TEST"))]
    assert intests.relevant(["Documentation/index.rst"], tmp_path) == []


def test_no_ratios_without_numbers_on_a_side() -> None:
    bench, findings = ab.compare([DMAPOOL], _side("base", "dmapool-base.log"), _side("patched", "panic.log"), 1.25)
    assert bench == [] and findings == []  # the panic is the patched side's own finding


def test_unknown_environment(tmp_path: Path) -> None:
    from reviewer.boot import run_intests
    from reviewer.errors import UsageError

    with pytest.raises(UsageError, match="unknown boot environment 'timens'"):
        run_intests(tmp_path, tmp_path, ["mm/dmapool.c"], ("plain", "timens"), tmp_path / "cache", 60)


def test_nothing_relevant_is_nothing_to_do(tmp_path: Path) -> None:
    from reviewer.boot import run_intests

    assert run_intests(tmp_path, tmp_path, ["README"], ("plain",), tmp_path / "cache", 60).runs == ()


def test_would_run_listing() -> None:
    assert intests.describe(DMAPOOL) == "dmapool_test: tinyconfig + CONFIG_DMAPOOL_TEST=y, booted under QEMU on base and patched"
