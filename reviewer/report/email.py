"""The reply mail's text, in kernel mail style: what it concludes first, then what stops the series,
errors, warnings, a summary of what ran, and a `-- ` signature.

A greeting; the conclusion (conclusion.py, the line that also heads the terminal report); the
findings (replybody.py: ordered by what matters, each fact once, under the hunk lines it is about;
infos only with --reply-infos); the summary of apply, build, selftests and benchmarks; only the
trailers the user passes (a tool never gives Reviewed-by on its own). Prose is wrapped at 72
columns, quoted patch lines and tool output are not (prose.py); every string from the series goes
through escape.text. The message around it (headers, threading, bytes) is message.py's.
"""
from __future__ import annotations

import email.utils
from email.message import EmailMessage

from reviewer.model import Patch, Review, Series
from reviewer.report import conclusion, escape, replybody, shape
from reviewer.report.message import INVENTED as INVENTED
from reviewer.report.message import POLICY as POLICY
from reviewer.report.message import ReplyOptions as ReplyOptions
from reviewer.report.message import ReplyPolicy as ReplyPolicy
from reviewer.report.message import as_bytes as as_bytes
from reviewer.report.message import as_mbox as as_mbox
from reviewer.report.message import fold_words as fold_words
from reviewer.report.message import invented_parent as invented_parent
from reviewer.report.message import message
from reviewer.report.message import recipients as recipients
from reviewer.report.message import threading_ids as threading_ids
from reviewer.report.prose import WIDTH as WIDTH
from reviewer.report.prose import hang
from reviewer.report.prose import wrap as wrap


def reply(review: Review, opts: ReplyOptions) -> EmailMessage:
    """One reply to the cover letter (or to patch 1 when there is none) about the whole series."""
    s = _series(review)
    target = s.cover if s.cover else (s.patches[0] if s.patches else None)
    subject = subject_line(s, 0 if s.cover else 1, s.cover.subject if s.cover else (s.patches[0].subject if s.patches else s.subject),
                           target.mail_subject if target is not None else "")
    text = body(review, [p for p in s.patches], opts, summary=True)
    to, cc = (target.to, target.cc) if target is not None else ((), ())
    refs = (*target.references, s.msgid) if target is not None else (s.msgid,)
    return message(opts, s, subject, text, s.msgid, refs, to, cc)


def per_patch(review: Review, opts: ReplyOptions) -> list[EmailMessage]:
    """One reply per patch that has findings, each threaded under that patch."""
    s = _series(review)
    out = []
    for p in s.patches:
        if not replybody.shown(review, infos=opts.infos, patch=p.index) and not _stopped_at(review, p):
            continue
        refs = (*p.references, p.msgid) if p.references else ((s.msgid, p.msgid) if s.msgid != p.msgid else (p.msgid,))
        text = body(review, [p], opts, summary=False)
        out.append(message(opts, s, subject_line(s, p.index, p.subject, p.mail_subject), text, p.msgid, refs, p.to, p.cc))
    return out


def subject_line(s: Series, index: int, subject: str, sent: str = "") -> str:
    """`Re: ` and the Subject as it was sent (`[RFC PATCH v2 0/4] ...`); rebuilt as git
    format-patch and b4 write it when the original is not known."""
    if sent:
        return sent if sent.lower().startswith("re:") else f"Re: {sent}"
    prefix = ("RFC " if s.rfc else "") + "PATCH" + (f" v{s.version}" if s.version > 1 else "")
    if s.total > 1 or index == 0:
        prefix += f" {index}/{s.total}"
    return f"Re: [{prefix}] {subject}"


def body(review: Review, patches: list[Patch], opts: ReplyOptions, *, summary: bool) -> str:
    """SUMMARY: the reply about the whole series; else about the one patch in PATCHES."""
    s = _series(review)
    patch = None if summary else patches[0].index
    found = replybody.shown(review, infos=opts.infos, patch=patch)
    _, said = conclusion.line(review, found, patch)
    parts = [_greeting(s), wrap(escape.text(said)), _intro(s, summary=summary), *replybody.paragraphs(review, found, patch)]
    if summary:
        parts += _summary(review)
    if opts.trailers:
        parts.append("\n".join(opts.trailers))
    parts.append("Thanks,\n" + (email.utils.parseaddr(opts.sender)[0] or email.utils.parseaddr(opts.sender)[1]))
    return "\n\n".join(p for p in parts if p) + f"\n\n-- \n{opts.signature}\n"


def _series(review: Review) -> Series:
    assert review.series is not None, "a reply needs a series that was read"
    return review.series


def _stopped_at(review: Review, p: Patch) -> bool:
    failed = review.apply.failed if review.apply is not None else None
    return failed is not None and failed.index == p.index


def _greeting(s: Series) -> str:
    first = s.author.name.split()[0] if s.author.name.split() else ""
    return escape.unforgeable(f"Hi {escape.text(first)},") if first else "Hello,"


def _intro(s: Series, *, summary: bool) -> str:
    what = ("the pull request" if s.pull_request else "the series") if summary else "this patch"
    return wrap(f"I went through {what} with reviewer, an automated review tool.")


def _summary(review: Review) -> list[str]:
    parts = ["What the tool ran:"]
    parts.append(_apply_line(review))
    parts += _build_lines(review)
    parts += _selftest_lines(review)
    parts += _bench_lines(review)
    return ["\n".join(hang(escape.text(line)) for line in parts)]


def _build_lines(review: Review) -> list[str]:
    """One line per target --build compiled: how many of the steps built (the findings say what failed)."""
    if not review.builds:
        return []
    out = ["  build (W=1, the base then each patch):"]
    for b in review.builds:
        if b.problem:
            out.append(f"    {b.target}: not built ({b.problem})")
            continue
        counts = {st: sum(1 for x in b.steps if x.status == st) for st in ("built", "failed", "skipped", "timeout")}
        said = ", ".join(f"{n} {st}" for st, n in counts.items() if n)
        out.append(f"    {b.target} ({b.toolchain}): {said} of {len(b.steps)} steps")
    return out


def _apply_line(review: Review) -> str:
    a, s = review.apply, _series(review)
    if a is None:
        return "  apply: not tried (no kernel tree given)"
    failed = a.failed
    if failed is not None:
        return f"  apply: stopped at patch {failed.index}/{s.total} on {a.base[:12]} (see above)"
    merged = [p.index for p in a.patches if "3-way" in p.status]
    extra = f", {len(merged)} with a 3-way merge" if merged else ""
    return f"  apply: {len(a.patches)} of {s.total} patches applied to {a.base[:12]} (base from {a.base_source}){extra}"


def _selftest_lines(review: Review) -> list[str]:
    if not review.selftests:
        chosen = ", ".join(c.test for c in review.chosen)
        return [f"  selftests: not run (relevant: {chosen})"] if chosen else ["  selftests: not run"]
    rows: dict[tuple[str, str], dict[str, str]] = {}
    where: dict[tuple[str, str], dict[str, str]] = {}
    for r in review.selftests:
        # A pass has a reason only when the sandbox or the guest saw more (processes left running...): never a plain pass.
        reason = f" ({r.reason})" if r.result == "pass" and r.reason else ""
        rows.setdefault((r.test, r.env), {})[r.tree] = f"{r.result} {r.seconds:.2f}s{reason}"
        where.setdefault((r.test, r.env), {})[r.tree] = r.where
    places = {k: shape.ran_on(w.get("base", ""), w.get("patched", "")) for k, w in where.items()}
    # One place for all (the usual case) is said once, in the heading; else each row says its own.
    common = next(iter(set(places.values()))) if len(set(places.values())) == 1 else None
    out = [f"  selftests (base -> patched){f', run on {common}' if common else ''}:"]
    for (test, env), sides in rows.items():
        at = "" if common is not None else f" (run on {places[(test, env)]})" if places[(test, env)] else ""
        out.append(f"    {test} [{env}]: {sides.get('base', '-')} -> {sides.get('patched', '-')}{at}")
    return out


def _bench_lines(review: Review) -> list[str]:
    if not review.benchmarks:
        return []
    out = ["  benchmarks (median, base -> patched, ratio):"]
    for b in review.benchmarks:
        ratio = f"{b.ratio:.2f}x" if b.ratio is not None else "-"
        out.append(f"    {b.name} {b.metric} [{b.env}], {b.runs} runs{f', on {b.where}' if b.where else ''}:")
        out.append(f"      {_num(b.base)} -> {_num(b.patched)} {b.unit} ({ratio})")
        if b.verdict:  # verdict.py: beyond the threshold and beyond the noise, or not (a line of its own: figures stay short)
            out.append(f"      {b.verdict.text}")
        if b.stalled:
            out.append(f"      {b.stalled}")
    return out


def _num(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"
