"""The output formats, an explicit registry: name -> how the review is written on stdout.

`--format`'s choices and its checks come from FORMATS; a new format is one entry here (its module in
report/) and its test. The terminal report is imported when it is used, so the JSON and b4 formats never
load rich, and only the HTML page loads jinja2 (docs/design.md, "Imports kept lazy").
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reviewer.model import Review
from reviewer.progress import QUIET, Display, Progress
from reviewer.report import b4check
from reviewer.report import json as json_report


@dataclass(frozen=True)
class Style:
    """How a report is written: COLOR forces colour on or off (None: when stdout is a terminal and NO_COLOR
    is not set), PAGER lets a tall terminal report go through $PAGER, STRICT makes warnings fail (b4-check)."""

    color: bool | None = None
    pager: bool = False
    strict: bool = False


@dataclass(frozen=True)
class OutputFormat:
    name: str
    render: Callable[[Review, Style], None]  # writes the report on stdout
    # b4's check protocols: one message on stdin (TARGET -), the findings about it out, no reply
    # (reviewer.app.b4_check narrows the review's findings to that message's).
    reads_message: bool = False
    shows_progress: bool = False  # a spinner per slow stage on stderr, when stderr is a terminal


def no_color(*, color: bool | None) -> bool | None:
    """rich's no_color: what --color/--no-color says, else None: rich then reads NO_COLOR (set and not empty: no
    colour, https://no-color.org), which --color overrides."""
    return None if color is None else not color


def _terminal(review: Review, style: Style) -> None:
    """The rich report, through a pager (PAGER, else less) when STYLE.pager is true, stdout is a terminal,
    and the report is taller than it (report/pager.py)."""
    from rich.console import Console

    from reviewer.report import pager as paging
    from reviewer.report import terminal

    # Piped or redirected output is not squeezed into rich's default 80 columns.
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
    out = Console(force_terminal=style.color, no_color=no_color(color=style.color), highlight=False, width=width)
    paging.show(out, lambda: terminal.render(review, out), enabled=style.pager and sys.stdout.isatty())
    sys.stdout.flush()


def _json(review: Review, _style: Style) -> None:

    sys.stdout.write(json_report.dumps(review))
    sys.stdout.flush()


def _html(review: Review, _style: Style) -> None:
    """The page (report/html.py); jinja2 is loaded only for it."""
    from reviewer.report import html

    sys.stdout.write(html.page(review))
    sys.stdout.flush()


def _b4_check(review: Review, style: Style) -> None:

    sys.stdout.write(json.dumps(b4check.results(list(review.findings), strict=style.strict), indent=2) + "\n")
    sys.stdout.flush()


def _checkpatch(review: Review, _style: Style) -> None:

    sys.stdout.writelines(line + "\n" for line in b4check.checkpatch_lines(list(review.findings)))
    sys.stdout.flush()


FORMATS: dict[str, OutputFormat] = {f.name: f for f in (
    OutputFormat("terminal", _terminal, shows_progress=True),
    OutputFormat("json", _json),  # one document on stdout (docs/json-schema.md)
    OutputFormat("html", _html),  # one self-contained page (docs/html.md)
    OutputFormat("b4-check", _b4_check, reads_message=True),  # b4 review's check protocol: a JSON array
    OutputFormat("checkpatch", _checkpatch, reads_message=True),  # checkpatch-style lines, for b4 prep --check
)}
DEFAULT = "terminal"


def render(name: str, review: Review, style: Style | None = None) -> None:
    """REVIEW written on stdout in the format NAME (one of FORMATS)."""
    FORMATS[name].render(review, style or Style())


def write_page(review: Review, path: Path) -> None:
    """--html FILE: REVIEW as the HTML page (report/html.py), whatever --format prints."""
    from reviewer.report import html

    path.write_text(html.page(review), encoding="utf-8")


def progress(name: str, *, color: bool | None) -> Progress:
    """What the review shows on stderr while it runs: with a format that shows progress (the terminal
    report), and when stderr is a terminal (or COLOR forces it), a spinner per slow stage and each build,
    test and benchmark run with how many are left; else nothing (the JSON, the b4 formats, a redirected stderr)."""
    if not FORMATS[name].shows_progress:
        return QUIET
    from rich.console import Console


    err = Console(stderr=True, force_terminal=color, no_color=no_color(color=color))
    return Display(err) if err.is_terminal else QUIET
