"""What the dashboard shows, as data (web.py serves it as pages and, the same data, as JSON; docs/bot.md, "Dashboard").

Each request opens the bot's home for reading (`Home.open`): the store (`bot.sqlite`) and the jobs table read-only,
so a page never creates a file nor takes the write lock the bot's loop and workers need; a bot that never ran shows
empty lists. A list's page reads the list's jobs in one query and counts each series' findings from the stored JSON
documents (the newest finished job of each stage and architecture, every finding once, as rounds.merge does); a
series' page merges its review (rounds.merge) and compares it with the previous revision (revisions.py).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer.bot import operate, revisions, rounds
from reviewer.bot.assemble import Assembled
from reviewer.bot.config import BotConfig
from reviewer.bot.jobs import COLUMNS, Job, Jobs
from reviewer.bot.mboxes import Mboxes
from reviewer.bot.store import Store
from reviewer.model import Finding, Review
from reviewer.report import json as report_json
from reviewer.report import load
from reviewer.series import mbox, patchparse
from reviewer.series.fetch import build_series, read_mbox

LEVELS = ("error", "warning", "info")


@dataclass
class Home:
    """The bot's home opened for one request, read-only; None where the bot has not made the database yet."""

    cfg: BotConfig
    store: Store | None
    jobs: Jobs | None

    @classmethod
    def open(cls, cfg: BotConfig) -> Home:
        store = Store.in_home(cfg.home, read_only=True) if (cfg.home / "bot.sqlite").is_file() else None
        url = cfg.jobs_url
        sqlite = not url.startswith(("postgresql://", "postgres://"))
        jobs = Jobs(url, read_only=True) if not sqlite or Path(url.removeprefix("sqlite://")).is_file() else None
        return cls(cfg, store, jobs)

    def close(self) -> None:
        for part in (self.store, self.jobs):
            if part is not None:
                part.close()

    def list_names(self) -> list[str]:
        names = set(self.cfg.lists or {})
        if self.store is not None:
            names |= {str(n) for (n,) in self.store.db.execute("SELECT DISTINCT list FROM series")}
        return sorted(names)

    def series(self, name: str) -> list[tuple[Assembled, float]]:
        return self.store.series_at(name) if self.store is not None else []

    def counts(self, name: str) -> tuple[dict[str, int], int]:
        """LIST's jobs (but reports) per state, and how many of its series have a report done."""
        if self.jobs is None:
            return {}, 0
        with self.jobs.db.tx() as run:
            states = run(f"SELECT state, COUNT(*) FROM jobs WHERE list = ? AND stage != '{rounds.REPORT}' GROUP BY state ORDER BY state",
                         (name,)).fetchall()
            reported = run(f"SELECT COUNT(DISTINCT series) FROM jobs WHERE list = ? AND stage = '{rounds.REPORT}' AND state = 'done'",
                           (name,)).fetchone()[0]
        return {str(st): int(n) for st, n in states}, int(reported)

    def series_jobs(self, key: str) -> list[Job]:
        return self.jobs.select(series=key) if self.jobs is not None else []

    def list_jobs(self, name: str) -> dict[str, list[Job]]:
        """LIST's jobs by series, oldest first; a stage job's result holds only its review's findings (_FOUND)."""
        if self.jobs is None:
            return {}
        light = COLUMNS.replace("result", f"CASE WHEN stage = '{rounds.REPORT}' THEN result ELSE NULL END")
        with self.jobs.db.tx() as run:
            jobs = [Job.of(r) for r in run(f"SELECT {light} FROM jobs WHERE list = ? ORDER BY id", (name,)).fetchall()]
            _found(run, self.cfg.jobs_url, [j for j in jobs if j.stage != rounds.REPORT and j.state == "done"])
        out: dict[str, list[Job]] = {}
        for job in jobs:
            if job.stage != rounds.REPORT and job.state == "done" and (kept := _FOUND.get((self.cfg.jobs_url, job.id))) is not None:
                job = dataclasses.replace(job, result={"review": {"findings": kept[1]}})
            out.setdefault(job.series, []).append(job)
        return out


# A done job's result never changes: the findings of each (a list page reads thousands of documents), by job id, with
# the job's `updated` (a job queued and run again is read again), per jobs table. A served process keeps at most _KEEP.
_FOUND: dict[tuple[str, int], tuple[float, list[dict[str, Any]]]] = {}
_KEEP = 200_000
_FINDING = ("level", "rule", "patch", "path", "line", "message")


def _found(run: Any, url: str, done: Sequence[Job]) -> None:
    wanted = [j.id for j in done if _FOUND.get((url, j.id), (None,))[0] != j.updated]
    if len(_FOUND) + len(wanted) > _KEEP:
        _FOUND.clear()
    for i in range(0, len(wanted), 500):
        chunk = wanted[i:i + 500]
        rows = run(f"SELECT id, result, updated FROM jobs WHERE id IN ({', '.join('?' * len(chunk))})", tuple(chunk)).fetchall()
        for job_id, result, updated in rows:
            doc = (json.loads(result) if result else {}).get("review") or {}
            _FOUND[(url, int(job_id))] = (float(updated), [{k: f.get(k) for k in _FINDING} for f in doc.get("findings", [])])


def series_url(name: str, root: str) -> str:
    return f"/lists/{_q(name)}/series/{_q(root)}"


def list_url(name: str) -> str:
    return f"/lists/{_q(name)}"


def _q(text: str) -> str:
    return urllib.parse.quote(text, safe="@")


def lists(home: Home) -> dict[str, Any]:
    """The front page: every list (configured, or with series recorded), its series and jobs counted."""
    out = []
    for name in home.list_names():
        jobs, reported = home.counts(name)
        out.append({"name": name, "url": list_url(name), "configured": name in (home.cfg.lists or {}), "series": len(home.series(name)),
                    "reported": reported, "jobs": jobs})
    return {"home": str(home.cfg.home), "lists": out}


def list_view(home: Home, name: str) -> dict[str, Any] | None:
    """LIST's series, newest first (None: no such list)."""
    if name not in home.list_names():
        return None
    jobs, every = home.list_jobs(name), home.series(name)
    later = {s.supersedes: s.revision for s, _ in every if s.supersedes}
    rows = [summary(s, at, jobs.get(s.key, [])) | {"superseded_by": later.get(s.key)} for s, at in reversed(every)]
    return {"list": name, "url": list_url(name), "series": rows}


def summary(s: Assembled, at: float, jobs: Sequence[Job]) -> dict[str, Any]:
    """One series as its list's page shows it."""
    stages = _newest(j for j in jobs if j.stage != rounds.REPORT)
    found = Counter(f["level"] for f in _findings(_newest(j for j in jobs if j.stage != rounds.REPORT and j.state in ("done", "failed"))))
    report = _report(jobs)
    first = min((j.created for j in jobs if j.stage != rounds.REPORT), default=None)
    seconds = report.updated - first if report is not None and report.state == "done" and first is not None else None
    return {"key": s.key, "root": s.root, "url": series_url(s.list, s.root), "subject": s.subject, "sender": s.sender,
            "revision": s.revision, "rfc": s.rfc, "resend": s.resend, "state": str(s.state), "duplicate_of": s.duplicate_of,
            "supersedes": s.supersedes, "identity": s.identity, "decided_at": at,
            "stages": [{"stage": j.stage, "arch": j.arch, "state": j.state, "job": j.id} for j in stages],
            "findings": {lv: found[lv] for lv in LEVELS}, "seconds_to_result": seconds,
            "report": None if report is None else {"state": report.state, **{k: (report.result or {}).get(k) for k in
                                                                            ("verdict", "reason", "message_id")}}}


def _newest(jobs: Iterable[Job]) -> list[Job]:
    """The newest job of each (stage, arch), the most complete stage first."""
    newest = {(j.stage, j.arch): j for j in sorted(jobs, key=lambda j: j.id)}
    return sorted(newest.values(), key=lambda j: (rounds.RANK.index(j.stage) if j.stage in rounds.RANK else len(rounds.RANK), j.arch))


def _findings(jobs: Iterable[Job]) -> list[dict[str, Any]]:
    """The findings of the finished jobs' documents, each once (as rounds.merge keeps them)."""
    seen, out = set(), []
    for j in jobs:
        doc = (j.result or {}).get("review") if j.state == "done" else None
        for f in (doc or {}).get("findings", []):
            key = (f.get("rule"), f.get("patch"), f.get("path"), f.get("line"), f.get("message"))
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def _report(jobs: Sequence[Job]) -> Job | None:
    """The series' first report done (its first result), else its newest report job."""
    reports = [j for j in jobs if j.stage == rounds.REPORT]
    return next((j for j in reports if j.state == "done"), reports[-1] if reports else None)


@dataclass(frozen=True)
class SeriesPage:
    data: dict[str, Any]  # what the JSON variant returns
    review: Review  # the merged review, for the page's review part (report/html.py)


def series_view(home: Home, name: str, root: str) -> SeriesPage | None:
    """The series ROOT of LIST: its merged review, its revisions, what changed from the previous one (None: unknown)."""
    every = home.series(name)
    this = next(((s, at) for s, at in every if s.root == root), None)
    if this is None:
        return None
    s, at = this
    mine = home.series_jobs(s.key)
    merged, side = _merged(home, mine)
    data = summary(s, at, mine) | {"list": name, "list_url": list_url(name),
                                   "jobs": [_job(j) for j in mine], "failed": [_job(j) for j in merged.failed],
                                   "review": report_json.document(merged.review)}
    same = sorted((x for x, _ in every if x.identity == s.identity), key=lambda x: (x.revision, x.key))
    data["revisions"] = [{"revision": x.revision, "key": x.key, "root": x.root, "subject": x.subject, "url": series_url(name, x.root),
                          "current": x.key == s.key, "duplicate_of": x.duplicate_of} for x in same]
    earlier = [x for x in same if x.revision < s.revision and x.duplicate_of is None]
    prev = earlier[-1] if earlier and side else None
    data["changes"] = _changes(home, name, prev, home.series_jobs(prev.key), merged.review, side) if prev and side else None
    return SeriesPage(data, merged.review)


def _job(j: Job) -> dict[str, Any]:
    return {"id": j.id, "stage": j.stage, "arch": j.arch, "config": j.config, "base": j.base, "pool": j.pool, "state": j.state,
            "attempt": j.attempt, "error": j.error, "created": j.created, "started": j.started, "updated": j.updated}


def _merged(home: Home, jobs: Sequence[Job]) -> tuple[rounds.Merged, revisions.Side | None]:
    stages = [j for j in jobs if j.stage != rounds.REPORT]
    side = _side(home, stages)
    merged = rounds.merge(stages, side.series if side else None)
    ran = tuple(dataclasses.replace(st, name=f"{j.stage}{' ' + j.arch if j.arch else ''}: {st.name}") for j in merged.used
                for st in load.load((j.result or {})["review"], merged.review.series).stages)
    merged = dataclasses.replace(merged, review=dataclasses.replace(merged.review, stages=ran))  # each job's stages, named
    if side is not None:
        applied = merged.review.apply
        base = applied.base if applied is not None else next((j.base for j in reversed(stages) if j.base), "")
        side = dataclasses.replace(side, base=base)
    return merged, side


def _side(home: Home, jobs: Sequence[Job]) -> revisions.Side | None:
    """The series the jobs reviewed, read from its mbox (the file in the home, else the jobs database)."""
    job = next((j for j in reversed(jobs) if j.payload.get("mbox_sha256") or j.payload.get("mbox")), None)
    if job is None:
        return None
    data = _mbox(home, job)
    if data is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".mbox") as f:
        f.write(data)
        f.flush()
        msgs = read_mbox(Path(f.name))
    read = build_series(msgs, "bot")  # the files each patch changes read as the pipeline reads them (the page quotes hunks)
    patches = tuple(dataclasses.replace(p, files=patchparse.read_diff(p.diff).files) for p in read.patches)
    series = dataclasses.replace(read, patches=patches)
    by_id = {str(m.get("Message-ID", "")).strip().strip("<>"): m for m in msgs}
    mails = mbox.write(by_id[p.msgid].as_bytes() for p in series.patches if p.msgid in by_id)
    return revisions.Side(hashlib.sha256(data).hexdigest(), series, mails)


def _mbox(home: Home, job: Job) -> bytes | None:
    digest, path = str(job.payload.get("mbox_sha256", "")), Path(str(job.payload.get("mbox", "")))
    if path.is_file():
        data = path.read_bytes()
        if not digest or hashlib.sha256(data).hexdigest() == digest:
            return data
    return Mboxes(home.jobs.db).get(digest) if home.jobs is not None and digest else None


def _changes(home: Home, name: str, prev: Assembled, prev_jobs: Sequence[Job], review: Review,
             side: revisions.Side) -> dict[str, Any] | None:
    merged, before = _merged(home, prev_jobs)
    if before is None:
        return None
    # A previous revision none of whose stages ended (superseded while queued: cancelled) has no findings to compare.
    fixed, new = revisions.findings(merged.review.findings, review.findings) if merged.used else ([], [])
    lc = (home.cfg.lists or {}).get(name)
    diff = revisions.compare(home.cfg.home / "web" / "changes", lc.tree if lc else None, before, side)
    return {"from": {"revision": prev.revision, "key": prev.key, "url": series_url(name, prev.root), "reviewed": bool(merged.used)},
            "fixed": [_finding(f) for f in fixed], "new": [_finding(f) for f in new],
            "diff": {"kind": diff.kind, "why": diff.why, "text": diff.text}}


def _finding(f: Finding) -> dict[str, Any]:
    return {"level": str(f.level), "rule": f.rule, "patch": f.patch, "path": f.path, "line": f.line, "message": f.message}


def queue(cfg: BotConfig) -> dict[str, Any]:
    """The queue page: operate.status, read-only."""
    return operate.status(cfg, read_only=True)

