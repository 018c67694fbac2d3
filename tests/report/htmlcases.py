"""The reviews the HTML page is tested on (issue 33): the demo as reviewed, the demo with the stages' results
(builds, tests, benchmarks, boot logs), and a series whose subject, author and file name are markup."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from reviewer import app
from reviewer.ktap import Result
from reviewer.model import BenchResult, BootResult, BuiltStep, BuiltTarget, Finding, Level, Review, StageResult, StageStatus, TestRun
from reviewer.request import ReviewRequest, SelftestOptions, SourceOptions
from tests.conftest import FIXTURES, SERIES

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
# The first A/A review of bench/false_verdicts.py: the demo's 6 rows, 5 runs a side, as they ran.
AA_ROWS = FIXTURES / "bench" / "aa-demo-rows.json"
# Where the run kept its logs, as a user's would read (the page names them; nothing reads them).
LOGS = Path("/home/you/.local/state/reviewer/logs/20261206T052714Z-24677")
TEST_OUTPUT = "TAP version 13\n1..1\n# <script>alert(5)</script> the vDSO returned \x1b[2J garbage\nnot ok 1 vdso_test_getrandom\n"


def reviewed(target: Path, tree: Path | None) -> Review:
    """TARGET reviewed through the application, as `review TARGET --tree TREE --no-tests` would."""
    request = ReviewRequest(SourceOptions(target=str(target), cwd=target.parent, tree=tree), selftests=SelftestOptions(no_tests=True))
    return app.review(request).review


def bench_rows() -> tuple[BenchResult, ...]:
    """The A/A rows (no change, judged against 1.25x), and one made 1.4 times slower on the patched side."""
    rows = json.loads(AA_ROWS.read_text())["reviews"]["0"][0]
    out = [BenchResult.of("vdso_test_getrandom bench-single", r["env"], r["metric"], "s", r["base_runs"], r["patched_runs"],
                          len(r["base_runs"]), limit=1.25) for r in rows]
    first = rows[0]
    slower = [round(x * 1.4, 9) for x in first["patched_runs"]]
    out.append(BenchResult.of("vdso_test_getrandom bench-single", "plain", "vdso (made slower)", "s", first["base_runs"], slower, 5,
                              limit=1.25))
    return tuple(out)


def with_results(review: Review, logs: Path = LOGS) -> Review:
    """REVIEW as if run with --run-tests --build --boot: fixed figures, a failed test with hostile output, and
    the findings the stages make of them (selftests/stage.py's words)."""
    runs = tuple(TestRun("vDSO:vdso_test_getrandom", tree, env, Result.PASS, secs, where="host 6.1.0-28-amd64 x86_64")
                 for tree, secs in (("base", 0.41), ("patched", 0.43)) for env in ("plain", "timens"))
    failed = (TestRun("vDSO:vdso_test_chacha", "base", "plain", Result.PASS, 0.2, where="host 6.1.0-28-amd64 x86_64"),
              TestRun("vDSO:vdso_test_chacha", "patched", "plain", Result.FAIL, 0.3, reason="exit 1", log=TEST_OUTPUT,
                      where="host 6.1.0-28-amd64 x86_64"))
    build = BuiltTarget("loongarch", "ARCH=loongarch LLVM=-19", (
        BuiltStep(0, "built", 41.2, ("arch/loongarch/vdso/",), warnings=0),
        *(BuiltStep(i, "built", 9.8, ("arch/loongarch/vdso/",), warnings=0,
                    vdso=(("arch/loongarch/vdso/vdso.so", ("__vdso_getrandom@@LINUX_5.10",)),) if i == 3 else ()) for i in (1, 2, 3))))
    consoles = tuple((side, str(logs / f"boot-{side.replace('/', '-')}.log")) for side in ("base/plain", "patched/plain"))
    boot = BootResult("tcg", logs=consoles, log_dir=str(logs))
    stages = tuple(dataclasses.replace(st, status=StageStatus.OK, detail=f"4 tests, 12 runs; output in {logs / 'selftests'}")
                   if st.name == "selftests" else st for st in review.stages)
    rows = bench_rows()
    slow = rows[-1]
    assert slow.ratio is not None and slow.base is not None and slow.patched is not None and slow.verdict is not None
    found = (Finding("selftests", Level.ERROR, "vDSO:vdso_test_chacha fails on the patched tree (plain), pass on base: exit 1"),
             Finding("benchmarks", Level.WARNING, f"{slow.name} [{slow.metric}] is {slow.ratio:.2f}x slower on the patched tree "
                     f"({slow.env}): {slow.base:.3f}s -> {slow.patched:.3f}s (medians, threshold 1.25x; {slow.verdict.test})"))
    return dataclasses.replace(review, findings=(*review.findings, *found), selftests=(*runs, *failed), benchmarks=rows, builds=(build,),
                               boot=boot, stages=stages or (StageResult("selftests", StageStatus.OK, 1.0, f"output in {logs}"),))
