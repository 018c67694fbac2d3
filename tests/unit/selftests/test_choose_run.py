from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from reviewer import ktap
from reviewer.model import Change, FileChange, Level, Patch, Person, Review, Series, TestRun
from reviewer.report import email, terminal
from reviewer.report import json as json_report
from reviewer.run.sandbox import Sandbox
from reviewer.selftests.bench import BENCHMARKS, STALL, for_tests, measure, stalls
from reviewer.selftests.choose import TestRef, choose
from reviewer.selftests.run import run_list, run_test, timeout_for

MAINTAINERS = """List of maintainers

VDSO GETRANDOM
M:	Some One <one@example.org>
S:	Maintained
F:	lib/vdso/getrandom.c
F:	arch/*/include/asm/vdso/getrandom.h
F:	tools/testing/selftests/vDSO/

DMA POOL
M:	Pool Keeper <pool@example.org>
F:	mm/dmapool.c
F:	mm/dmapool_test.c
"""


def _series(*paths: str) -> Series:
    files = tuple(FileChange(path=p, old_path=p, change=Change.MODIFIED) for p in paths)
    patch = Patch(1, 1, "x: y", "a@b", Person("A", "a@b"), None, "", "", files=files)
    return Series("x: y", 1, "a@b", Person("A", "a@b"), None, 1, (patch,))


def test_choose_unions_hints_touched_dirs_and_maintainers() -> None:
    series = _series("arch/loongarch/include/asm/vdso/getrandom.h", "tools/testing/selftests/timens/clock.c")
    chosen = {str(c.ref): c.why for c in choose(series, [("vDSO:vdso_test_getrandom", "rule vdso-getrandom-new-arch")], MAINTAINERS)}
    assert set(chosen) == {"vDSO", "timens"}
    assert "rule vdso-getrandom-new-arch" in chosen["vDSO"]
    assert any("MAINTAINERS 'VDSO GETRANDOM' covers arch/loongarch/include/asm/vdso/getrandom.h" in w for w in chosen["vDSO"])
    assert chosen["timens"] == ("the series touches tools/testing/selftests/timens/clock.c",)


def test_choose_nothing_for_unrelated_files() -> None:
    assert choose(_series("mm/dmapool.c"), [], MAINTAINERS) == []


def test_single_tests_stay_single_without_a_dir_reason() -> None:
    chosen = choose(_series("Documentation/index.rst"), [("vDSO:vdso_test_chacha", "rule r")], MAINTAINERS)
    assert [str(c.ref) for c in chosen] == ["vDSO:vdso_test_chacha"]


def test_build_and_run_the_vdso_selftests(built_tree: Path, tmp_path: Path) -> None:
    listed = run_list(built_tree, "vDSO", Sandbox(tmp_path))  # kernel-mini's Makefile: the last two on x86 only
    assert listed.tests == ("vdso_test_gettimeofday", "vdso_test_getrandom", "vdso_test_chacha") and listed.others == ()
    run = run_test(built_tree, TestRef("vDSO", "vdso_test_getrandom"), tree="base", env="plain", sandbox=Sandbox(tmp_path))
    assert run.result is ktap.Result.PASS, run.log
    assert run.subtests and all(t.result is ktap.Result.PASS for t in run.subtests)


def test_timeout_kills_the_test(built_tree: Path, tmp_path: Path) -> None:
    folder = built_tree / "tools/testing/selftests/vDSO"
    (folder / "settings").write_text("timeout=1\n")
    hang = folder / "hang"
    hang.write_bytes((folder / "vdso_test_getrandom").read_bytes())  # an ELF we then replace by a script
    hang.write_text("#!/bin/sh\nsleep 30 &\nsleep 30\n")
    hang.chmod(0o755)
    try:
        assert timeout_for(built_tree, "vDSO") == 1.0
        run = run_test(built_tree, TestRef("vDSO", "hang"), tree="patched", env="plain", sandbox=Sandbox(tmp_path))
        assert run.result is ktap.Result.TIMEOUT and run.seconds < 10 and run.reason == "killed after 1s"
    finally:
        (folder / "settings").unlink()
        hang.unlink()


def test_missing_program_is_an_explicit_skip(built_tree: Path, tmp_path: Path) -> None:
    run = run_test(built_tree, TestRef("vDSO", "vdso_test_abi"), tree="base", env="plain", sandbox=Sandbox(tmp_path))
    assert run.result is ktap.Result.SKIP and "not built here" in run.reason


def test_network_is_unreachable_inside_the_sandbox(tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    # Listening is enough: the kernel would complete a connection into the backlog. (bash: the
    # sandbox does not see this interpreter, which may live in a HOME it hides.)
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
    inside = Sandbox(tmp_path).run(["bash", "-c", probe], cwd=tmp_path, timeout=20)
    assert inside.returncode != 0 and "connected" not in inside.output
    assert "Network is unreachable" in inside.output or "Connection refused" in inside.output
    server.close()


def test_timens_shifts_the_boot_time(tmp_path: Path) -> None:
    done = Sandbox(tmp_path).run(["cat", "/proc/uptime"], cwd=tmp_path, timeout=20, env_name="timens")
    assert float(done.output.split()[0]) > 365 * 24 * 3600


def test_benchmark_compares_medians(built_tree: Path, tmp_path: Path) -> None:
    bench = BENCHMARKS["vdso_test_getrandom bench-single"]
    assert for_tests([TestRef("vDSO")]) == [bench]  # bench-multi (256 threads) only when asked for
    assert for_tests([TestRef("vDSO")], ("vdso_test_getrandom bench-multi",)) == list(BENCHMARKS.values())
    assert for_tests([TestRef("timens")]) == []
    sandbox = Sandbox(tmp_path, {"VDSO_BENCH_CALLS": "20000"})
    results = list(measure(bench, {"base": built_tree, "patched": built_tree}, ["plain"], sandbox, runs=3))
    assert [r.metric for r in results] == ["vdso", "libc", "syscall"]
    for r in results:
        assert r.base and r.patched and r.ratio is not None and r.runs == 3 and r.ratio == pytest.approx(r.patched / r.base)


def test_a_benchmark_run_covers_every_environment_in_one_call_alternating_the_trees(tmp_path: Path) -> None:
    # In a guest, one call is one boot: each run of each tree runs the benchmark in every environment there.
    bench = BENCHMARKS["vdso_test_getrandom bench-single"]
    calls: list[tuple[str, tuple[str, ...]]] = []

    def run_one(label: str, _wt: Path, envs: Sequence[str]) -> dict[str, TestRun]:
        calls.append((label, tuple(envs)))
        vdso = 1.0 if label == "base" else (3.0 if "timens" in envs else 1.0)  # only timens' figure differs
        out = {}
        for env in envs:
            v = vdso if env == "timens" else 1.0
            log = f"   vdso: 25000000 times in {v + len(calls) / 100:.2f} seconds\n   libc: 25000000 times in 5.0 seconds\n"
            out[env] = TestRun(bench.name, label, env, ktap.Result.PASS, 1.0, log=log)
        return out

    results = list(measure(bench, {"base": tmp_path, "patched": tmp_path}, ["plain", "timens"], Sandbox(tmp_path), runs=2,
                           run_one=run_one))
    assert calls == [("base", ("plain", "timens")), ("patched", ("plain", "timens"))] * 2
    assert [(r.env, r.metric) for r in results] == [("plain", "vdso"), ("plain", "libc"), ("timens", "vdso"), ("timens", "libc")]
    by = {(r.env, r.metric): r for r in results}
    timens, plain = by[("timens", "vdso")], by[("plain", "vdso")]
    assert timens.base_samples == (1.01, 1.03) and timens.patched_samples == (3.02, 3.04)  # each env's own figures, each run's
    assert plain.base_samples == (1.01, 1.03) and plain.patched_samples == (1.02, 1.04) and all(r.runs == 2 for r in results)


def _stop_the_first(comm: str, cpu_ticks: int, seconds: float, stopped: list[int], until: float) -> None:
    """Stop (SIGSTOP) the first process named COMM once it has run CPU_TICKS, for SECONDS: what a busy host
    does to a guest's program; the process knows nothing of it but a clock that ran on."""
    while time.monotonic() < until and not stopped:
        for entry in Path("/proc").iterdir():
            try:
                if not entry.name.isdigit() or (entry / "comm").read_text().strip() != comm:
                    continue
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[11]) >= cpu_ticks:  # utime, field 14
                os.kill(int(entry.name), signal.SIGSTOP)
                stopped.append(int(entry.name))
                time.sleep(seconds)
                os.kill(int(entry.name), signal.SIGCONT)
                return
        time.sleep(0.005)


def test_a_run_the_machine_stopped_is_measured_again_and_said_on_its_row(built_tree: Path, tmp_path: Path) -> None:
    # The first run (base, run 1) is stopped for 2 s while it measures; its figure is far beyond its tree's other
    # run (about 0.3 s a flavour), so that run is measured again, once, and only the stalled row says so.
    bench = BENCHMARKS["vdso_test_getrandom bench-single"]
    sandbox = Sandbox(tmp_path, {"VDSO_BENCH_CALLS": "1000000"})
    stopped: list[int] = []
    stopper = threading.Thread(target=_stop_the_first, args=("vdso_test_getrandom"[:15], 5, 2.0, stopped, time.monotonic() + 60))
    stopper.start()
    heard: list[str] = []
    try:
        results = list(measure(bench, {"base": built_tree, "patched": built_tree}, ["plain"], sandbox, runs=2, on_run=heard.append))
    finally:
        stopper.join()
    assert len(stopped) == 1
    assert [h.rsplit(", ", 1)[1] for h in heard] == ["run 1 of 2"] * 2 + ["run 2 of 2"] * 2 + ["run 1 again: it stalled"], heard
    assert "on base" in heard[-1]
    said = [r for r in results if r.stalled]
    assert len(said) == 1 and said[0].stalled.startswith(f"base run 1 stalled ({said[0].metric} "), results
    assert said[0].stalled.endswith("x its other runs): measured again"), said[0].stalled
    for r in results:  # the stalled figure is gone: every row's runs agree again
        assert len(r.base_samples) == len(r.patched_samples) == 2 and r.runs == 2
        for side in (r.base_samples, r.patched_samples):
            assert max(side) < STALL * min(side), r
    # Said once, on its row, in every report.
    review = Review(_series("lib/vdso/getrandom.c"), benchmarks=tuple(r.judged(1.25) for r in results))
    assert [b["stalled"] for b in json.loads(json_report.dumps(review))["benchmarks"]] == [r.stalled for r in results]
    assert sum(ln.strip() == said[0].stalled for ln in email._bench_lines(review)) == 1
    console = Console(width=400, record=True)
    terminal.render(review, console)
    assert console.export_text().count("stalled") == 1


def test_only_a_run_much_worse_than_its_trees_other_runs_stalled() -> None:
    bench = BENCHMARKS["vdso_test_getrandom bench-single"]

    def run(*vdso: float) -> list[dict[str, TestRun]]:
        return [{"plain": TestRun(bench.name, "base", "plain", ktap.Result.PASS, 1.0,
                                  log=f"   vdso: 9 times in {v} seconds\n")} for v in vdso]

    assert [(i, s.metric, s.value) for i, s in stalls(bench, run(0.5, 18.3))] == [(1, "vdso", 18.3)]  # CI's ppc64le base, 2026-12-04
    assert stalls(bench, run(18.3, 0.5))[0][0] == 0
    assert stalls(bench, run(1.0, 1.3, 2.4)) == []  # noise, even a lot of it: 2.4x the median of the others is not a stall
    assert [i for i, _ in stalls(bench, run(1.0, 1.1, 3.0, 1.2))] == [2]
    assert stalls(bench, run(4.0)) == []  # one run: nothing to compare with
    faster = replace(bench, lower_is_better=False)
    assert [i for i, _ in stalls(faster, run(10.0, 3.0))] == [1]  # a rate: the stalled run is the lower


def test_benchmark_on_a_tree_without_the_program(built_tree: Path, tmp_path: Path) -> None:
    bench = replace(BENCHMARKS["vdso_test_getrandom bench-single"], test=TestRef("vDSO", "absent"))
    results = list(measure(bench, {"base": built_tree}, ["plain"], Sandbox(tmp_path), runs=1))
    assert results == []


def test_a_test_the_base_never_ran_is_not_said_to_fail_there_nor_to_be_fixed() -> None:
    # CI-like: the base's guest could not start (its image was gone), the patched one ran and failed.
    from reviewer.selftests import inguest, stage

    def run(tree: str, result: ktap.Result, reason: str) -> TestRun:
        return TestRun("vDSO:vdso_test_getrandom", tree, "plain", result, 1.0, reason)

    lost = run("base", ktap.Result.ERROR, f"{inguest.NOT_RUN}vng exited (1) before it: the image does not exist")
    failed = run("patched", ktap.Result.FAIL, "exit=1: Bail out! vgetrandom passed buffer to syscall getrandom unexpectedly")
    [finding] = stage._compare([lost, failed])
    assert finding.level is Level.WARNING and "on both" not in finding.message, finding
    assert finding.message == ("vDSO:vdso_test_getrandom fails on the patched tree (plain) but did not run on base: not known to be "
                               "the series': exit=1: Bail out! vgetrandom passed buffer to syscall getrandom unexpectedly")
    assert list(stage._compare([lost, run("patched", ktap.Result.PASS, "")])) == []  # not "fixed by the series"
    assert [f.level for f in stage._compare([run("base", ktap.Result.PASS, ""), failed])] == [Level.ERROR]
    assert "on both" in next(iter(stage._compare([run("base", ktap.Result.FAIL, "exit=1"), failed]))).message
