from __future__ import annotations

from reviewer.ktap import Result, parse

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
