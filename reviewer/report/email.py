"""The reply mail: an RFC 2822 message in kernel mail style, threaded under the series.

Plain text wrapped at 72 columns (quoted hunk lines and indented figures are never
wrapped), a short greeting, per patch the findings under the hunk lines they are about,
a summary of apply, selftests and benchmarks, and a `-- ` signature. Only the trailers the
user passes are added: a tool never gives Reviewed-by on its own.
"""
from __future__ import annotations

import datetime as dt
import email.policy
import email.utils
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.message import EmailMessage
from enum import StrEnum

from reviewer.model import FileChange, Finding, Hunk, Level, Patch, Review, Series
from reviewer.report import shape
from reviewer.series import mbox
from reviewer.store.results import version

WIDTH = 72
_MAX_QUOTE = 6  # hunk lines quoted per finding: enough to see what is meant
# fetch.ensure_msgids gives a mail without a usable Message-ID one of its own, in this domain
# (RFC 2606 keeps .invalid unused): no real reply can answer it.
INVENTED = "@reviewer.invalid"
HEADER_WIDTH = 78  # RFC 5322 2.1.1: lines "SHOULD" stay within 78 characters, and MUST within 998
_MAX_LINE = 998
_IDS = {"message-id", "in-reply-to", "references"}


class _Policy(email.policy.EmailPolicy):
    """Headers folded at 78 columns, the long Cc: after its commas and the Subject at its spaces; but a
    Message-ID is never cut, and an ASCII Subject never becomes encoded words (Python's folder encodes
    a word longer than the line, and In-Reply-To as a whole): those are folded here at their spaces."""

    def fold(self, name: str, value: str) -> str:
        return self._by_words(name, value) or super().fold(name, value)

    def fold_binary(self, name: str, value: str) -> bytes:
        folded = self._by_words(name, value)
        return folded.encode("ascii") if folded else super().fold_binary(name, value)

    def _by_words(self, name: str, value: str) -> str | None:
        text = str(value)
        if not text.isascii() or (name.lower() not in _IDS and name.lower() != "subject"):
            return None
        lines = fold_words(f"{name}: {text}", HEADER_WIDTH, len(name) + 2)
        if any(len(line) > _MAX_LINE for line in lines):  # a word longer than SMTP allows: encoded words cut it
            return None
        return self.linesep.join(lines) + self.linesep


POLICY = _Policy(linesep="\n", max_line_length=HEADER_WIDTH)  # email.policy.SMTP, with our folding


def fold_words(text: str, width: int, start: int = 0) -> list[str]:
    """TEXT cut into lines before spaces (each later line starts with the space: RFC 5322 folding, so
    joining them back gives TEXT), as few as keep each within WIDTH; a longer word stays whole. Spaces
    before START (after `Name:`) are not break points."""
    lines, begin, last = [], 0, None
    for i, ch in enumerate(text):
        if ch != " " or i < start:
            continue
        if i - begin > width and last is not None:
            lines.append(text[begin:last])
            begin = last
        last = i if i > begin else None
    if len(text) - begin > width and last is not None:
        lines.append(text[begin:last])
        begin = last
    return [*lines, text[begin:]]


class ReplyPolicy(StrEnum):
    AUTHOR = "author"  # To: the author only
    LIST = "list"  # To: the author, Cc: the thread's To: (where the lists go)
    ALL = "all"  # To: the author, Cc: the thread's To: and Cc:


@dataclass(frozen=True)
class ReplyOptions:
    sender: str  # `Name <addr>`
    policy: ReplyPolicy = ReplyPolicy.ALL
    trailers: tuple[str, ...] = ()  # e.g. "Tested-by: Name <addr>", only when the user asks
    date: dt.datetime | None = None  # fixed in tests; default now
    make_msgid: Callable[[], str] | None = None  # fixed in tests; default email.utils.make_msgid
    signature: str = field(default_factory=lambda: f"reviewer {version() or '(unknown version)'}")
    in_reply_to: str | None = None  # --in-reply-to: the real Message-ID to answer (without <>)


def reply(review: Review, opts: ReplyOptions) -> EmailMessage:
    """One reply to the cover letter (or to patch 1 when there is none) about the whole series."""
    s = _series(review)
    target = s.cover if s.cover else (s.patches[0] if s.patches else None)
    subject = subject_line(s, 0 if s.cover else 1, s.cover.subject if s.cover else (s.patches[0].subject if s.patches else s.subject),
                           target.mail_subject if target is not None else "")
    text = body(review, [p for p in s.patches], opts, summary=True)
    to, cc = (target.to, target.cc) if target is not None else ((), ())
    refs = (*target.references, s.msgid) if target is not None else (s.msgid,)
    return _message(opts, s, subject, text, s.msgid, refs, to, cc)


def per_patch(review: Review, opts: ReplyOptions) -> list[EmailMessage]:
    """One reply per patch that has findings, each threaded under that patch."""
    s = _series(review)
    out = []
    for p in s.patches:
        if not _shown(review.findings, p.index):
            continue
        refs = (*p.references, p.msgid) if p.references else ((s.msgid, p.msgid) if s.msgid != p.msgid else (p.msgid,))
        text = body(review, [p], opts, summary=False)
        out.append(_message(opts, s, subject_line(s, p.index, p.subject, p.mail_subject), text, p.msgid, refs, p.to, p.cc))
    return out


def subject_line(s: Series, index: int, subject: str, sent: str = "") -> str:
    """`Re: ` and the Subject as it was sent (`[RFC PATCH v2 0/4] ...`); rebuilt as git
    format-patch and b4 write it when the original is not known."""
    if sent:
        return sent if sent.lower().startswith("re:") else f"Re: {sent}"
    prefix = "PATCH" + (f" v{s.version}" if s.version > 1 else "")
    if s.total > 1 or index == 0:
        prefix += f" {index}/{s.total}"
    return f"Re: [{prefix}] {subject}"


def body(review: Review, patches: list[Patch], opts: ReplyOptions, *, summary: bool) -> str:
    s = _series(review)
    parts = [_greeting(s), _intro(review, patches, summary)]
    if summary:
        parts += _series_findings(review, s)
    for p in patches:
        parts += _patch_section(review, p, s)
    if summary:
        parts += _summary(review)
    if opts.trailers:
        parts.append("\n".join(opts.trailers))
    parts.append("Thanks,\n" + (email.utils.parseaddr(opts.sender)[0] or email.utils.parseaddr(opts.sender)[1]))
    return "\n\n".join(p for p in parts if p) + f"\n\n-- \n{opts.signature}\n"


def _series(review: Review) -> Series:
    assert review.series is not None, "a reply needs a series that was read"
    return review.series


def _shown(findings: Iterable[Finding], index: int | None) -> list[Finding]:
    """The findings a reply talks about: errors and warnings (infos are the tool's own notes)."""
    return [f for f in findings if f.patch == index and f.level is not Level.INFO]


def _greeting(s: Series) -> str:
    first = s.author.name.split()[0] if s.author.name.split() else ""
    return f"Hi {first}," if first else "Hello,"


def _intro(review: Review, patches: list[Patch], summary: bool) -> str:
    n = sum(len(_shown(review.findings, p.index)) for p in patches)
    if summary:
        n += len(_series_level(review, _series(review)))
    what = ("the pull request" if _series(review).pull_request else "the series") if summary else "this patch"
    if not n:
        return wrap(f"I went through {what} with reviewer, an automated review tool, and it found nothing to comment on.")
    return wrap(f"I went through {what} with reviewer, an automated review tool. "
                f"It raised {n} point{'s' if n != 1 else ''}, below with the lines of the patch it is about.")


def _series_level(review: Review, s: Series) -> list[Finding]:
    """Findings about the whole series, or about a patch that is not in the thread."""
    present = {p.index for p in s.patches}
    return [f for f in review.findings if f.level is not Level.INFO and (f.patch is None or f.patch not in present)]


def _series_findings(review: Review, s: Series) -> list[str]:
    found = _series_level(review, s)
    if not found:
        return []
    return ["About the series as a whole:", *(_comment(f) for f in found)]


def _patch_section(review: Review, p: Patch, s: Series) -> list[str]:
    found = _shown(review.findings, p.index)
    if not found:
        return []
    head = f"[{p.index}/{s.total}] {p.subject}" if s.total > 1 else p.subject
    # checkpatch's own reports (those no check of ours shares) go in one block, as a maintainer pastes
    # checkpatch's output; the others each under the hunk lines they are about, one quote per fact.
    alone = [f for f in found if _checkpatch_only(f)]
    block = ["checkpatch.pl says:\n\n" + "\n\n".join(_checkpatch_report(f) for f in alone)] if alone else []
    # Facts about the same hunk share one quote: the longest of theirs.
    groups: dict[tuple[str, ...], tuple[list[str], list[Finding]]] = {}
    for f in found:
        if not _checkpatch_only(f):
            quote = quote_lines(f, p)
            key = tuple(quote[:2]) if len(quote) > 2 and quote[1].startswith("@@") else tuple(quote) or (f"#{id(f)}",)
            kept, facts = groups.get(key, (quote, []))
            groups[key] = (quote if len(quote) > len(kept) else kept, [*facts, f])
    return [head, *(_quoted_block(q, fs) for q, fs in groups.values()), *block]


def _checkpatch_only(f: Finding) -> bool:
    return all(r.startswith("checkpatch/") for r in (f.sources or (f.rule,)))


_CHECKPATCH_LEVEL = {Level.ERROR: "ERROR", Level.WARNING: "WARNING", Level.INFO: "CHECK"}


def _checkpatch_report(f: Finding) -> str:
    """One report as checkpatch.pl prints it: `WARNING: message`, `FILE: path:line:`, the line."""
    lines = [f"{_CHECKPATCH_LEVEL[f.level]}: {f.message}"]
    if f.path:
        lines.append(f"FILE: {f.path}:{f.line}:" if f.line is not None else f"FILE: {f.path}")
    lines += list(f.quote[:1])
    return "\n".join(lines)


def _quoted_block(quote: list[str], found: list[Finding]) -> str:
    comments = "\n\n".join(_comment(f) for f in found)
    return "\n".join(f"> {q}".rstrip() for q in quote) + "\n\n" + comments if quote else comments


def _comment(f: Finding) -> str:
    text = _sentence(f.message)
    if f.hint:
        text += f" Maybe {f.hint.rstrip('.')}?"
    return wrap(text)


def _sentence(message: str) -> str:
    message = message.strip()
    first = message.split(" ", 1)[0]
    text = message[:1].upper() + message[1:] if first.isalpha() and first.islower() else message
    return text if text.endswith((".", "?", "!")) else text + "."


def quote_lines(f: Finding, p: Patch) -> list[str]:
    """The hunk lines F is about: its own quote, else the lines near its line, else the file's first change."""
    change = next((c for c in p.files if c.path == f.path), None)
    if change is None or not change.hunks:
        return list(f.quote)
    head = [f"diff --git a/{change.old_path or change.path} b/{change.path}"]
    if f.quote:
        hunk = _hunk_with(change, f.quote[0])
        return head + ([hunk.header] if hunk else []) + list(f.quote)
    return head + _around(change, f.line)


def _hunk_with(change: FileChange, quoted: str) -> Hunk | None:
    for h in change.hunks:
        if any(f"{ln.kind}{ln.text}" == quoted for ln in h.lines):
            return h
    return None


def _around(change: FileChange, line: int | None) -> list[str]:
    for h in change.hunks:
        lines = list(h.lines)
        at = next((i for i, ln in enumerate(lines) if line is not None and ln.new_no == line and ln.kind != "-"), None)
        if line is not None and at is None:
            continue
        if at is None:  # no line: the first change of the file, with one line of context
            at = next((i for i, ln in enumerate(lines) if ln.kind != " "), 0)
        end = at
        while end + 1 < len(lines) and lines[end + 1].kind != " ":
            end += 1  # the whole block of changed lines, then one line of context
        picked = lines[max(0, at - 1) : min(end + 2, at - 1 + _MAX_QUOTE)]
        return [h.header, *(f"{ln.kind}{ln.text}" for ln in picked)]
    return []


def _summary(review: Review) -> list[str]:
    parts = ["What the tool ran:"]
    parts.append(_apply_line(review))
    parts += _build_lines(review)
    parts += _selftest_lines(review)
    parts += _bench_lines(review)
    return ["\n".join(parts)]


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
        return f"  apply: patch {failed.index}/{s.total} does not apply to {a.base[:12]}"
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
        rows.setdefault((r.test, r.env), {})[r.tree] = f"{r.result} {r.seconds:.2f}s" + (f" ({r.reason})" if r.result == "pass" and r.reason else "")
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


_CODE = re.compile(r"`[^`]*`")


def wrap(text: str, width: int = WIDTH) -> str:
    """Wrap prose at WIDTH; `code spans` are kept on one line."""
    protected = _CODE.sub(lambda m: m.group(0).replace(" ", "\0"), text)
    lines = textwrap.wrap(protected, width=width, break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines).replace("\0", " ")


def recipients(s: Series, to: tuple[str, ...], cc: tuple[str, ...], policy: ReplyPolicy, sender: str) -> tuple[list[str], list[str]]:
    """(To, Cc): the author first (and whoever sent a patch on an author's behalf); then the
    thread's To/Cc as POLICY says, without duplicates or the sender."""
    seen = {email.utils.parseaddr(sender)[1].lower()}
    out_to = _unique([str(s.author), *(str(p.sender) for p in s.patches if p.sender), *(str(p.author) for p in s.patches if p.sender)], seen)
    wanted = {ReplyPolicy.AUTHOR: (), ReplyPolicy.LIST: to, ReplyPolicy.ALL: (*to, *cc)}[policy]
    return out_to, _unique(list(wanted), seen)


def _unique(addrs: list[str], seen: set[str]) -> list[str]:
    out = []
    for a in addrs:
        key = email.utils.parseaddr(a)[1].lower()
        if key and key not in seen:
            seen.add(key)
            out.append(a)
    return out


def invented_parent(msg: EmailMessage) -> str | None:
    """The Message-ID MSG answers when the tool made it up (the mail had none), else None."""
    parent = str(msg.get("In-Reply-To", "")).strip()
    return parent if parent.endswith(f"{INVENTED}>") else None


def threading_ids(parent: str, refs: tuple[str, ...], given: str | None) -> tuple[str, tuple[str, ...]]:
    """(In-Reply-To, References) ids: GIVEN (--in-reply-to) replaces the parent, and then no made-up
    id stays in References. Without it a made-up parent is kept, for invented_parent to find."""
    if given is None:
        return parent, refs
    return given, (*(r for r in refs if not r.endswith(INVENTED) and r not in (parent, given)), given)


def _message(opts: ReplyOptions, s: Series, subject: str, text: str, parent: str,
             refs: tuple[str, ...], to: tuple[str, ...], cc: tuple[str, ...]) -> EmailMessage:
    parent, refs = threading_ids(parent, refs, opts.in_reply_to)
    msg = EmailMessage(policy=POLICY)
    out_to, out_cc = recipients(s, to, cc, opts.policy, opts.sender)
    msg["From"] = opts.sender
    msg["To"] = ", ".join(out_to)
    if out_cc:
        msg["Cc"] = ", ".join(out_cc)
    msg["Subject"] = subject
    msg["Date"] = email.utils.format_datetime(opts.date or dt.datetime.now().astimezone())
    msg["Message-ID"] = opts.make_msgid() if opts.make_msgid else email.utils.make_msgid(domain=_domain(opts.sender))
    msg["In-Reply-To"] = f"<{parent}>"
    msg["References"] = " ".join(f"<{r}>" for r in refs)
    msg.set_content(text, charset="utf-8", cte=_cte(text))
    return msg


def _cte(text: str) -> str:
    """7bit or 8bit, unless a line (a quoted hunk line is never wrapped) is longer than SMTP's 998
    octets: then quoted-printable, which may cut it."""
    if any(len(line.encode()) > _MAX_LINE for line in text.splitlines()):
        return "quoted-printable"
    return "7bit" if text.isascii() else "8bit"


def _domain(sender: str) -> str:
    addr = email.utils.parseaddr(sender)[1]
    return addr.rpartition("@")[2] or "localhost"


def as_bytes(msg: EmailMessage) -> bytes:
    return msg.as_bytes(policy=POLICY)


def as_mbox(msgs: list[EmailMessage]) -> bytes:
    """Several messages as one mbox (mboxrd: `From ` lines in bodies get a `>`), for --per-patch."""
    return mbox.write(as_bytes(msg).rstrip(b"\n") + b"\n" for msg in msgs)  # one line end each, as before

