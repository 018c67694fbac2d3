"""Issue 17, item 1 (the reporting part): every selftest and benchmark row says which kernel it ran on,
in the terminal, the JSON and the reply mail; and a series that changes the kernel, tested on the
host's kernel, says that both columns tested the same kernel."""
from __future__ import annotations

import json
import os
from dataclasses import replace

from rich.console import Console

from reviewer.ktap import Result
from reviewer.model import BenchResult, Level, Person, Review, Series, TestRun
from reviewer.report import email, shape, terminal
from reviewer.report import json as json_report
from reviewer.selftests import stage

HOST = stage.host_kernel()
BASE, PATCHED = "booted c4bac1c88685 x86_64 tcg", "booted 0123456789ab x86_64 tcg"


def test_the_host_is_the_running_kernel() -> None:
    assert f"host {os.uname().release} {os.uname().machine}" == HOST


def test_ran_on_in_one_phrase() -> None:
    assert shape.ran_on(HOST, HOST) == HOST
    assert shape.ran_on(BASE, PATCHED) == "booted x86_64 tcg: base c4bac1c88685, patched 0123456789ab"
    assert shape.ran_on(BASE, "") == BASE
    assert shape.ran_on(HOST, BASE) == f"base: {HOST}; patched: {BASE}"


def _run(tree: str, where: str, test: str = "vDSO:vdso_test_getrandom") -> TestRun:
    return TestRun(test, tree, "plain", Result.PASS, 0.5, where=where)


def _review(*runs: TestRun, bench: BenchResult | None = None) -> Review:
    series = Series("x", 1, "x@example.org", Person("A", "a@example.org"), None, 0, ())
    return Review(series, selftests=runs, benchmarks=(bench,) if bench else ())


def test_every_report_names_the_kernel() -> None:
    bench = BenchResult.of("vdso_test_getrandom bench-single", "plain", "vdso", "s", [1.0], [1.1], 1).judged(1.25)
    bench = replace(bench, where=HOST)
    review = _review(_run("base", HOST), _run("patched", HOST), bench=bench)
    doc = json.loads(json_report.dumps(review))
    assert [r["where"] for r in doc["selftests"]] == [HOST, HOST] and doc["benchmarks"][0]["where"] == HOST
    console = Console(width=250, record=True)
    terminal.render(review, console)
    text = console.export_text()
    row = next(ln for ln in text.splitlines() if "vDSO:vdso_test_getrandom" in ln)
    assert HOST in row and HOST in next(ln for ln in text.splitlines() if "bench-single" in ln)
    lines = email._selftest_lines(review)
    assert lines[0] == f"  selftests (base -> patched), run on {HOST}:" and HOST not in lines[1]  # said once
    assert f"1 runs, on {HOST}:" in email._bench_lines(review)[1]


def test_rows_on_different_kernels_each_say_their_own() -> None:
    review = _review(_run("base", HOST), _run("patched", HOST), _run("base", BASE, "boot:dmapool_test"),
                     _run("patched", PATCHED, "boot:dmapool_test"))
    lines = email._selftest_lines(review)
    assert lines[0] == "  selftests (base -> patched):"
    assert lines[1].endswith(f"(run on {HOST})")
    assert lines[2].endswith("(run on booted x86_64 tcg: base c4bac1c88685, patched 0123456789ab)")


def test_host_caveat_only_when_the_kernel_changes() -> None:
    runs = [_run("base", HOST), _run("patched", HOST)]
    caveat = stage.host_caveat(["arch/x86/entry/vdso/vgetrandom.c", "tools/testing/selftests/vDSO/Makefile"], runs)
    assert caveat is not None and caveat.level is Level.INFO and caveat.rule == "selftests/host-kernel"
    assert "arch/x86/entry/vdso/vgetrandom.c" in caveat.message and "Makefile" not in caveat.message
    assert os.uname().release in caveat.message
    assert stage.host_caveat(["tools/testing/selftests/vDSO/vdso_test_getrandom.c", "Documentation/x.rst"], runs) is None
    assert stage.host_caveat(["mm/dmapool.c"], [_run("base", BASE), _run("patched", PATCHED)]) is None  # booted: no caveat


def test_the_reply_says_what_was_build_tested() -> None:
    from reviewer.model import BuiltStep, BuiltTarget

    steps = (BuiltStep(0, "built"), BuiltStep(1, "failed"), BuiltStep(2, "built"))
    review = Review(_review().series, builds=(BuiltTarget("ppc64le", "ARCH=powerpc CROSS_COMPILE=powerpc64le-linux-gnu-", steps),
                                              BuiltTarget("arm64", "ARCH=arm64", problem="aarch64-linux-gnu-gcc not installed")))
    assert email._build_lines(review) == [
        "  build (W=1, the base then each patch):",
        "    ppc64le (ARCH=powerpc CROSS_COMPILE=powerpc64le-linux-gnu-): 2 built, 1 failed of 3 steps",
        "    arm64: not built (aarch64-linux-gnu-gcc not installed)",
    ]
