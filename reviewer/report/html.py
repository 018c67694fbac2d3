"""One review as one self-contained HTML page (`--format html`, `--html FILE`; docs/html.md).

Jinja2 renders templates/review.html with autoescape on, and every value the template prints goes
through escape.text first (the environment's finalize): a control character, a bidi override or a
line separator from a series shows as `\\033`, `\\342\\200\\256`, never acts. No value is marked
safe. The page loads nothing: its styles are inline, its charts inline SVG (chart.py), it has no
script, and its Content-Security-Policy (CSP) says so to the browser as well. Links go to the
public archive by Message-ID (a Message-ID the tool made up links nowhere).
"""
from __future__ import annotations

import functools
import re
import urllib.parse
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from reviewer.model import BenchResult, Finding, Level, Patch, Review, TestRun
from reviewer.report import chart, conclusion, escape, order, replybody, shape
from reviewer.report.message import INVENTED
from reviewer.series.lore import DEFAULT_URL

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
TEMPLATES = Path(__file__).parent / "templates"
_OUTPUT_LINES = 40  # a test's output: its last lines, the rest is in its log
_HUNK_LINES = 12  # the hunk git am could not place: its first lines
_BASE_FROM = {"trailer": "the series' base-commit: line", "option": "--base", "head": "the tree's HEAD (no usable base-commit: line)",
              "guess": "guessed from the patches' pre-image blobs"}
_LEVELS = {Level.ERROR: ("Errors", "Error"), Level.WARNING: ("Warnings", "Warning"), Level.INFO: ("Infos", "Info")}


def page(review: Review, archive: str = DEFAULT_URL) -> str:
    """REVIEW as an HTML document; ARCHIVE: the public-inbox its Message-IDs link to."""
    return _environment().get_template("review.html").render(context(review, archive))


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, finalize=finalize,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def finalize(value: Any) -> Any:
    """Every printed value: text from a series with its control characters shown (escape.text; a quoted
    hunk keeps its tabs), then HTML-escaped by autoescape."""
    if value is None:
        return ""
    return escape.text(value, keep="\t") if isinstance(value, str) else value


def lore(archive: str, msgid: str) -> str | None:
    """The archive's page of MSGID, or None for an id the tool made up."""
    if not msgid or msgid.endswith(INVENTED):
        return None
    return archive.rstrip("/") + "/" + urllib.parse.quote(msgid, safe="@") + "/"


@dataclass(frozen=True)
class Quoted:
    kind: str  # "+", "-", " ", "@" (a hunk or diff header), "out" (a tool's output), "trailer"
    text: str


@dataclass(frozen=True)
class Shown:
    """A finding as the page shows it."""

    finding: Finding
    where: str
    sources: str
    quote: tuple[Quoted, ...]


def context(review: Review, archive: str = DEFAULT_URL) -> dict[str, Any]:
    """What templates/review.html reads, for a page of its own or one that extends it (the bot's series page, which
    fills its blocks `head`, `top` and `more`)."""
    s = review.series
    level, said = conclusion.line(review, [f for f in review.findings if f.level is not Level.INFO]) if s else (None, "")
    return {
        "csp": CSP, "review": review, "s": s, "conclusion": said, "level": str(level) if level else "clean",
        "title": f"Review: {s.subject}" if s else "Review", "kind": _kind(review),
        "link": functools.partial(lore, archive), "base_from": _base_from(review),
        "patches": _patches(review), "findings": _findings(review), "counts": Counter(str(f.level) for f in review.findings),
        "shape": _shape(review), "tests": _tests(review), "benchmarks": [_bench(review, b) for b in review.benchmarks],
        "logs": _logs(review), "total": s.total if s else 0, "stopped": _stopped(review),
    }


def _kind(review: Review) -> str:
    s = review.series
    if s is None:
        return ""
    return "GIT PULL" if s.pull_request else f"{'RFC ' if s.rfc else ''}PATCH v{s.version}"


def _base_from(review: Review) -> str:
    a = review.apply
    return _BASE_FROM.get(a.base_source, a.base_source) if a is not None else ""


def _shape(review: Review) -> list[tuple[str, list[str]]]:
    s = review.series
    if s is None:
        return []
    rows = [("Pull request", [p] if (p := shape.pull(s)) else []), ("Partial reroll", [r] if (r := shape.reroll(s)) else []),
            ("Other postings", shape.other_postings(s)), ("Follow-up patches", shape.followups(s)), ("Sent on behalf", shape.on_behalf(s))]
    return [(title, lines) for title, lines in rows if lines]


def _patches(review: Review) -> list[tuple[int, Patch | None, Counter[str]]]:
    """(index, the patch or None when it is missing from the thread, its findings by level) in order."""
    s = review.series
    if s is None:
        return []
    present = {p.index: p for p in s.patches}
    counts = Counter((f.patch, str(f.level)) for f in review.findings)
    return [(i, present.get(i), Counter({str(lv): counts[(i, str(lv))] for lv in Level if counts[(i, str(lv))]}))
            for i in sorted([*present, *s.missing])]


def _findings(review: Review) -> list[tuple[str, str, list[Shown]]]:
    """(level, heading, findings) per level, worst first; in each, what stops the series first (order.py)."""
    total = review.series.total if review.series else 0
    patches = {p.index: p for p in review.series.patches} if review.series else {}
    groups: dict[Level, list[Shown]] = {}
    for f in order.ordered(review.findings):
        where = ("series" if f.patch is None else f"{f.patch}/{total}") + (f" {f.path}" if f.path else "")
        where += f":{f.line}" if f.line else ""
        shown = Shown(f, where, ", ".join(f.sources or (f.rule,)), tuple(_quote(f, patches.get(f.patch or 0))))
        groups.setdefault(f.level, []).append(shown)
    return [(str(lv), _LEVELS[lv][len(groups[lv]) == 1], groups[lv]) for lv in order.RANK if lv in groups]


def _quote(f: Finding, p: Patch | None) -> list[Quoted]:
    if p is not None and replybody.trailer(f):
        return [Quoted("trailer", ln) for ln in replybody.trailer_block(p)]
    lines = replybody.patch_lines(f, p) if p is not None else None
    if lines is None:
        return [Quoted("out", ln) for ln in f.quote]
    return [Quoted("@" if i == 0 or ln.startswith("@@ ") else ln[:1] or " ", ln) for i, ln in enumerate(lines)]


def _stopped(review: Review) -> tuple[list[Quoted], list[str]]:
    """Where git am stopped: the hunk it could not place (its first lines), and git's own words."""
    failed = order.failure(review)
    if failed is None or review.series is None:
        return [], []
    p = next((p for p in review.series.patches if p.index == failed.patch.index), None)
    change = next((c for c in p.files if failed.path in (c.path, c.old_path)), None) if p is not None else None
    hunk = next((h for h in change.hunks if h.header.startswith(failed.hunk)), None) if change and failed.hunk else None
    if change is None or hunk is None:
        return [], [ln for ln in failed.output if ln]
    lines = [Quoted(ln.kind, f"{ln.kind}{ln.text}") for ln in hunk.lines[:_HUNK_LINES]]
    return [Quoted("@", replybody.diff_line(change)), Quoted("@", hunk.header), *lines], [ln for ln in failed.output if ln]


@dataclass(frozen=True)
class TestRow:
    test: str
    env: str
    base: TestRun | None
    patched: TestRun | None
    where: str
    output: tuple[str, ...]  # the last lines of the patched run's output when it did not pass


def _tests(review: Review) -> list[TestRow]:
    sides: dict[tuple[str, str], dict[str, TestRun]] = {}
    for r in review.selftests:
        sides.setdefault((r.test, r.env), {})[r.tree] = r
    rows = []
    for (test, env), runs in sides.items():
        base, patched = runs.get("base"), runs.get("patched")
        where = shape.ran_on(base.where if base else "", patched.where if patched else "")
        failed = patched if patched is not None and str(patched.result) not in ("pass", "skip", "xfail") else None
        rows.append(TestRow(test, env, base, patched, where, tuple(failed.log.splitlines()[-_OUTPUT_LINES:]) if failed else ()))
    return rows


@dataclass(frozen=True)
class BenchView:
    row: BenchResult
    limit: float
    slower: bool
    chart: chart.Chart


def _bench(review: Review, b: BenchResult) -> BenchView:
    limit = b.verdict.limit if b.verdict is not None and b.verdict.limit is not None else review.slower_than
    slower = b.slower if b.verdict is not None else b.ratio is not None and b.ratio > limit
    return BenchView(b, limit, slower, chart.chart(b, limit))


def _logs(review: Review) -> list[tuple[str, str]]:
    """(what, path) for every log the run kept: the selftests' output, the boot consoles."""
    out = [("the selftests' output", m["path"]) for st in review.stages
           if st.name == "selftests" and (m := _LOGS_IN.search(st.detail))]
    if review.boot is not None:
        out += [(f"boot console, {name}", path) for name, path in review.boot.logs]
    return out


# How a stage names the logs it kept, at the end of its detail (as report/terminal.py reads it).
_LOGS_IN = re.compile(r"; (?:output|console logs) in (?P<path>\S.*)$")
