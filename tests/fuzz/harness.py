"""Review one fuzz case in-process, the way `review` would, and say which exit it would have.

The pipeline and the report builders the CLI calls (JSON, terminal, the reply mail) are run
on the case; an exception escaping any of them is what the CLI turns into exit 70. The exit
status otherwise comes from the application's (reviewer.app: Reviewed.status, the error that stopped it).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import io
import signal
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from reviewer import app
from reviewer.cli import _one_line
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.model import Review
from reviewer.pipeline import review
from reviewer.report import email as reply_mail
from reviewer.report import json as json_report
from reviewer.report import terminal
from reviewer.request import ReviewRequest, SourceOptions
from tests.fuzz.corpus import Case

_REPLY = reply_mail.ReplyOptions("Fuzz Reviewer <fuzz@example.org>", date=dt.datetime(2024, 9, 1, tzinfo=dt.UTC),
                                 make_msgid=lambda: "<reply@example.org>", signature="reviewer fuzz")


@dataclass(frozen=True)
class Outcome:
    rc: int
    message: str = ""  # the error's one line (exit 4), or the internal error's type, message and place (exit 70)


@contextlib.contextmanager
def _stdin(data: bytes | None) -> Iterator[None]:
    if data is None:
        yield
        return
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    try:
        yield
    finally:
        sys.stdin = saved


TIMEOUT = 60.0  # seconds a case may take (the slowest, 5,000 header fields, takes about 1 s): more is a hang
HUNG = -1  # Outcome.rc of a case that did not end within TIMEOUT


class _Hung(BaseException):  # not an Exception: no `except Exception` in the code under test swallows it
    pass


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """SIGALRM after SECONDS raises _Hung in the case (in-process, the main thread: pytest's)."""
    def expire(_signum: int, _frame: object) -> None:
        raise _Hung

    saved = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, saved)


def run(case: Case, root: Path, tree: Path | None = None, timeout: float = TIMEOUT) -> Outcome:
    """CASE reviewed in ROOT (with TREE as --tree when the case asks for one), within TIMEOUT seconds."""
    target = case.write(root) if case.target != "-" else Path("-")
    try:
        with _deadline(timeout), _stdin(case.stdin):
            done = app.reviewed(*review(ReviewRequest(SourceOptions(target=str(target), cwd=root, tree=tree if case.tree else None))))
            reports(done.review)
        if done.error is not None:
            raise done.error
    except _Hung:
        return Outcome(HUNG, f"did not end within {timeout:g} s")
    except ReviewerError as exc:
        return Outcome(int(exc.status), _one_line(exc.message))
    except Exception as exc:  # what cli.main reports as an internal error
        return Outcome(int(ExitStatus.INTERNAL), _where(exc))
    return Outcome(int(done.status()))


def reports(result: Review) -> None:
    """Every report the CLI can build from a review: JSON, terminal, one reply, per-patch replies.
    Text must encode as UTF-8: a stray surrogate (an undecoded byte) makes a UTF-8 stdout raise."""
    json_report.dumps(result).encode("utf-8")
    out = io.StringIO()
    terminal.render(result, Console(file=out, width=120, force_terminal=False))
    out.getvalue().encode("utf-8")
    msgs = [reply_mail.reply(result, _REPLY), *reply_mail.per_patch(result, _REPLY)]
    reply_mail.as_mbox(msgs)


def _where(exc: BaseException) -> str:
    """`Type: message` and the innermost frame of ours (reviewer/...), to class crashes by cause."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/reviewer/" in f.filename and "/tests/" not in f.filename]
    last = (ours or frames)[-1]
    inner = frames[-1]
    text = str(exc).splitlines()[0][:120] if str(exc) else ""
    raised = f"{Path(inner.filename).name}:{inner.lineno} {inner.name}"
    return f"{type(exc).__name__}: {text} at {Path(last.filename).name}:{last.lineno} {last.name} (raised in {raised})"
