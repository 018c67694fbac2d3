"""The terminal report, with rich: the conclusion line, header, per-patch table, findings (errors
first), stages. Every string from the series is a Text made by escape.terminal: rich would read a
plain str in a table as markup, and lets escape sequences through."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from reviewer.ktap import Result
from reviewer.model import Finding, Level, Review, Series, StageStatus, TestRun
from reviewer.report import conclusion, escape, order, shape
from reviewer.report.escape import terminal as _t

_STYLE = {Level.ERROR: "bold red", Level.WARNING: "yellow", Level.INFO: "cyan"}
_STAGE_STYLE = {StageStatus.OK: "green", StageStatus.FAILED: "bold red", StageStatus.SKIPPED: "dim"}


def render(review: Review, console: Console) -> None:
    # soft_wrap: finding lines stay whole when piped, so they can be grepped.
    for part in build(review):
        console.print(part, soft_wrap=isinstance(part, Text))


def build(review: Review) -> list[RenderableType]:
    parts: list[RenderableType] = []
    if review.series is not None:
        level, said = conclusion.line(review, [f for f in review.findings if f.level is not Level.INFO])
        parts += [_t(said, _STYLE[level] if level else "bold green"), Text("")]
        table = [_patch_table(review)] if review.series.patches or review.series.missing else []
        parts += [_header(review.series), *table, Text("")]
    parts += [_findings(review.findings, review.series), Text("")]
    if review.apply is not None:
        parts += [_apply(review), Text("")]
    if review.builds:
        parts += [_builds(review), Text("")]
    if review.chosen:
        parts += [_chosen(review), Text("")]
    if review.selftests:
        parts += [_selftests(review), Text("")]
    if review.benchmarks:
        parts += [_benchmarks(review), Text("")]
    parts += _selftest_logs(review)
    if review.boot is not None and review.boot.log_dir:
        parts += [Text.assemble(("Logs", "bold"), f"  {escape.text(str(review.boot.log_dir))} (the boot console logs)"), Text("")]
    parts += [_stages(review)]
    return parts


def _header(s: Series) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    kind = "GIT PULL" if s.pull_request else f"{'RFC ' if s.rfc else ''}PATCH v{s.version}"
    grid.add_row("Series", _t(f"[{kind}] {s.subject}", "bold"))
    if (pull := shape.pull(s)) is not None:
        grid.add_row("Pull request", _t(pull))
    grid.add_row("Author", _t(str(s.author)))
    grid.add_row("Date", s.date.strftime("%Y-%m-%d %H:%M %z") if s.date else "-")
    shown = f"{len(s.patches)} of {s.total}" if s.missing else str(s.total)
    if s.pull_request and not s.patches:
        shown = "none in the mail (a pull request without a diff)"
    grid.add_row("Patches", shown + (" + cover letter" if s.cover and not s.pull_request else ""))
    grid.add_row("Message-ID", _t(f"<{s.msgid}>"))
    grid.add_row("Base", _t(s.base_commit or "unknown (no base-commit: line)"))
    if s.cover and s.cover.trailers:
        grid.add_row("Series trailers", _t(", ".join(f"{t.name}: {t.value}" for t in s.cover.trailers)))
    if len(s.revisions) > 1:
        grid.add_row("Revisions", ", ".join(f"v{r}" for r in s.revisions) + f" (showing v{s.version})")
    rows = [("Partial reroll", [r] if (r := shape.reroll(s)) else []), ("Other postings", shape.other_postings(s)),
            ("Follow-up patches", shape.followups(s)), ("Sent on behalf", shape.on_behalf(s))]
    for title, lines in rows:
        if lines:
            grid.add_row(title, Text("\n").join(_t(line) for line in lines))
    return grid


def _patch_table(review: Review) -> Table:
    assert review.series is not None
    counts = Counter((f.patch, f.level) for f in review.findings)
    table = Table(title=None, show_edge=False, header_style="bold")
    for name, justify in (("#", "right"), ("Subject", "left"), ("Files", "right"), ("+", "right"),
                          ("-", "right"), ("Findings", "left"), ("Trailers", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    s = review.series
    present = {p.index: p for p in s.patches}
    for index in sorted([*present, *s.missing]):
        p = present.get(index)
        if p is None:
            table.add_row(f"{index}/{s.total}", Text("(missing from the thread)", style="bold red"), "", "", "", "", "")
            continue
        given = [t.name for t in p.trailers if t.source == "followup"] + [f"attest: {a.split(' ', 1)[0]}" for a in p.attestation]
        table.add_row(
            f"{index}/{s.total}", _t(p.subject), str(len(p.files)), f"+{p.added}", f"-{p.removed}",
            _counts(counts, index), _t(", ".join(given)),
        )
    return table


def _counts(counts: Counter[tuple[int | None, Level]], index: int) -> Text:
    text = Text()
    for level in Level:
        if counts[(index, level)]:
            text.append(f"{counts[(index, level)]} {level} ", style=_STYLE[level])
    return text


def _findings(findings: Iterable[Finding], series: Series | None) -> RenderableType:
    findings = order.ordered(findings)  # what stops the series, then errors, warnings, infos
    if not findings:
        return Text("No findings.", style="green")
    lines = Text()
    total = series.total if series else 0
    for f in findings:
        lines.append(escape.text(location(f, total)) + ": ")
        lines.append(f"[{f.level}]", style=_STYLE[f.level])
        lines.append(f" {escape.text(f.message)} ")
        lines.append(escape.text(f"({', '.join(f.sources or (f.rule,))})"), style="dim")
        lines.append("\n")
        for q in f.quote:
            lines.append(f"    {escape.text(q)}\n", style="dim")
        if f.hint:
            lines.append(f"    hint: {escape.text(f.hint)}\n", style="dim")
    lines.rstrip()
    return lines


def location(f: Finding, total: int) -> str:
    """`0003/0007 arch/x86/Kconfig:12`, `series` when the finding is about the whole series."""
    where = f"{f.patch:04d}/{total:04d}" if f.patch is not None else "series"
    if f.path:
        where += f" {f.path}" + (f":{f.line}" if f.line else "")
    return where


def _apply(review: Review) -> Text:
    a = review.apply
    assert a is not None
    total = review.series.total if review.series else 0
    text = Text(f"Applied to {a.base[:12]} (base from {a.base_source}):\n", style="bold")
    for p in a.patches:
        style = "bold red" if p.status == "failed" else "green"
        text.append(f"  {p.index}/{total} ")
        text.append(p.status, style=style)
        text.append(f"  {escape.text(p.detail)}\n" if p.detail else "\n")
    text.rstrip()
    return text


def _chosen(review: Review) -> Text:
    text = Text("Relevant tests:\n", style="bold")
    for c in review.chosen:
        text.append(f"  {escape.text(c.test)}", style="bold")
        text.append(f"  ({escape.text('; '.join(c.why))})\n")
    text.rstrip()
    return text


_RESULT_STYLE = {"pass": "green", "skip": "yellow", "xfail": "green", "todo": "yellow"}


def _builds(review: Review) -> Table:
    """Per target, per step: built, failed or skipped, the warnings (W=1), what make was asked for; the vDSO's exports."""
    total = len(review.series.patches) if review.series else 0
    table = Table(title="Build (W=1, base then each patch)", title_justify="left", show_edge=False, header_style="bold")
    for name in ("Target", "Step", "Result", "Warnings", "Seconds", "Built / why"):
        table.add_column(name)
    for b in review.builds:
        if b.problem:
            table.add_row(b.target, "-", Text("not built", style="yellow"), "", "", _t(b.problem))
        shown: dict[str, tuple[str, ...]] = {}  # a vDSO's exports are shown once, and again where they change
        for st in b.steps:
            style = {"built": "green", "failed": "bold red", "timeout": "red"}.get(st.status, "dim")
            what = st.detail if st.status != "built" else ", ".join(st.goals)
            vdso = "; ".join(f"{path}: {', '.join(syms) or 'no functions'}" if shown.get(path) != syms else f"{path} exports the same"
                             for path, syms in st.vdso)
            shown.update(st.vdso)
            table.add_row(b.target, "base" if not st.patch else f"{st.patch}/{total}", Text(st.status, style=style),
                          str(st.warnings) if st.status in ("built", "failed") else "", f"{st.seconds:.1f}" if st.seconds else "",
                          _t(what + (f"\nvDSO {vdso}" if vdso else ""), keep="\n"))
    return table


def _selftests(review: Review) -> Table:
    table = Table(title="Selftests (base vs patched)", title_justify="left", show_edge=False, header_style="bold")
    for name in ("Test", "Env", "Base", "Patched", "Reason (patched)", "Ran on"):
        table.add_column(name)
    rows: dict[tuple[str, str], dict[str, TestRun]] = {}
    for r in review.selftests:
        rows.setdefault((r.test, r.env), {})[r.tree] = r
    for (test, env), sides in rows.items():
        cells = [_result(sides.get(t)) for t in ("base", "patched")]
        reason = (sides.get("patched") or sides.get("base") or TestRun("", "", "", Result.ERROR, 0)).reason
        where = shape.ran_on(*(sides[t].where if t in sides else "" for t in ("base", "patched")))
        table.add_row(_t(test), _t(env), *cells, _t(reason), _t(where))
    return table


def _result(r: TestRun | None) -> Text:
    if r is None:
        return Text("-", style="dim")
    return Text(f"{r.result} {r.seconds:.2f}s", style=_RESULT_STYLE.get(str(r.result), "bold red"))


def _benchmarks(review: Review) -> Table:
    table = Table(title="Benchmarks (median seconds; ratio = patched / base)", title_justify="left", show_edge=False, header_style="bold")
    for name in ("Benchmark", "Env", "Metric", "Base", "Patched", "Ratio", "Runs", "Spread", "Verdict", "Ran on"):
        table.add_column(name, justify="left" if name in ("Benchmark", "Env", "Metric", "Verdict", "Ran on") else "right")
    for b in review.benchmarks:
        # The stages' verdict (beyond --slower-than and beyond the noise); a row never judged marks the bare ratio.
        slower = b.slower if b.verdict is not None else b.ratio is not None and b.ratio > review.slower_than
        ratio = Text(f"{b.ratio:.2f}x", style="bold red" if slower else "") if b.ratio is not None else Text("-")
        style = "bold red" if slower else "dim" if b.verdict and not b.verdict.significant else ""
        verdict = Text(b.verdict.text, style=style) if b.verdict else Text("-")
        if b.stalled:
            verdict.append(f"\n{b.stalled}", style="dim")
        table.add_row(b.name, b.env, b.metric, _num(b.base), _num(b.patched), ratio, str(b.runs), f"{b.spread:.0%}", verdict, b.where)
    return table


def _num(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


# Where a stage kept its logs ends its detail ("...; output in /path"): a table cell would cut the
# path with an ellipsis or wrap it mid-path, so the cell points at a `Logs` line of its own above the
# table, printed whole (render prints a Text with soft_wrap: no wrapping, no cropping).
_LOGS_IN = re.compile(r"; (?P<what>output|console logs) in (?P<path>\S.*)$")


def _selftest_logs(review: Review) -> list[RenderableType]:
    paths = [m["path"] for st in review.stages if st.name == "selftests" and (m := _LOGS_IN.search(st.detail))]
    return [part for path in paths for part in (Text.assemble(("Logs", "bold"), f"  {escape.text(path)} (the selftests' output)"),
                                                Text(""))]


def _stages(review: Review) -> Table:
    table = Table(show_edge=False, header_style="bold")
    for name in ("Stage", "Status", "Seconds", "Detail"):
        table.add_column(name, justify="right" if name == "Seconds" else "left")
    for st in review.stages:
        detail = _LOGS_IN.sub(lambda m: f"; {m['what']}: see Logs above", st.detail)
        table.add_row(st.name, Text(str(st.status), style=_STAGE_STYLE[st.status]), f"{st.seconds:.2f}", _t(detail))
    return table
