from __future__ import annotations

import pytest

from reviewer import ktap
from reviewer.ktap import Result, parse
from tests.conftest import FIXTURES

KTAP = FIXTURES / "ktap"

RUNNER = """TAP version 13
1..3
# timeout set to 45
# selftests: vDSO: vdso_test_gettimeofday
# TAP version 13
# 1..2
# ok 1 gettimeofday via vDSO
# ok 2 clock_gettime via vDSO
# # Totals: pass:2 fail:0 xfail:0 xpass:0 skip:0 error:0
ok 1 selftests: vDSO: vdso_test_gettimeofday
# selftests: vDSO: vdso_test_getrandom
# TAP version 13
# 1..2
# ok 1 getrandom via libc
# not ok 2 getrandom via vDSO # SKIP vDSO has no __vdso_getrandom
ok 2 selftests: vDSO: vdso_test_getrandom # SKIP
# selftests: vDSO: vdso_test_chacha
not ok 3 selftests: vDSO: vdso_test_chacha # TIMEOUT 45 seconds
"""


def test_kselftest_runner_output_with_nested_tests() -> None:
    log = parse(RUNNER)
    assert (log.version, log.plan, log.problems) == ("TAP 13", 3, ())
    names = [(t.number, t.name, t.result) for t in log.tests]
    assert names == [
        (1, "selftests: vDSO: vdso_test_gettimeofday", Result.PASS),
        (2, "selftests: vDSO: vdso_test_getrandom", Result.SKIP),
        (3, "selftests: vDSO: vdso_test_chacha", Result.TIMEOUT),
    ]
    first = log.tests[0]
    assert [(s.name, s.result) for s in first.subtests] == [("gettimeofday via vDSO", Result.PASS), ("clock_gettime via vDSO", Result.PASS)]
    assert "selftests: vDSO: vdso_test_gettimeofday" in first.diagnostics
    assert log.tests[1].subtests[1].reason == "SKIP vDSO has no __vdso_getrandom"
    assert log.tests[2].reason == "TIMEOUT 45 seconds"


def test_ktap_indented_subtests_and_directives() -> None:
    text = """KTAP version 1
1..2
    KTAP version 1
    1..3
    ok 1 case_a
    not ok 2 case_b # XFAIL known broken
    ok 3 case_c # TODO later
ok 1 suite_one
not ok 2 suite_two # exit=1
"""
    log = parse(text)
    assert log.version == "KTAP 1" and log.problems == ()
    assert [s.result for s in log.tests[0].subtests] == [Result.PASS, Result.XFAIL, Result.TODO]
    assert log.tests[1].result is Result.FAIL and log.tests[1].reason == "exit=1"


def test_deeper_nesting() -> None:
    text = "KTAP version 1\n1..1\n    1..1\n        1..1\n        ok 1 leaf\n    ok 1 middle\nok 1 top\n"
    (top,) = parse(text).tests
    assert top.subtests[0].name == "middle" and top.subtests[0].subtests[0].name == "leaf"


def test_missing_plan_is_recorded_not_raised() -> None:
    log = parse("TAP version 13\nok 1 a\nok 2 b\n")
    assert log.plan is None and "no plan line (1..N)" in log.problems
    assert [t.result for t in log.tests] == [Result.PASS, Result.PASS]


def test_truncated_log() -> None:
    text = "TAP version 13\n1..3\nok 1 a\n# selftests: vDSO: b\n# TAP version 13\n# 1..4\n# ok 1 x\n"
    log = parse(text)
    assert [t.result for t in log.tests] == [Result.PASS, Result.ERROR, Result.ERROR]
    assert any("never reported a result" in p for p in log.problems)
    assert any("plan 1..3 but only 2 results" in p for p in log.problems)


def test_garbage_and_bail_out() -> None:
    log = parse("TAP version 13\n1..2\nSegmentation fault\nok 1 a\nBail out! no more\nok 2 b\n")
    assert any("not KTAP: Segmentation fault" in p for p in log.problems)
    assert any("Bail out! no more" in p for p in log.problems)
    assert [t.result for t in log.tests] == [Result.PASS, Result.ERROR]


def test_empty_input() -> None:
    log = parse("")
    assert (log.version, log.plan, log.tests, log.problems) == (None, None, (), ())


def test_counts() -> None:
    assert parse(RUNNER).counts()[Result.PASS] == 1


# Issue 12, items 16 and 17: fixtures/ktap/ (see its README for what each log is).

def _read(name: str) -> str:
    return (KTAP / name).read_text()


def _tree(tests: tuple[ktap.TestCase, ...]) -> list[tuple[str, Result, object]]:
    return [(t.name, t.result, _tree(t.subtests)) for t in tests]


def test_spec_two_space_nesting() -> None:
    log = parse(_read("spec-two-space.ktap"))
    assert (log.version, log.plan, log.problems) == ("KTAP 1", 2, ())
    assert _tree(log.tests) == [
        ("ringbuf", Result.FAIL, [("ringbuf_push", Result.PASS, []), ("ringbuf_wrap", Result.FAIL, []),
                                  ("ringbuf_drain", Result.SKIP, [])]),
        ("pagefrag", Result.PASS, [("pagefrag_orders", Result.PASS, [("order_0", Result.PASS, []), ("order_3", Result.PASS, [])])]),
    ]
    ringbuf = log.tests[0]
    assert ringbuf.diagnostics == ("ringbuf: pass:1 fail:1 skip:1 total:3",)  # printed at the parent's depth
    assert ringbuf.subtests[1].diagnostics == ("ringbuf_wrap: EXPECTATION FAILED at lib/ringbuf_kunit.c:88",)
    assert ringbuf.subtests[2].reason == "SKIP needs CONFIG_RINGBUF_DRAIN"


def test_tab_nesting_of_older_kunit() -> None:
    want = [
        ("bitfield", Result.PASS, [("test_bitfields_constants", Result.PASS, []), ("test_bitfields_variables", Result.PASS, [])]),
        ("frob", Result.FAIL, [("frob_parse", Result.FAIL, []),
                               ("frob_params", Result.PASS, [("param-0", Result.PASS, []), ("param-1", Result.PASS, [])]),
                               ("frob_empty", Result.SKIP, [])]),
    ]
    console, plain = ktap.from_console(_read("kunit-tab.log")), parse(_read("kunit-tab.log"))
    assert console is not None and _tree(console.tests) == want and console.problems == ()
    assert _tree(plain.tests) == want
    assert [p.rsplit(": not KTAP: ", 1)[1] for p in plain.problems] == [
        "kunit bitfield: all tests passed", "Expected ret == 0, but", "ret == -22", "kunit frob: one or more tests failed"]


def test_console_prefix_and_a_crashed_suite() -> None:
    log = ktap.from_console(_read("console-caller-id.log"))
    assert log is not None and (log.version, log.plan) == ("KTAP 1", 2)
    hexdump, frob = log.tests
    assert [(s.name, s.result) for s in hexdump.subtests] == [
        ("hexdump_short", Result.PASS), ("hexdump_long", Result.PASS), ("hexdump_ascii", Result.PASS)]
    assert (frob.number, frob.name, frob.result, frob.reason) == (2, "frob", Result.ERROR, ktap.CRASHED)
    assert [(s.number, s.name, s.result) for s in frob.subtests] == [
        (1, "frob_open", Result.PASS), (2, ktap.MISSING, Result.ERROR), (3, ktap.MISSING, Result.ERROR)]
    assert log.problems == (
        "test 2 frob: output of a test that never reported a result (crashed or truncated log?)",
        "in test 2 frob: plan 1..3 but only 1 results (truncated log?)")


def test_console_leading_space() -> None:
    text = _read("console-leading-space.log")
    for log in (parse(text), ktap.from_console(text)):
        assert log is not None
        assert _tree(log.tests) == [("strscpy", Result.PASS, [("strscpy_test_basic", Result.PASS, []),
                                                             ("strscpy_test_truncate", Result.PASS, [])])]
    assert ktap.from_console(text) == parse(text.replace(" random: crng init done\n", "").replace(" reboot: System halted\n", ""))


def test_from_console_without_ktap() -> None:
    assert ktap.from_console("[    0.1] Linux version 6.12.0\n[    0.2] Kernel panic - not syncing: VFS: Unable to mount root fs\n") is None
    assert ktap.from_console("") is None


def test_harness_progress_lines_are_not_subtests() -> None:
    log = parse(_read("harness.log"))
    assert (log.plan, log.problems) == (4, ())
    assert [(t.name, t.result, t.subtests) for t in log.tests] == [
        ("global.open_close", Result.PASS, ()), ("global.bad_flags", Result.FAIL, ()),
        ("mapped.read_back", Result.SKIP, ()), ("mapped.slow_read", Result.FAIL, ())]
    bad = log.tests[1]
    assert bad.diagnostics == ("RUN           global.bad_flags ...", "frob_test.c:57:bad_flags:Expected -1 (-1) == fd (3)",
                               "bad_flags: Test terminated by assertion", "FAIL  global.bad_flags")
    assert log.tests[2].reason == "SKIP no /dev/frob"


def test_runner_around_harness_output() -> None:
    log = parse(_read("runner-harness.log"))
    assert (log.plan, log.problems) == (2, ())
    frob, sysfs = log.tests
    assert (frob.name, frob.result, frob.reason) == ("selftests: frob: frob_test", Result.FAIL, "exit=1")
    assert _tree(frob.subtests) == [("global.open_close", Result.PASS, []), ("global.bad_flags", Result.FAIL, []),
                                    ("global.read_back", Result.SKIP, [])]
    assert frob.diagnostics == ("timeout set to 45", "selftests: frob: frob_test")
    assert "frob_test.c:57:bad_flags:Expected -1 (-1) == fd (3)" in frob.subtests[1].diagnostics
    assert (sysfs.name, sysfs.result, sysfs.subtests) == ("selftests: frob: frob_sysfs", Result.SKIP, ())


def test_two_documents_of_a_multi_target_run() -> None:
    log = parse(_read("run-tests-two-targets.log"))
    assert (log.version, log.plan, log.problems) == ("TAP 13", 3, ())
    assert [(t.number, t.name, t.result, len(t.subtests)) for t in log.tests] == [
        (1, "selftests: frob: frob_open", Result.PASS, 2),
        (1, "selftests: vDSO: vdso_test_gettimeofday", Result.PASS, 0),
        (2, "selftests: vDSO: vdso_test_getcpu", Result.SKIP, 0)]
    assert log.counts()[Result.PASS] == 2


def test_a_truncated_document_before_the_next() -> None:
    log = parse("TAP version 13\n1..2\nok 1 a\nTAP version 13\n1..1\nok 1 b\n")
    assert [(t.name, t.result) for t in log.tests] == [("a", Result.PASS), (ktap.MISSING, Result.ERROR), ("b", Result.PASS)]
    assert log.problems == ("document 1: plan 1..2 but only 1 results (truncated log?)",)


def test_a_suite_without_its_result_before_the_next_suite() -> None:
    text = ("KTAP version 1\n1..2\n    KTAP version 1\n    # Subtest: a\n    1..2\n    ok 1 a1\n"
            "    KTAP version 1\n    # Subtest: b\n    1..1\n    ok 1 b1\nok 2 b\n")
    log = parse(text)
    assert _tree(log.tests) == [("a", Result.ERROR, [("a1", Result.PASS, []), (ktap.MISSING, Result.ERROR, [])]),
                                ("b", Result.PASS, [("b1", Result.PASS, [])])]
    assert any("test 1 a: output of a test that never reported a result" in p for p in log.problems)


def test_nested_diagnostic_that_reads_like_a_result() -> None:
    """Under the runner "# ok all good" is a program's own message: a nested result needs its number."""
    log = parse("TAP version 13\n1..1\n# selftests: frob: t\n# ok all good\nok 1 selftests: frob: t\n")
    assert (log.problems, log.tests[0].subtests) == ((), ())
    assert log.tests[0].diagnostics == ("selftests: frob: t", "ok all good")


def test_bail_out_in_one_program_under_the_runner() -> None:
    text = ("TAP version 13\n1..2\n# selftests: frob: a\n# TAP version 13\n# 1..3\n# ok 1 x\n# Bail out! no /dev/frob\n"
            "# ok 2 y\nnot ok 1 selftests: frob: a # exit=1\n# selftests: frob: b\nok 2 selftests: frob: b\n")
    log = parse(text)
    assert _tree(log.tests) == [("selftests: frob: a", Result.FAIL, [("x", Result.PASS, []), (ktap.MISSING, Result.ERROR, []),
                                                                      (ktap.MISSING, Result.ERROR, [])]),
                                ("selftests: frob: b", Result.PASS, [])]
    assert log.problems[0] == "in test 1 selftests: frob: a: line 7: Bail out! no /dev/frob"


def test_numbering_and_second_plan_are_problems() -> None:
    log = parse("KTAP version 1\n1..2\nok 1 a\nok 3 b\n1..2\n")
    assert [t.number for t in log.tests] == [1, 3]
    assert log.problems == ("line 4: test number 3, expected 2", "line 5: a second plan: 1..2")


def test_a_suite_that_ran_nothing() -> None:
    log = parse("KTAP version 1\n1..1\n  # Subtest: quiet\nok 1 quiet\n")
    assert (log.tests[0].name, log.tests[0].result) == ("quiet", Result.PASS)
    assert log.problems == ("test 1 quiet: passed without running its subtests",)


@pytest.mark.parametrize("name", sorted(p.name for p in KTAP.iterdir() if p.suffix != ".md"))
def test_every_truncation_of_a_fixture_is_recorded_not_raised(name: str) -> None:
    lines = _read(name).splitlines(keepends=True)
    for cut in range(len(lines) + 1):
        text = "".join(lines[:cut])
        for log in (parse(text), ktap.from_console(text)):
            if log is not None:
                assert len(log.tests) >= (log.plan or 0)  # what the plan promised and the log lacks is there, as ERROR
                assert all(p for p in log.problems)
