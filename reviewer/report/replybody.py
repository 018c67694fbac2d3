"""The findings part of the reply, in the order of order.py: where git am stopped first, then
errors, then warnings (infos with --reply-infos), each fact once.

A heading names the level and the patch (`Errors in [1/4] LoongArch: ...`; a fact on several
patches: `Warning in 2/4, 3/4 and 4/4`), so no heading is said twice. Facts about the same hunk
share its quote; a trailer fact quotes the patch's trailer block; checkpatch.pl's own reports are
pasted as checkpatch prints them, indented, one paragraph per type. Every string from the series
goes through escape.text; prose through prose.wrap; quoted patch lines and tool output are never
wrapped.
"""
from __future__ import annotations

from collections.abc import Sequence

from reviewer.model import FileChange, Finding, Hunk, Level, Patch, Review, Series
from reviewer.report import escape, order
from reviewer.report.prose import VERBATIM, wrap

_MAX_QUOTE = 6  # hunk lines quoted per finding: enough to see what is meant
_WORDS = {Level.ERROR: ("Error", "Errors"), Level.WARNING: ("Warning", "Warnings"), Level.INFO: ("Note", "Notes")}
_CHECKPATCH_LEVEL = {Level.ERROR: "ERROR", Level.WARNING: "WARNING", Level.INFO: "CHECK"}
# Facts about the commit message's trailers: they quote the trailer block, not a line of the diff
# (checkpatch names the line past the patch's end for them).
TRAILER_RULES = frozenset({
    "author-signoff", "fixes-tag", "change-id", "dropped-trailers", "checkpatch/MISSING_SIGN_OFF", "checkpatch/NO_AUTHOR_SIGN_OFF",
    "checkpatch/FROM_SIGN_OFF_MISMATCH", "checkpatch/BAD_FIXES_TAG", "checkpatch/UNKNOWN_COMMIT_ID", "checkpatch/GERRIT_CHANGE_ID",
    "checkpatch/BAD_SIGN_OFF", "checkpatch/DUPLICATE_SIGN_OFF", "checkpatch/BAD_STABLE_ADDRESS_STYLE", "checkpatch/BAD_REPORTED_BY_LINK",
})


def shown(review: Review, *, infos: bool, patch: int | None = None) -> list[Finding]:
    """The findings a reply talks about: errors and warnings, infos when asked; PATCH: only that patch's."""
    return [f for f in review.findings if (infos or f.level is not Level.INFO) and (patch is None or f.patch == patch)]


def paragraphs(review: Review, findings: Sequence[Finding], patch: int | None = None) -> list[str]:
    """FINDINGS (those shown) as the reply's paragraphs; PATCH: a reply about that patch alone."""
    assert review.series is not None
    s = review.series
    out = _stopped(review, s, patch)
    groups: dict[tuple[Level, tuple[int, ...]], list[order.Fact]] = {}
    present = {p.index for p in s.patches}
    for fact in order.facts(findings):
        scope = tuple(i for i in fact.patches if i in present)
        groups.setdefault((fact.level, scope), []).append(fact)
    said: set[str] = set()  # hints and quotes already given: each is said once
    for (level, scope), facts in groups.items():
        out.append(wrap(escape.text(_heading(level, len(facts), scope, s, patch))))
        out += _facts(facts, s, said)
    return out


def _heading(level: Level, n: int, scope: tuple[int, ...], s: Series, patch: int | None) -> str:
    word = _WORDS[level][n != 1]
    if patch is not None:
        return f"{word} in this patch"
    if not scope:
        return f"{word} about the series as a whole"
    if len(scope) == 1:
        p = next(p for p in s.patches if p.index == scope[0])
        return f"{word} in [{p.index}/{s.total}] {p.subject}" if s.total > 1 else f"{word} in the patch"
    names = [f"{i}/{s.total}" for i in scope]
    return f"{word} in {', '.join(names[:-1])} and {names[-1]}"


def _facts(facts: list[order.Fact], s: Series, said: set[str]) -> list[str]:
    """Facts under their quotes (facts about the same hunk share the longest quote), then checkpatch's reports."""
    quoted: dict[tuple[str, ...], tuple[list[str], list[Finding]]] = {}
    pasted: list[str] = []
    for fact in facts:
        f = fact.first
        if order.checkpatch_only(f) and not trailer(f):
            pasted.append(_checkpatch(fact, s))
            continue
        patch = next((p for p in s.patches if p.index == f.patch), None) if len(fact.patches) == 1 else None
        # a fact on several patches quotes none of them (its heading names them); one on the series, its tool output
        quote = quote_lines(f, patch) if patch is not None else [] if fact.patches else verbatim(f.quote)
        key = tuple(quote[:2]) if len(quote) > 2 and quote[1].startswith("> @@") else tuple(quote) or (f"#{id(f)}",)
        kept, found = quoted.get(key, (quote, []))
        quoted[key] = (quote if len(quote) > len(kept) else kept, [*found, f])
    return [*(_block(q, fs, said) for q, fs in quoted.values()), *pasted]


def _block(quote: list[str], found: list[Finding], said: set[str]) -> str:
    comments = "\n\n".join(_comment(f, said) for f in found)
    shown = "\n".join(quote)
    if not quote or shown in said:  # the same lines, quoted for a fact at another level
        return comments
    said.add(shown)
    return shown + "\n\n" + comments


def _comment(f: Finding, said: set[str]) -> str:
    text = sentence(escape.text(f.message))
    hint = escape.text(f.hint.rstrip(".")) if f.hint else ""
    if hint and hint not in said:
        said.add(hint)
        text += f" Maybe {hint}?"
    return wrap(text)


def sentence(message: str) -> str:
    message = message.strip()
    first = message.split(" ", 1)[0]
    text = message[:1].upper() + message[1:] if first.isalpha() and first.islower() else message
    return text if text.endswith((".", "?", "!")) else text + "."


def _checkpatch(fact: order.Fact, s: Series) -> str:
    """One type's reports as checkpatch.pl prints them (`WARNING: message`, `FILE: path:line:`, the line), indented."""
    several = len(fact.patches) > 1
    lines: list[str] = []
    for f in fact.findings:
        lines.append(f"{f'[{f.patch}/{s.total}] ' if several else ''}{_CHECKPATCH_LEVEL[f.level]}: {f.message}")
        if f.path:
            lines.append(f"FILE: {f.path}:{f.line}:" if f.line is not None else f"FILE: {f.path}")
        lines += list(f.quote[:1])
    kind = fact.first.rule.removeprefix("checkpatch/")
    return f"checkpatch.pl ({kind}):\n\n" + "\n".join(verbatim(lines))


def trailer(f: Finding) -> bool:
    return any(r in TRAILER_RULES or r.split("/", 1)[0] in TRAILER_RULES for r in (f.sources or (f.rule,)))


def quote_lines(f: Finding, p: Patch) -> list[str]:
    """The lines F is about, quoted (`> `): the trailer block for a trailer fact; else its own quote, the
    hunk lines near its line, or the file's first change; tool output (no file of the patch) indented."""
    if trailer(f):
        return _quoted(trailer_block(p))
    lines = patch_lines(f, p)
    return verbatim(f.quote) if lines is None else _quoted(lines)


def trailer_block(p: Patch) -> list[str]:
    """The last lines of P's commit message's last paragraph: its trailer block."""
    return p.message.strip().split("\n\n")[-1].splitlines()[-_MAX_QUOTE:] if p.message.strip() else []


def patch_lines(f: Finding, p: Patch) -> list[str] | None:
    """The diff lines F is about, unquoted: the file's `diff --git` line, the hunk header, then F's own quote,
    the lines near F's line, or the file's first change. None when F names no file of P with hunks (its quote,
    if any, is a tool's output). Raw text: each medium escapes it (the diff line is already as git quotes it)."""
    change = next((c for c in p.files if c.path == f.path), None)
    if change is None or not change.hunks:
        return None
    head = [diff_line(change)]
    if f.quote:
        hunk = _hunk_with(change, f.quote[0])
        return head + ([hunk.header] if hunk else []) + list(f.quote)
    return head + _around(change, f.line)


def diff_line(change: FileChange) -> str:
    """`diff --git a/PATH b/PATH`, a path quoted as git quotes it (`"a/x\\ny"`) when it holds a control character."""
    old, new = (escape.text(f"{side}/{path}", name=True) for side, path in (("a", change.old_path or change.path), ("b", change.path)))
    return f"diff --git {old} {new}"


def verbatim(lines: Sequence[str]) -> list[str]:
    """Tool output (a compiler's or a test's lines, checkpatch's report): indented, whole, escaped, and
    never a line that reads as a trailer (b4 takes `path:2:1: error: ... <a@b.c>` for one)."""
    return [escape.unforgeable(VERBATIM + escape.text(ln, keep="\t")) for ln in lines]


def _quoted(lines: list[str]) -> list[str]:
    """Patch lines as `> ` quotes, whole (tabs kept, other control characters escaped)."""
    return [f"> {escape.text(ln, keep=chr(9))}".rstrip() for ln in lines]


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


def _stopped(review: Review, s: Series, patch: int | None) -> list[str]:
    """Where git am stopped: the hunk it could not place, quoted, and its own words, indented."""
    failed = order.failure(review)
    if failed is None or patch not in (None, failed.patch.index):
        return []
    p = next((p for p in s.patches if p.index == failed.patch.index), None)
    change = next((c for c in p.files if failed.path in (c.path, c.old_path)), None) if p is not None else None
    hunk = next((h for h in change.hunks if h.header.startswith(failed.hunk)), None) if change and failed.hunk else None
    out = []
    if p is not None and change is not None and hunk is not None:
        lines = [f"{ln.kind}{ln.text}" for ln in hunk.lines]
        more = ["[...]"] if len(lines) > _MAX_QUOTE else []
        quote = _quoted([diff_line(change), hunk.header, *lines[:_MAX_QUOTE], *more])
        out.append(wrap(f"The hunk of {p.index}/{s.total} that git could not place:") + "\n\n" + "\n".join(quote))
    said = "\n".join(verbatim([ln for ln in failed.output if ln]))
    return [*out, f"git am -3 said:\n\n{said}"] if said else out
