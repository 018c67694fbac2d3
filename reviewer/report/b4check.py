"""b4's check protocols: the `b4 review` JSON and the `b4 prep --check` checkpatch-style lines.

`b4 review` (b4/review/checks.py, _run_external_cmd) runs `review-perpatch-check-cmd` once
per patch and `review-series-check-cmd` once on the cover letter, the message as bytes on
stdin, in the top of the git tree, with B4_TRACKING_FILE naming its tracking JSON (whose
`series.thread-blob` is a git blob holding the whole thread). It reads a JSON array of
{tool, status: pass|warn|fail, summary, url, details}; `details` may itself be a JSON list of
{status, description, srcline}, which its TUI shows one finding per line.

`b4 prep --check` (b4/__init__.py, LoreMessage.run_local_check) runs
`prep-perpatch-check-cmd` per patch and takes every stdout line as a finding: a fail
when it contains `ERROR:`, else a warning; no output and exit 0 is a pass.

Both see one message at a time; the series around it (the thread, or the prep branch) is
what we review, so rules that span patches judge the whole series.
"""
from __future__ import annotations

import email.message
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer.errors import CommandError
from reviewer.model import Finding, Level, Review, Series
from reviewer.report import escape
from reviewer.series import prep
from reviewer.tree.git import output

TOOL = "reviewer"
_COUNTER = re.compile(r"^\s*(?:re:\s*)?\[[^\]]*?\b(\d+)/(\d+)\]", re.IGNORECASE)
_PREFIX = re.compile(r"^\s*(?:\[[^\]]*\]\s*)+")


@dataclass(frozen=True)
class Context:
    mbox: bytes  # what to review
    how: str  # "b4 review thread" | "b4 prep branch" | "the message alone"


def context(cwd: Path, data: bytes) -> Context:
    """The series around the message DATA: b4 review's thread blob, the b4 prep branch, or DATA alone."""
    thread = _thread_blob(cwd)
    if thread:
        return Context(thread, "b4 review thread")
    branch = prep.find(cwd)
    if branch is not None:
        return Context(prep.mbox(cwd, branch), "b4 prep branch")
    return Context(data, "the message alone")


def _thread_blob(cwd: Path) -> bytes:
    path = os.environ.get("B4_TRACKING_FILE")
    if not path:
        return b""
    try:
        tracking = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return b""
    blob = tracking.get("series", {}).get("thread-blob", "") if isinstance(tracking, dict) else ""
    if not blob:
        return b""
    try:
        return output(cwd, "cat-file", "blob", str(blob), timeout=60)  # the thread's mbox, byte for byte
    except CommandError as exc:
        if exc.returncode is None:  # timed out, or no git: as any other git command's failure
            raise
        return b""  # no such blob: the tracking data is stale


def select(review: Review, msg: email.message.Message, *, series_on_first: bool) -> tuple[int | None, list[Finding]]:
    """(patch index or None for the whole series, the findings about it) for the message MSG.

    Findings about the series as a whole go to the series check (the cover letter); with
    SERIES_ON_FIRST (b4 prep, which has no series check) to the first patch instead.
    """
    s = review.series
    if s is None:
        return None, list(review.findings)
    index = _which(s, msg)
    if index is None:
        return None, list(review.findings)
    present = {p.index for p in s.patches}
    first = min(present) if present else None
    return index, [f for f in review.findings
                   if f.patch == index or (series_on_first and index == first and (f.patch is None or f.patch not in present))]


def _which(s: Series, msg: email.message.Message) -> int | None:
    msgid = str(msg.get("Message-ID", "")).strip().strip("<>")
    if s.cover is not None and msgid == s.cover.msgid:
        return None
    for p in s.patches:
        if msgid and msgid == p.msgid:
            return p.index
    subject = " ".join(str(msg.get("Subject", "")).split())
    m = _COUNTER.match(subject)
    if m and int(m.group(1)) == 0:
        return None
    bare = _PREFIX.sub("", subject)
    by_subject = [p.index for p in s.patches if " ".join(p.subject.split()) == bare]
    if m and int(m.group(1)) in by_subject:
        return int(m.group(1))
    return by_subject[0] if by_subject else (s.patches[0].index if len(s.patches) == 1 else None)


def results(findings: list[Finding], *, strict: bool = False) -> list[dict[str, Any]]:
    """The JSON array b4 review reads: one entry for our tool; STRICT (--strict): a warning fails, as it fails the exit status."""
    shown = [f for f in findings if f.level is not Level.INFO]
    errors = sum(1 for f in shown if f.level is Level.ERROR)
    warnings = len(shown) - errors
    status = "fail" if errors or (strict and warnings) else "warn" if warnings else "pass"
    parts = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in ((errors, "error"), (warnings, "warning")) if n]
    notes = len(findings) - len(shown)
    summary = ", ".join(parts) if parts else "passed all checks" + (f" ({notes} notes)" if notes else "")
    entry: dict[str, Any] = {"tool": TOOL, "status": status, "summary": summary, "url": "", "details": ""}
    if shown:
        entry["details"] = json.dumps([_detail(f) for f in shown])
    return [entry]


def _detail(f: Finding) -> dict[str, str]:
    # b4 shows these in its terminal UI: text from the series escaped as for any plain-text medium.
    out = {"status": "fail" if f.level is Level.ERROR else "warn", "description": escape.text(f"{_where(f)}{f.message} ({f.rule})")}
    if f.quote:
        out["srcline"] = escape.text(f.quote[0], keep="\t")
    return out


def checkpatch_lines(findings: list[Finding]) -> list[str]:
    """`path:line: ERROR: message (rule)`, as `checkpatch.pl --terse --showfile` prints (infos are left out);
    b4 takes each line for a finding, so a newline from the series is escaped (escape.text), never kept."""
    return [escape.text(f"{_where(f)}{'ERROR' if f.level is Level.ERROR else 'WARNING'}: {f.message} ({f.rule})")
            for f in findings if f.level is not Level.INFO]


def _where(f: Finding) -> str:
    if not f.path:
        return ""
    return f"{f.path}:{f.line}: " if f.line else f"{f.path}: "
