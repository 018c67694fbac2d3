"""What every reply and every terminal report must be (issue 30, item 2), checked on whole outputs.

- The first paragraph after the greeting is the conclusion, and it says what matters most:
  the apply failure, else the missing patches, else the errors, else the warnings.
- What stops the series comes first, then errors, then warnings, then infos.
- No paragraph is said twice, and no MAINTAINERS section is named twice.
- Prose lines are at most 72 columns; only quoted patch lines (`> `) and tool output (indented
  four columns) may be longer, and the summary's lines are not either.
- No line reads as a trailer but the user's own (--trailer), and no control character but a
  newline (and the tabs of a patch line, quoted or in checkpatch's report) is in the text.
The terminal report opens with the same conclusion, and lists errors before warnings before infos.
"""
from __future__ import annotations

import re
from collections import Counter

from reviewer.model import Level, Review
from reviewer.report import escape, order

HEADING = re.compile(r"^(?P<level>Errors?|Warnings?|Notes?) (in|about) ")
RANKS = {"Error": 0, "Warning": 1, "Note": 2}
SECTION = re.compile(r"\btouch(?:es)? (?P<name>[^,]+), but To/Cc misses")
FINDING_LINE = re.compile(r"^\S.*?: \[(?P<level>error|warning|info)\] ")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def check_reply(review: Review, text: str, *, infos: bool = False, trailers: tuple[str, ...] = (), per_patch: bool = False) -> None:
    paragraphs = text.split("\n\n")
    assert paragraphs[0].startswith(("Hi ", "Hello,")), paragraphs[0]
    _conclusion(review, paragraphs[1], infos=infos, per_patch=per_patch)
    _order(paragraphs)
    said = [p for p in paragraphs if p.strip()]
    assert not [p for p, n in Counter(said).items() if n > 1], [p for p, n in Counter(said).items() if n > 1]
    sections = Counter(m["name"] for m in SECTION.finditer(_one_line(text)))
    assert all(n == 1 for n in sections.values()), sections
    _lines(text, trailers)


def _conclusion(review: Review, first: str, *, infos: bool, per_patch: bool) -> None:
    first = _one_line(first)
    shown = [f for f in review.findings if infos or f.level is not Level.INFO]
    errors = [f for f in order.ordered(shown) if f.level is Level.ERROR]
    failed = review.apply.failed if review.apply is not None else None
    missing = [f for f in shown if f.rule == "series-complete"]
    if failed is not None and not per_patch:
        assert first.startswith(f"The series does not apply to {review.apply.base[:12]}: "
                                f"patch {failed.index}/"), first  # type: ignore[union-attr]
    elif missing and not per_patch:
        assert first.startswith("The series misses patch"), first
    elif errors and not per_patch:
        assert first.startswith(("One error", "Two errors", "Three errors")) or re.match(r"\d+ errors", first), first
        assert _one_line(escape.text(errors[0].message)).rstrip(".") in first, (first, errors[0].message)
    elif any(f.level is Level.WARNING for f in shown) and not per_patch:
        assert first.startswith("No errors; "), first
    elif not per_patch:
        assert first.startswith("No errors or warnings"), first


def _order(paragraphs: list[str]) -> None:
    ranks = [RANKS[m["level"].rstrip("s")] for p in paragraphs if (m := HEADING.match(p))]
    assert ranks == sorted(ranks), ranks
    first_heading = next((i for i, p in enumerate(paragraphs) if HEADING.match(p)), len(paragraphs))
    stops = [i for i, p in enumerate(paragraphs) if p.startswith(("git am -3 said:", "The hunk of "))]
    assert all(i < first_heading for i in stops), (stops, first_heading)


def _lines(text: str, trailers: tuple[str, ...]) -> None:
    start = text.find("What the tool ran:")
    summary = text[start:text.find("\n\n", start)] if start != -1 else ""
    for line in text.split("\n-- \n", 1)[0].splitlines():
        quoted, tool = line.startswith(">"), line.startswith("    ") and line not in summary
        assert quoted or tool or len(line) <= 72, line
        assert not escape.trailer_like(line) or line in trailers, line
        assert not any(ord(c) < 32 and (c != "\t" or not (quoted or tool)) for c in line), repr(line)  # a patch line's tabs
        assert "\x1b" not in line and "\u009b" not in line


def check_terminal(review: Review, text: str, reply_text: str | None) -> None:
    lines = text.splitlines()
    if reply_text is not None:
        said = reply_text.split("\n\n")[1]  # the reply may put a first word in backticks (escape.unforgeable)
        assert _one_line(lines[0]).replace("`", "") == _one_line(said).replace("`", ""), (lines[0], said)
    levels = [m["level"] for ln in lines if (m := FINDING_LINE.match(ln))]
    blocking = sum(1 for f in review.findings if order.blocking(f))
    rest = [{"error": 0, "warning": 1, "info": 2}[lv] for lv in levels[blocking:]]
    assert rest == sorted(rest), levels
    assert "\x1b" not in text
