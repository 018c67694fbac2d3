"""The versioned JSON report document (schema documented in docs/json-schema.md)."""
from __future__ import annotations

from typing import Any

from reviewer.model import (
    ApplyResult,
    BenchResult,
    FileChange,
    Finding,
    Patch,
    Person,
    Posting,
    Review,
    Series,
    StageResult,
    TestRun,
    Trailer,
)
from reviewer.report import escape

SCHEMA = 1


def document(review: Review) -> dict[str, Any]:
    s = review.series
    return {
        "schema": SCHEMA,
        "series": _series(s) if s else None,
        "patches": [_patch(p) for p in s.patches] if s else [],
        "findings": [_finding(f) for f in review.findings],
        "stages": [_stage(st) for st in review.stages],
        "apply": _apply(review.apply) if review.apply else None,
        "selftests_chosen": [{"test": c.test, "why": list(c.why)} for c in review.chosen],
        "selftests": [_run(r) for r in review.selftests],
        "benchmarks": [_bench(b) for b in review.benchmarks],
        "boot": review.boot.document() if review.boot else None,
        "builds": [b.document() for b in review.builds],
    }


def dumps(review: Review) -> str:
    """The document, its strings exact (escape.json: every control character as a \\u escape)."""
    return escape.json(document(review))


def _person(p: Person) -> dict[str, str]:
    return {"name": p.name, "email": p.email}


def _series(s: Series) -> dict[str, Any]:
    return {
        "subject": s.subject,
        "version": s.version,
        "rfc": s.rfc,
        "msgid": s.msgid,
        "author": _person(s.author),
        "date": s.date.isoformat() if s.date else None,
        "base_commit": s.base_commit,
        "change_id": s.change_id,
        "prerequisites": list(s.prerequisites),
        "total": s.total,
        "missing": list(s.missing),
        "revisions": list(s.revisions),
        "cover": {"msgid": s.cover.msgid, "subject": s.cover.subject,
                  "trailers": [_trailer(t) for t in s.cover.trailers]} if s.cover else None,
        "added": s.added,
        "removed": s.removed,
        "source": s.source,
        "postings": [_posting(p) for p in s.postings],
        "partial_reroll": {"from": s.reroll_from, "carried": [p.index for p in s.patches if p.carried_from is not None]}
        if s.reroll_from is not None else None,
        "followup_patches": [{"msgid": f.msgid, "subject": f.subject, "author": _person(f.author),
                              "date": f.date.isoformat() if f.date else None, "of_patch": f.of_patch} for f in s.followup_patches],
        "pull_request": {"url": pr.url, "ref": pr.ref, "base": pr.base, "tip": pr.tip} if (pr := s.pull_request) else None,
    }


def _posting(p: Posting) -> dict[str, Any]:
    return {"msgid": p.msgid, "subject": p.subject, "sender": _person(p.sender), "date": p.date.isoformat() if p.date else None,
            "revision": p.revision, "total": p.total, "patches": list(p.patches), "reviewed": p.reviewed,
            "replaced": list(p.replaced)}


def _patch(p: Patch) -> dict[str, Any]:
    return {
        "index": p.index,
        "subject": p.subject,
        "msgid": p.msgid,
        "author": _person(p.author),
        "sender": _person(p.sender) if p.sender else None,
        "date": p.date.isoformat() if p.date else None,
        "carried_from": p.carried_from,
        "trailers": [_trailer(t) for t in p.trailers],
        "attestation": list(p.attestation),
        "files": [_file(f) for f in p.files],
        "added": p.added,
        "removed": p.removed,
    }


def _trailer(t: Trailer) -> dict[str, Any]:
    return {"name": t.name, "value": t.value, "source": t.source, "msgid": t.msgid, "comment": t.comment}


def _file(f: FileChange) -> dict[str, Any]:
    return {
        "path": f.path,
        "old_path": f.old_path,
        "change": str(f.change),
        "old_mode": f.old_mode,
        "new_mode": f.new_mode,
        "symlink": f.is_symlink,
        "binary": f.binary,
        "added": f.added,
        "removed": f.removed,
    }


def _finding(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "level": str(f.level),
        "patch": f.patch,
        "path": f.path,
        "line": f.line,
        "message": f.message,
        "hint": f.hint,
        "quote": list(f.quote),
        "sources": list(f.sources or (f.rule,)),
    }


def _apply(a: ApplyResult) -> dict[str, Any]:
    return {
        "base": a.base,
        "base_source": a.base_source,
        "patches": [{"index": p.index, "status": p.status, "detail": p.detail} for p in a.patches],
    }


def _run(r: TestRun) -> dict[str, Any]:
    return {
        "name": r.test,
        "tree": r.tree,
        "env": r.env,
        "result": str(r.result),
        "seconds": round(r.seconds, 3),
        "reason": r.reason,
        "subtests": [{"number": t.number, "name": t.name, "result": str(t.result), "reason": t.reason} for t in r.subtests],
        "log": r.log,
        "where": r.where,
    }


def _bench(b: BenchResult) -> dict[str, Any]:
    v = b.verdict
    return {
        "name": b.name, "env": b.env, "metric": b.metric, "unit": b.unit, "base": b.base, "patched": b.patched,
        "ratio": round(b.ratio, 3) if b.ratio is not None else None, "runs": b.runs, "spread": round(b.spread, 3),
        "note": b.note, "stalled": b.stalled,
        "verdict": str(v.outcome) if v else None, "test": str(v.method) if v and v.method else None,
        "p": float(f"{v.p:.3g}") if v and v.p is not None else None, "verdict_text": v.text if v else None,
        "threshold": v.limit if v else None, "where": b.where, **b.figures(),
    }


def _stage(st: StageResult) -> dict[str, Any]:
    return {"name": st.name, "status": str(st.status), "seconds": round(st.seconds, 3), "detail": st.detail}
