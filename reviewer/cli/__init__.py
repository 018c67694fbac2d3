"""The `review` program: dispatch to the review or another command, and the ONE place that maps errors
to a line on stderr and an exit status (and writes the crash log of a bug)."""
from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import signal
import sys
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path

import typer

from reviewer.cli.commands import sub_app
from reviewer.cli.review import ReviewHelp, review_app
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.run import ending
from reviewer.store import dirs, diskfull

# What only some runs need (rich, GitPython, scipy, the kernel stages) is imported where it is used:
# docs/design.md, "Imports kept lazy".

ReviewHelp.others = sub_app  # the review's --help lists the other commands too

SUBCOMMANDS = {"demo", "rules", "guest-root", "install-hook", "uninstall-hook", "pre-push", "bot", "cache"}


def _fail(message: str, hint: str, status: int) -> int:
    print(f"review: error: {_one_line(message)}", file=sys.stderr)
    if hint:
        print(f"hint: {_one_line(hint)}", file=sys.stderr)
    return status


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _crash_log(exc: BaseException) -> Path:
    logdir = dirs.state_root() / "crash"
    logdir.mkdir(parents=True, exist_ok=True)
    path = logdir / f"{dt.datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}.log"
    path.write_text("".join(traceback.format_exception(exc)))
    return path


def _bug(exc: BaseException, *, debug: bool) -> int:
    """Exit 70: one line, and the traceback in a crash log; where that log cannot be written (a full or
    read-only state directory), the hint says where and why, and the traceback follows on stderr."""
    if debug:
        traceback.print_exception(exc)
    what = f"internal error: {type(exc).__name__}: {exc}"
    try:
        path = _crash_log(exc)
    except OSError as why:
        _fail(what, f"this is a bug; its crash log could not be written in {dirs.state_root() / 'crash'} "
                    f"({why.strerror or why}), so its traceback follows", int(ExitStatus.INTERNAL))
        if not debug:
            traceback.print_exception(exc)
        return int(ExitStatus.INTERNAL)
    return _fail(what, f"this is a bug; the traceback is in {path}", int(ExitStatus.INTERNAL))


def _roots() -> dict[str, tuple[Path, str]]:
    """The directories a run writes to, as the user knows them, with the variable that moves each;
    read before the session points TMPDIR at the run's own directory inside it. Most specific first."""
    return {"the cache": (dirs.cache_root(), "XDG_CACHE_HOME"), "the state directory": (dirs.state_root(), "XDG_STATE_HOME"),
            "$TMPDIR": (Path(tempfile.gettempdir()), "TMPDIR")}


def _usage(exc: typer.TyperException) -> int:
    """typer's (click's) usage errors in the documented form: `review: error: ...` and one hint line
    (typer prints a usage line, a "Try" line, a blank line and `Error: ...`)."""
    text = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    text = (text[:1].lower() + text[1:] if text[1:2].islower() else text).rstrip(".")
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "review"
    hint = getattr(exc, "hint", "") or f"`{command} --help` lists the options and what they take"
    return _fail(text, hint, int(getattr(exc, "exit_code", ExitStatus.USAGE)))


def main(argv: list[str] | None = None) -> int:
    """Console entry point: dispatch, then map every error to one line and an exit status.

    Inside an ending.session(): what interrupted runs left is removed first, and SIGINT, SIGTERM
    and SIGHUP stop the children, clean up and exit 128 + the signal's number (130, 143, 129)."""
    args = list(sys.argv[1:] if argv is None else argv)
    roots = _roots()
    try:
        with ending.session(_say) as run:
            rc = _dispatch(args, roots)
    except ending.Interrupted as exc:  # a signal outside _dispatch's try (the session's own sweep, say)
        return 128 + exc.signum
    return run.status if run.status is not None else rc


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class _Notes(logging.Handler):
    """The library's log records (reviewer.*: the id a truncated one resolved to, a newer revision, a search
    for other revisions that failed): one line each on stderr, as they happen; the report goes to stdout."""

    def emit(self, record: logging.LogRecord) -> None:
        level = "warning: " if record.levelno >= logging.WARNING else ""
        print(f"review: {level}{_one_line(record.getMessage())}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _notes(*, debug: bool) -> Iterator[None]:
    logger = logging.getLogger("reviewer")
    handler, level = _Notes(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _dispatch(args: list[str], roots: dict[str, tuple[Path, str]] | None = None) -> int:
    app = sub_app if args and args[0] in SUBCOMMANDS else review_app
    debug = "--debug" in args
    bug: Exception | None = None
    try:
        with _notes(debug=debug):
            rc = app(args=args, prog_name="review", standalone_mode=False)
    except typer.Exit as exc:
        rc = exc.exit_code
    except ending.Interrupted as exc:  # the handler has said so, and stopped the children
        return 128 + exc.signum
    except typer.Abort:
        print("review: interrupted", file=sys.stderr)
        return int(ExitStatus.INTERRUPTED)
    except ReviewerError as exc:
        if exc.status is not ExitStatus.INTERNAL:
            return _fail(exc.message, exc.hint, int(exc.status))
        bug = exc  # a CommandError no caller turned into the user's error: a bug like any other
    except KeyboardInterrupt:
        print("review: interrupted", file=sys.stderr)
        return int(ExitStatus.INTERRUPTED)
    except typer.TyperException as exc:  # typer's usage errors
        return _usage(exc)
    except Exception as exc:  # the last resort: a bug of ours, never the user's fault
        bug = exc
    if bug is not None:
        # A full (or read-only) $TMPDIR, cache or state directory is the user's to fix, not a bug.
        if (full := diskfull.diagnose(bug, roots if roots is not None else _roots())) is not None:
            if debug:
                traceback.print_exception(bug)
            return _fail(full.message(), full.hint(), int(ExitStatus.CONFIG))
        return _bug(bug, debug=debug)
    if rc == ExitStatus.INTERRUPTED and not ending.interrupted():  # typer turns Ctrl-C into a silent Exit(130)
        print("review: interrupted", file=sys.stderr)
    return rc if isinstance(rc, int) else int(ExitStatus.OK)


def entry() -> None:
    # Outside main()'s session (it has ended and we are about to exit) a signal has nothing left to stop:
    # a second Ctrl-C just after the first one's clean-up must not turn the exit status into a KeyboardInterrupt.
    for s in ending.SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    sys.exit(main())
