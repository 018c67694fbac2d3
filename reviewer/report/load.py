"""The JSON report document (report/json.py, docs/json-schema.md) read back as a Review: what a review bot
keeps of each stage's run, turned into the model the reports render (one reply made of several jobs'
results, a page made later). The series itself is not read from the document: the caller gives it (it
parses the mbox again), as the document keeps only what a reader needs of it.

document(load(document(review), review.series)) == document(review): tests/report/test_load.py holds
every review the tests make to that. Lost on the way, as the document does not keep them: a verdict's
`test` figures (its text keeps them), nested KTAP subtests below the first level, and the diagnostics.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reviewer.hostload import HostLoad
from reviewer.ktap import Result, TestCase
from reviewer.model import (
    ApplyResult,
    BenchResult,
    BootResult,
    BuiltStep,
    BuiltTarget,
    ChosenTest,
    Finding,
    Level,
    PatchApply,
    Review,
    Series,
    StageResult,
    StageStatus,
    TestRun,
)
from reviewer.report.json import SCHEMA
from reviewer.verdict import Method, Trend, Verdict

Doc = Mapping[str, Any]


class DocumentError(ValueError):
    """The document is not one this version of reviewer writes."""


def load(doc: Doc, series: Series | None) -> Review:
    """DOC (a JSON report document) as a Review of SERIES."""
    if doc.get("schema") != SCHEMA:
        raise DocumentError(f"JSON report schema {doc.get('schema')!r}: this reviewer reads schema {SCHEMA}")
    return Review(
        series=series,
        findings=tuple(finding(f) for f in doc.get("findings", ())),
        stages=tuple(StageResult(s["name"], StageStatus(s["status"]), s["seconds"], s["detail"]) for s in doc.get("stages", ())),
        apply=_apply(doc["apply"]) if doc.get("apply") else None,
        chosen=tuple(ChosenTest(c["test"], tuple(c["why"])) for c in doc.get("selftests_chosen", ())),
        selftests=tuple(_run(r) for r in doc.get("selftests", ())),
        benchmarks=tuple(_bench(b) for b in doc.get("benchmarks", ())),
        boot=_boot(doc["boot"]) if doc.get("boot") else None,
        builds=tuple(_built(b) for b in doc.get("builds", ())),
    )


def finding(d: Doc) -> Finding:
    """One finding of the document (its `sources` are the rule alone when one rule reported it: () in the model)."""
    sources = tuple(d.get("sources", ()))
    return Finding(rule=d["rule"], level=Level(d["level"]), message=d["message"], patch=d.get("patch"), path=d.get("path"),
                   line=d.get("line"), hint=d.get("hint"), quote=tuple(d.get("quote", ())),
                   sources=() if sources == (d["rule"],) else sources)


def _apply(d: Doc) -> ApplyResult:
    return ApplyResult(d["base"], d["base_source"], tuple(PatchApply(p["index"], p["status"], p["detail"]) for p in d["patches"]))


def _run(d: Doc) -> TestRun:
    cases = tuple(TestCase(t["number"], t["name"], Result(t["result"]), t["reason"]) for t in d.get("subtests", ()))
    return TestRun(d["name"], d["tree"], d["env"], Result(d["result"]), d["seconds"], d["reason"], d["log"], cases, d["where"])


def _bench(d: Doc) -> BenchResult:
    v = _verdict(d)
    return BenchResult(d["name"], d["env"], d["metric"], d["unit"], d["base"], d["patched"], d["ratio"], d["runs"], d["spread"], d["note"],
                       tuple(d.get("base_runs", ())), tuple(d.get("patched_runs", ())), v, d["where"], d["stalled"],
                       v.load if v is not None else None)


def _verdict(d: Doc) -> Verdict | None:
    if d.get("verdict") is None:
        return None
    interval = d.get("interval")
    return Verdict(Trend(d["verdict"]), Method(d["test"]) if d.get("test") else None, "", d.get("verdict_text") or "", d.get("p"),
                   d.get("threshold"), (interval[0], interval[1]) if interval else None, _load(d.get("host_load")), d.get("min_runs") or 0)


def _load(d: Doc | None) -> HostLoad | None:
    if not d:
        return None
    before, after = d["load"]
    return HostLoad(d["seconds"], d["cpus"], d["others"], d["stolen"], d["idle"], d["waiting"], (before, after))


def _boot(d: Doc) -> BootResult:
    config = tuple((env, tuple(lines)) for env, lines in d.get("config", {}).items())
    return BootResult(d["accel"], config, tuple(d.get("logs", {}).items()), d.get("log_dir"))


def _built(d: Doc) -> BuiltTarget:
    return BuiltTarget(d["target"], d["toolchain"], tuple(_step(s) for s in d.get("steps", ())), tuple(d.get("config", ())), d["problem"])


def _step(d: Doc) -> BuiltStep:
    vdso: Mapping[str, Sequence[str]] = d.get("vdso", {})
    return BuiltStep(d["patch"], d["status"], d["seconds"], tuple(d.get("goals", ())), d["detail"], d["warnings"],
                     tuple((path, tuple(syms)) for path, syms in vdso.items()))
