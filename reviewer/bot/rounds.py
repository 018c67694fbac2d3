"""A series' rounds, and the one review its jobs make together.

A round is the jobs of one series started together: its first run (config "") or a rerun a command asked for
(config "rerun MSGID"). It is due for its report when none of its jobs is queued or running any more, and no
report job of it exists yet (`due`, one query however many jobs the table holds). The report is made of the
newest finished job of each (stage, arch) of the series, whichever round ran it (`merge`): the findings once
each, the most complete stage's first (guest, build, apply, static); where the series was applied; the builds
of every architecture; the tests and benchmarks of the guests. A job that failed (the bot's trouble, not the
series') adds nothing to the review: it is named in `Merged.failed`, for the status and the log.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from reviewer.bot.jobs import COLUMNS, Job, Jobs
from reviewer.model import Finding, Level, Review, Series
from reviewer.report import load

REPORT = "report"
RANK = ("guest", "build", "apply", "static")  # the most complete first: its findings are those kept when two stages say the same


@dataclass(frozen=True)
class Round:
    list: str
    series: str
    config: str


INDEXES = ("CREATE INDEX IF NOT EXISTS jobs_round ON jobs (list, series, config)",
           "CREATE INDEX IF NOT EXISTS jobs_updated ON jobs (updated)")


def due(jobs: Jobs, since: float = 0.0) -> list[Round]:
    """The rounds whose jobs all ended and that have no report job yet, oldest first; only those with a job changed
    at or after SINCE (the caller's last look, less a margin for the workers' clocks): a bot's table holds every
    series it ever reviewed, and this runs every second."""
    with jobs.db.tx() as run:
        rows = run(f"""SELECT j.list, j.series, j.config FROM jobs j
                       WHERE j.stage != '{REPORT}'
                       AND (j.list, j.series, j.config) IN
                           (SELECT list, series, config FROM jobs WHERE updated >= ? AND stage != '{REPORT}')
                       AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.stage = '{REPORT}' AND r.list = j.list AND r.series = j.series
                                       AND r.config = j.config)
                       GROUP BY j.list, j.series, j.config
                       HAVING SUM(CASE WHEN j.state IN ('queued', 'running') THEN 1 ELSE 0 END) = 0 ORDER BY MIN(j.id)""",
                   (since,)).fetchall()
    return [Round(*r) for r in rows]


def of_series(jobs: Jobs, list_name: str, series: str) -> list[Job]:
    """The series' jobs but its reports, oldest first."""
    with jobs.db.tx() as run:
        rows = run(f"SELECT {COLUMNS} FROM jobs WHERE list = ? AND series = ? AND stage != ? ORDER BY id",
                   (list_name, series, REPORT)).fetchall()
    return [Job.of(r) for r in rows]


@dataclass(frozen=True)
class Merged:
    review: Review
    used: tuple[Job, ...]  # the jobs whose results it is made of, most complete stage first
    failed: tuple[Job, ...]  # the newest run of a (stage, arch) failed: nothing of it is in the review

    @property
    def levels(self) -> list[Level]:
        """The levels of what it found; a series that does not apply counts as an error."""
        applied = self.review.apply
        return [f.level for f in self.review.findings] + ([Level.ERROR] if applied is not None and applied.failed else [])


def merge(jobs: Sequence[Job], series: Series | None) -> Merged:
    """The review JOBS (one series' jobs, any states) make together: see the module's doc."""
    newest: dict[tuple[str, str], Job] = {}
    for job in sorted(jobs, key=lambda j: j.id):
        if job.state in ("done", "failed"):
            newest[(job.stage, job.arch)] = job
    ended = sorted(newest.values(), key=lambda j: (_rank(j.stage), j.arch))
    used = tuple(j for j in ended if j.state == "done" and j.result is not None and "review" in j.result)
    reviews = [load.load(j.result["review"], series) for j in used if j.result is not None]
    merged = Review(series=series, findings=_once(f for r in reviews for f in r.findings))
    applied = next((r.apply for r in reviews if r.apply is not None), None)
    guests = [r for j, r in zip(used, reviews, strict=True) if j.stage == "guest"]
    merged = replace(merged, apply=applied, builds=tuple(b for r in reviews for b in r.builds),
                     chosen=next((r.chosen for r in reviews if r.chosen), ()),
                     selftests=tuple(t for r in guests for t in r.selftests), benchmarks=tuple(b for r in guests for b in r.benchmarks),
                     boot=next((r.boot for r in guests if r.boot is not None), None))
    return Merged(merged, used, tuple(j for j in ended if j.state == "failed"))


def _rank(stage: str) -> int:
    return RANK.index(stage) if stage in RANK else len(RANK)


def _once(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    seen: set[tuple[object, ...]] = set()
    out = []
    for f in findings:
        key = (f.rule, f.patch, f.path, f.line, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return tuple(out)
