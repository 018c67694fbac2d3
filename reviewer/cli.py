"""The typer app: options -> stage calls. The ONLY place that prints errors and exits."""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from reviewer import demo as demo_mod
from reviewer.errors import ApplyError, ExitStatus, ReviewerError, SelftestError
from reviewer.model import Review
from reviewer.pipeline import Request, review
from reviewer.report import json as json_report
from reviewer.report import terminal

SUBCOMMANDS = {"demo"}
EPILOG = "Other commands: `review demo` runs the whole pipeline on the bundled LoongArch vDSO series."


class Format(StrEnum):
    TERMINAL = "terminal"
    JSON = "json"


review_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, epilog=EPILOG)
sub_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True)


@sub_app.callback()
def _subcommands() -> None:
    """Commands other than the review itself."""

FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="terminal (rich) or json (one document on stdout).")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show b4's log and full tracebacks.")]
ColorOpt = Annotated[bool | None, typer.Option("--color/--no-color", help="Force colour on or off (default: when stdout is a terminal).")]


@review_app.command(help="Review a patch series: an mbox, a maildir, a `git format-patch` directory, a git range or a Message-ID.")
def main_command(
    target: Annotated[str, typer.Argument(help="mbox | maildir | format-patch dir | git range | Message-ID | lore URL | - (stdin)", show_default=False)],
    fmt: FormatOpt = Format.TERMINAL,
    revision: Annotated[int | None, typer.Option("--revision", "-r", min=1, help="Review revision N of the series (default: the newest).")] = None,
    repo: Annotated[Path | None, typer.Option("-C", help="Run as if started in PATH (for git ranges).")] = None,
    tree: Annotated[Path | None, typer.Option("--tree", "-t", help="Kernel git tree to apply the series to (in an isolated worktree).")] = None,
    base: Annotated[str | None, typer.Option("--base", help="Apply on REF instead of the series' base-commit.")] = None,
    lore_url: Annotated[str | None, typer.Option("--lore-url", metavar="URL", help="public-inbox archive to fetch Message-IDs from (default: git config reviewer.loreUrl, else https://lore.kernel.org/all/).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Fetch from lore even if the thread is cached.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Never fetch: use only threads cached by earlier runs.")] = False,
    debug: DebugOpt = False,
    color: ColorOpt = None,
) -> None:
    cwd = (repo or Path.cwd()).resolve()
    request = Request(target=target, cwd=cwd, revision=revision, debug=debug,
                      tree=tree.resolve() if tree else None, base=base,
                      lore_url=lore_url, no_cache=no_cache, offline=offline)
    _finish(*_run(request, fmt, color), fmt=fmt, color=color)


@sub_app.command("demo", help="Run the whole pipeline offline on the bundled demo series and kernel-shaped tree.")
def demo_command(fmt: FormatOpt = Format.TERMINAL, debug: DebugOpt = False, color: ColorOpt = None) -> None:
    with demo_mod.prepared() as (mbox, tree):
        request = Request(target=str(mbox), cwd=mbox.parent, debug=debug, tree=tree)
        result, error = _run(request, fmt, color)
    _finish(result, error, fmt=fmt, color=color)


def _run(request: Request, fmt: Format, color: bool | None) -> tuple[Review, ReviewerError | None]:
    err = Console(stderr=True, force_terminal=color, no_color=color is False)
    progress = _progress(err) if fmt is Format.TERMINAL and err.is_terminal else None
    return review(request, progress)


def _progress(console: Console) -> Callable[[str], contextlib.AbstractContextManager[None]]:
    @contextlib.contextmanager
    def show(stage: str) -> Iterator[None]:
        # Only stages that take more than a second get a spinner: quick runs stay quiet.
        status = console.status(f"{stage}...")
        timer = threading.Timer(1.0, status.start)
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            status.stop()

    return show


def _finish(result: Review, error: ReviewerError | None, *, fmt: Format, color: bool | None) -> None:
    # A series that could not be read has nothing to report but the error; one that was
    # read and checked is reported even when a later stage (apply) failed.
    if result.series is not None and (error is None or isinstance(error, (ApplyError, SelftestError))):
        if fmt is Format.JSON:
            sys.stdout.write(json_report.dumps(result))
        else:
            out = Console(force_terminal=color, no_color=color is False, highlight=False)
            terminal.render(result, out)
    if error is not None:
        raise error
    raise typer.Exit(ExitStatus.FINDINGS if result.errors else ExitStatus.OK)


def _fail(message: str, hint: str, status: int) -> int:
    print(f"review: error: {_one_line(message)}", file=sys.stderr)
    if hint:
        print(f"hint: {_one_line(hint)}", file=sys.stderr)
    return status


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _crash_log(exc: BaseException) -> Path:
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    logdir = state / "reviewer" / "crash"
    logdir.mkdir(parents=True, exist_ok=True)
    path = logdir / f"{dt.datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}.log"
    path.write_text("".join(traceback.format_exception(exc)))
    return path


def main(argv: list[str] | None = None) -> int:
    """Console entry point: dispatch, then map every error to one line and an exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    app = sub_app if args and args[0] in SUBCOMMANDS else review_app
    debug = "--debug" in args
    try:
        rc = app(args=args, prog_name="review", standalone_mode=False)
    except typer.Exit as exc:
        rc = exc.exit_code
    except typer.Abort:
        print("review: interrupted", file=sys.stderr)
        return int(ExitStatus.INTERRUPTED)
    except ReviewerError as exc:
        return _fail(exc.message, exc.hint, int(exc.status))
    except KeyboardInterrupt:
        print("review: interrupted", file=sys.stderr)
        return int(ExitStatus.INTERRUPTED)
    except typer.TyperException as exc:  # typer's usage errors: it prints them itself
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            print(f"review: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except Exception as exc:  # the last resort: a bug of ours, never the user's fault
        if debug:
            traceback.print_exc()
        path = _crash_log(exc)
        return _fail(f"internal error: {type(exc).__name__}: {exc}", f"this is a bug; the traceback is in {path}", int(ExitStatus.INTERNAL))
    if rc == ExitStatus.INTERRUPTED:  # typer turns Ctrl-C into a silent Exit(130)
        print("review: interrupted", file=sys.stderr)
    return rc if isinstance(rc, int) else int(ExitStatus.OK)


def entry() -> None:
    sys.exit(main())
