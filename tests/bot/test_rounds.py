"""reviewer.bot.rounds: when a series' round is due for its report (on SQLite and on PostgreSQL), and the one
review its stages' results make: each finding once, the most complete stage's first, the apply of the apply
stage, every architecture's build, the guests' tests; a failed job adds nothing but its name."""
from __future__ import annotations

from typing import Any

from reviewer.bot import rounds
from reviewer.bot.jobs import Job, Jobs, Spec
from reviewer.ktap import Result
from reviewer.model import ApplyResult, BuiltTarget, Finding, Level, PatchApply, Review, TestRun
from reviewer.report import json as json_report

W = "host/1/main"


def _run(jobs: Jobs, spec: Spec, result: dict[str, Any] | None = None, *, fail: bool = False) -> Job:
    job, _ = jobs.put(spec, now=1)
    claimed = jobs.claim(spec.pool, W, 60, now=2, job_id=job.id)
    assert claimed is not None
    if fail:
        jobs.fail(job.id, W, "OSError: disk full", now=3)
    else:
        assert jobs.finish(job.id, W, result or {}, now=3)
    return job


def test_a_round_is_due_once_all_its_jobs_ended_and_until_it_is_reported(jobs: Jobs) -> None:
    static = Spec(list="l", series="s1", stage="static")
    build = Spec(list="l", series="s1", stage="build", arch="x86_64", max_attempts=1)
    _run(jobs, static)
    jobs.put(build, now=1)
    jobs.put(Spec(list="l", series="s2", stage="static"), now=1)  # another series, still queued
    assert rounds.due(jobs) == []  # s1's build is queued
    _run(jobs, build, fail=True)
    assert rounds.due(jobs) == [rounds.Round("l", "s1", "")]
    jobs.put(Spec(list="l", series="s1", stage=rounds.REPORT), now=4)
    assert rounds.due(jobs) == []  # reported (its report job exists)
    _run(jobs, Spec(list="l", series="s1", stage="static", config="rerun r@x"))
    assert rounds.due(jobs) == [rounds.Round("l", "s1", "rerun r@x")]  # a rerun is a round of its own
    assert [j.stage for j in rounds.of_series(jobs, "l", "s1")] == ["static", "build", "static"]


def _doc(review: Review) -> dict[str, Any]:
    return {"status": 1, "review": json_report.document(review)}


def _job(n: int, stage: str, arch: str, state: str, review: Review | None) -> Job:
    return Job(n, f"k{n}", "l", "s", stage, arch, "", "", stage, 0, state, 1, 3, None, None, 0.0, {}, _doc(review) if review else None,
               "OSError: disk full" if state == "failed" else None, 0.0, 0.0)


def test_the_stages_results_make_one_review() -> None:
    subject = Finding("subject", Level.WARNING, "subject too long", 1)
    build_error = Finding("build/error", Level.ERROR, "patch 1/1 does not build for x86_64", 1)
    arm_error = Finding("build/error", Level.ERROR, "patch 1/1 does not build for arm64", 1)
    applied = ApplyResult("abc123", "trailer", (PatchApply(1, "applied"),))
    x86 = Review(None, (build_error, subject), apply=applied, builds=(BuiltTarget("x86_64", "ARCH=x86_64"),))
    arm = Review(None, (arm_error, subject), apply=applied, builds=(BuiltTarget("arm64", "ARCH=arm64"),))
    tested = Review(None, (subject,), apply=applied, selftests=(TestRun("vDSO", "base", "plain", Result.PASS, 1.0),))
    jobs = [_job(1, "static", "", "done", Review(None, (subject,))), _job(2, "apply", "", "done", Review(None, (subject,), apply=applied)),
            _job(3, "build", "x86_64", "done", x86), _job(4, "build", "arm64", "done", arm), _job(5, "guest", "x86_64", "done", tested),
            _job(6, "guest", "arm64", "failed", None), _job(7, "build", "riscv64", "running", None)]
    merged = rounds.merge(jobs, None)
    assert [j.id for j in merged.used] == [5, 4, 3, 2, 1]  # guest, build (arm64 before x86_64), apply, static
    assert merged.review.findings == (subject, arm_error, build_error)  # once each, the most complete stage's order
    assert merged.review.apply == applied
    assert [b.target for b in merged.review.builds] == ["arm64", "x86_64"]
    assert [t.test for t in merged.review.selftests] == ["vDSO"]
    assert [j.id for j in merged.failed] == [6]
    assert merged.levels.count(Level.ERROR) == 2


def test_a_rerun_replaces_the_result_of_its_stage_and_a_failed_apply_counts_as_an_error() -> None:
    failed = ApplyResult("abc123", "head", (PatchApply(1, "failed", "conflict"),))
    old = _job(1, "apply", "", "done", Review(None, (), apply=failed))
    new = _job(2, "apply", "", "done", Review(None, (), apply=ApplyResult("def456", "head", (PatchApply(1, "applied"),))))
    assert rounds.merge([old], None).levels == [Level.ERROR]
    merged = rounds.merge([old, new], None)
    assert [j.id for j in merged.used] == [2] and merged.levels == []


def test_only_the_rounds_with_a_job_changed_since_the_last_look_are_read(jobs: Jobs) -> None:
    _run(jobs, Spec(list="l", series="old", stage="static"))  # changed at 3
    late = Spec(list="l", series="late", stage="static")
    job, _ = jobs.put(late, now=1)
    assert jobs.claim("static", W, 60, now=2, job_id=job.id) is not None
    assert jobs.finish(job.id, W, {}, now=50)
    assert rounds.due(jobs, since=10) == [rounds.Round("l", "late", "")]  # "old" ended before the look: not read again
    assert rounds.due(jobs) == [rounds.Round("l", "old", ""), rounds.Round("l", "late", "")]
