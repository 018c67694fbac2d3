"""Issue 12 (items 16, 17): reviewer.ktap against the kernel's own KTAP parser, on the kernel's own logs.

The oracle is tools/testing/kunit/kunit_parser.py of the 6.12 tree, imported from there at test
time (never copied). Both read every tools/testing/kunit/test_data/*.log the way they read a
console (kunit_parser.extract_tap_lines / reviewer.ktap.from_console) and the examples in
Documentation/dev-tools/ktap.rst; their trees are flattened to leaves (path of names -> status)
and compared leaf for leaf, with kunit_parser's counts and overall status.

Where the two models differ by design, the mapping says so:
- kunit_parser knows one directive, SKIP: "not ok ... # TIMEOUT" / "# ERROR" are FAILURE to it;
- a test the log cut off (no result line, or planned and never reported) is TEST_CRASHED there,
  Result.ERROR here; kunit_parser names a planned-but-missing one "", we name it ktap.MISSING;
- a test that announced subtests (a version line or "# Subtest:") and ran none is NO_TESTS there;
  here it keeps its own result and the log records the problem;
- kunit_parser reads the kselftest runner's "# "-prefixed program output as diagnostic lines (its
  patterns allow only whitespace before a KTAP line), so a runner's test ("selftests: DIR: NAME")
  is a leaf there, while we also read the program's own results under it.
"""
from __future__ import annotations

import importlib
import io
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from reviewer import ktap
from reviewer.ktap import Result

KUNIT = "tools/testing/kunit"
SPEC = "Documentation/dev-tools/ktap.rst"
Leaf = tuple[tuple[str, ...], str]


@pytest.fixture(scope="module")
def kp(linux: Path) -> ModuleType:
    return kunit_parser(linux)


def kunit_parser(linux: Path) -> ModuleType:
    """The tree's kunit_parser module, with its progress printing sent nowhere."""
    sys.path.insert(0, str(linux / KUNIT))
    try:
        module = importlib.import_module("kunit_parser")
        printer = importlib.import_module("kunit_printer")
    finally:
        sys.path.remove(str(linux / KUNIT))
    module.stdout = printer.Printer(io.StringIO())  # type: ignore[attr-defined]
    return module


def oracle(kp: ModuleType, text: str) -> Any:
    return kp.parse_run_tests(text.splitlines())


# kunit_parser's side -------------------------------------------------------------------------

def kunit_leaves(test: Any, path: tuple[str, ...] = ()) -> Iterator[Leaf]:
    for sub in test.subtests:
        here = (*path, sub.name)
        if sub.subtests:
            yield from kunit_leaves(sub, here)
        else:
            yield here, sub.status.name


def kunit_counts(test: Any) -> tuple[int, int, int, int]:
    c = test.counts
    return c.passed, c.failed, c.crashed, c.skipped


# our side, in kunit_parser's terms ------------------------------------------------------------

def _runner_test(t: ktap.TestCase) -> bool:
    return t.name.startswith("selftests: ")


def _name(t: ktap.TestCase) -> str:
    return "" if t.name == ktap.MISSING else t.name


def _status(t: ktap.TestCase, where: str, log: ktap.KtapLog) -> str:
    if t.result is Result.PASS:
        empty = f"{where}test {t.number} {t.name}: passed without running its subtests"
        return "NO_TESTS" if not t.subtests and not _runner_test(t) and empty in log.problems else "SUCCESS"
    if t.result is Result.ERROR:
        made_up = t.name == ktap.MISSING or t.reason == ktap.CRASHED
        return "TEST_CRASHED" if made_up else "FAILURE"
    statuses = {Result.FAIL: "FAILURE", Result.SKIP: "SKIPPED", Result.TIMEOUT: "FAILURE"}
    assert t.result in statuses, f"{t}: XFAIL/TODO fall back to ok / not ok in kunit_parser, which TestCase does not keep"
    return statuses[t.result]


def our_leaves(log: ktap.KtapLog, tests: tuple[ktap.TestCase, ...] | None = None,
               path: tuple[str, ...] = (), where: str = "") -> Iterator[Leaf]:
    for t in log.tests if tests is None else tests:
        here = (*path, _name(t))
        if t.subtests and not _runner_test(t):
            yield from our_leaves(log, t.subtests, here, f"{where}in test {t.number} {t.name}: ")
        else:
            yield here, _status(t, where, log)


def our_counts(log: ktap.KtapLog) -> tuple[int, int, int, int]:
    """kunit_parser's counting rule: a test's counts are its subtests', or its own status if they have none."""
    def tally(t: ktap.TestCase, where: str) -> list[int]:
        out = [0, 0, 0, 0]
        if t.subtests and not _runner_test(t):
            for sub in t.subtests:
                out = [a + b for a, b in zip(out, tally(sub, f"{where}in test {t.number} {t.name}: "), strict=True)]
        if sum(out) == 0:
            status = _status(t, where, log)
            if status != "NO_TESTS":
                out[["SUCCESS", "FAILURE", "TEST_CRASHED", "SKIPPED"].index(status)] += 1
        return out
    total = [0, 0, 0, 0]
    for t in log.tests:
        total = [a + b for a, b in zip(total, tally(t, ""), strict=True)]
    return total[0], total[1], total[2], total[3]


def our_status(log: ktap.KtapLog | None) -> str:
    if log is None:
        return "FAILURE_TO_PARSE_TESTS"
    passed, failed, crashed, skipped = our_counts(log)
    if not log.tests or passed + failed + crashed + skipped == 0:
        return "NO_TESTS"
    return "TEST_CRASHED" if crashed else "FAILURE" if failed else "SUCCESS" if passed else "SKIPPED"


def compare(kp: ModuleType, text: str) -> list[str]:
    """What differs between the two on TEXT (empty: they agree)."""
    theirs, ours = oracle(kp, text), ktap.from_console(text)
    diffs = []
    if theirs.status.name != our_status(ours):
        diffs.append(f"status: kunit_parser {theirs.status.name}, ours {our_status(ours)}")
    if ours is not None:
        want, got = list(kunit_leaves(theirs)), list(our_leaves(ours))
        diffs += [f"leaf {i}: kunit_parser {w}, ours {g}" for i, (w, g) in enumerate(zip(want, got, strict=False)) if w != g]
        if len(want) != len(got):
            diffs.append(f"{len(want)} leaves in kunit_parser, {len(got)} here")
        if kunit_counts(theirs) != our_counts(ours):
            diffs.append(f"counts (passed, failed, crashed, skipped): kunit_parser {kunit_counts(theirs)}, ours {our_counts(ours)}")
    return diffs


# the tree's inputs ---------------------------------------------------------------------------

def kunit_logs(linux: Path) -> list[Path]:
    return sorted((linux / KUNIT / "test_data").glob("*.log"))


def literal_blocks(rst: str) -> list[str]:
    """The reStructuredText literal blocks (after a line ending in "::"), dedented."""
    blocks, lines = [], rst.splitlines()
    for i, line in enumerate(lines):
        if not line.rstrip().endswith("::"):
            continue
        body = []
        for nxt in lines[i + 1:]:
            if nxt.strip() and not nxt[:1].isspace():
                break
            body.append(nxt)
        text = textwrap.dedent("\n".join(body)).strip("\n")
        if text:
            blocks.append(text + "\n")
    return blocks


# the tests -----------------------------------------------------------------------------------

def test_every_kunit_test_data_log_agrees_leaf_for_leaf(kp: ModuleType, linux: Path) -> None:
    logs = kunit_logs(linux)
    assert len(logs) == 23  # the 6.12 tree's set: none may go missing unnoticed
    diffs = {p.name: d for p in logs if (d := compare(kp, p.read_text()))}
    assert diffs == {}
    rejected = sorted(p.name for p in logs if oracle(kp, p.read_text()).status.name == "FAILURE_TO_PARSE_TESTS")
    # Logs with no KTAP at all: kunit_parser says so, and from_console finds none.
    assert rejected == ["test_insufficient_memory.log", "test_is_test_passed-no_tests_run_no_header.log"]
    assert all(ktap.from_console((linux / KUNIT / "test_data" / r).read_text()) is None for r in rejected)
    # The comparison had something to compare: many leaves, of every kind a leaf can be.
    leaves = [leaf for p in logs for leaf in kunit_leaves(oracle(kp, p.read_text()))]
    assert len(leaves) > 100
    assert {status for _, status in leaves} == {"SUCCESS", "FAILURE", "SKIPPED", "TEST_CRASHED", "NO_TESTS"}


def test_crashed_suite_keeps_its_name_and_passed_cases(kp: ModuleType, linux: Path) -> None:
    text = (linux / KUNIT / "test_data" / "test_kernel_panic_interrupt.log").read_text()
    log = ktap.from_console(text)
    assert log is not None
    suite = log.tests[2]
    assert (suite.number, suite.name, suite.result, suite.reason) == (3, "string-stream-test", Result.ERROR, ktap.CRASHED)
    assert [(s.name, s.result) for s in suite.subtests] == [
        ("string_stream_test_empty_on_creation", Result.PASS), (ktap.MISSING, Result.ERROR), (ktap.MISSING, Result.ERROR)]
    assert oracle(kp, text).subtests[2].name == "string-stream-test"


def test_parse_reads_unprefixed_logs_as_from_console_does(linux: Path) -> None:
    """parse() on a log that is KTAP from its first line (no console around it) gives the same leaves."""
    plain = [p for p in kunit_logs(linux) if re.match(r"K?TAP version", p.read_text())]
    assert len(plain) == 13
    for p in plain:
        text = p.read_text()
        direct, console = ktap.parse(text), ktap.from_console(text)
        assert console is not None and list(our_leaves(direct)) == list(our_leaves(console)), p.name


def test_spec_examples_agree(kp: ModuleType, linux: Path) -> None:
    """ktap.rst's example documents, nested by two spaces, parsed as the spec draws their hierarchy."""
    docs = [b for b in literal_blocks((linux / SPEC).read_text()) if b.startswith("KTAP version")]
    assert len(docs) == 3
    for doc in docs:
        assert compare(kp, doc) == [], doc
        assert ktap.parse(doc).problems == (), doc
    big = ktap.parse(docs[2])
    (main,) = big.tests
    assert (main.name, main.result, [s.name for s in main.subtests]) == (
        "main_test", Result.FAIL, ["example_test_1", "example_test_2", "example_test_3"])
    assert main.subtests[0].subtests[0].diagnostics == ("test_1: initializing test_1",)
    assert [(s.name, s.result, s.reason) for s in main.subtests[2].subtests] == [
        ("test_1", Result.PASS, ""), ("test_2", Result.FAIL, ""), ("test_3", Result.SKIP, "SKIP test_3 skipped")]


def test_spec_result_line_examples_agree(kp: ModuleType, linux: Path) -> None:
    """The spec's single result lines: no document on their own (both reject them), then each as
    the one test of a document."""
    lines = [b for b in literal_blocks((linux / SPEC).read_text()) if b.startswith(("ok ", "not ok "))]
    assert len(lines) == 5
    for line in lines:
        assert oracle(kp, line).status.name == "FAILURE_TO_PARSE_TESTS" and ktap.from_console(line) is None
        assert compare(kp, "KTAP version 1\n1..1\n" + line) == [], line
    timeout = ktap.parse("KTAP version 1\n1..1\n" + next(ln for ln in lines if "TIMEOUT" in ln)).tests[0]
    assert (timeout.name, timeout.result, timeout.reason) == ("test", Result.TIMEOUT, "TIMEOUT 30 seconds")


def test_our_fixtures_agree(kp: ModuleType) -> None:
    """fixtures/ktap/, except the two-document log (kunit_parser stops after the first document's plan)."""
    fixtures = sorted(p for p in (Path(__file__).parents[2] / "fixtures" / "ktap").iterdir()
                      if p.suffix != ".md" and p.name != "run-tests-two-targets.log")
    assert len(fixtures) == 6
    assert {p.name: d for p in fixtures if (d := compare(kp, p.read_text()))} == {}
