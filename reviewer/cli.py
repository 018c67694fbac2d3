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
from reviewer import rulesdoc
from reviewer.errors import ApplyError, ExitStatus, ReviewerError, SelftestError, UsageError
from reviewer.model import Review
from reviewer.pipeline import Request, review
from reviewer.report import json as json_report
from reviewer.report import terminal
from reviewer.sandbox import ENVS

SUBCOMMANDS = {"demo", "rules"}
EPILOG = "Other commands: `review demo` runs the whole pipeline on the bundled LoongArch vDSO series; `review rules` documents the rules."


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
    run_tests: Annotated[bool, typer.Option("--run-tests", help="Build and run the relevant selftests and benchmarks on base and patched (runs code from the series, sandboxed).")] = False,
    tests: Annotated[str | None, typer.Option("--tests", metavar="LIST", help="Run exactly these, e.g. vDSO:vdso_test_getrandom,timens (implies --run-tests).")] = None,
    no_tests: Annotated[bool, typer.Option("--no-tests", help="Do not choose or run selftests.")] = False,
    env: Annotated[str, typer.Option("--env", metavar="LIST", help="Environments for tests and benchmarks: plain, timens (a user+time namespace, boot time +1 year).")] = "plain",
    bench_runs: Annotated[int, typer.Option("--bench-runs", min=1, help="Runs per benchmark and tree (the median is reported).")] = 3,
    slower_than: Annotated[float, typer.Option("--slower-than", min=1.0, help="Warn when a benchmark is this many times slower on the patched tree.")] = 1.25,
    test_env: Annotated[list[str] | None, typer.Option("--test-env", metavar="KEY=VALUE", help="Extra environment for tests and benchmarks (repeatable).")] = None,
    rules: Annotated[list[Path] | None, typer.Option("--rules", metavar="DIR", help="Also load the rules in DIR (repeatable; git config reviewer.rules too).")] = None,
    debug: DebugOpt = False,
    color: ColorOpt = None,
) -> None:
    cwd = (repo or Path.cwd()).resolve()
    request = Request(target=target, cwd=cwd, revision=revision, debug=debug,
                      tree=tree.resolve() if tree else None, base=base,
                      lore_url=lore_url, no_cache=no_cache, offline=offline,
                      run_tests=run_tests, tests=_list(tests) if tests else None, no_tests=no_tests,
                      envs=_envs(env), bench_runs=bench_runs, slower_than=slower_than,
                      test_env=_pairs(test_env or []), rules_dirs=tuple(p.resolve() for p in rules or []))
    _finish(*_run(request, fmt, color), fmt=fmt, color=color)


def _list(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _envs(text: str) -> tuple[str, ...]:
    envs = _list(text)
    unknown = [e for e in envs if e not in ENVS]
    if unknown or not envs:
        raise UsageError(f"--env {text!r}: unknown environment {', '.join(unknown) or '(none)'}", f"choose from {', '.join(ENVS)}")
    return envs


def _pairs(items: list[str]) -> tuple[tuple[str, str], ...]:
    bad = [i for i in items if "=" not in i or not i.split("=", 1)[0]]
    if bad:
        raise UsageError(f"--test-env {bad[0]!r}: expected KEY=VALUE", "for example --test-env VDSO_BENCH_CALLS=1000000")
    return tuple((k, v) for k, _, v in (i.partition("=") for i in items))


@sub_app.command("rules", help="List the rules and checks with their documentation, or validate a rules directory.")
def rules_command(
    check: Annotated[Path | None, typer.Option("--check", metavar="DIR", help="Validate the rule files in DIR and exit.")] = None,
    rules: Annotated[list[Path] | None, typer.Option("--rules", metavar="DIR", help="Also list the rules in DIR.")] = None,
) -> None:
    if check is not None:
        for line in rulesdoc.check_rules_dir(check):
            print(line)
        return
    sys.stdout.write(rulesdoc.list_rules(rules or []))


@sub_app.command("demo", help="Run the whole pipeline offline on the bundled demo series and kernel-shaped tree.")
def demo_command(fmt: FormatOpt = Format.TERMINAL, debug: DebugOpt = False, color: ColorOpt = None) -> None:
    with demo_mod.prepared() as (mbox, tree):
        # The bundled series is ours, so its selftests run; the benchmark is shortened (the
        # kernel's makes 25,000,000 calls per figure).
        request = Request(target=str(mbox), cwd=mbox.parent, debug=debug, tree=tree, run_tests=True,
                          envs=("plain", "timens"), test_env=(("VDSO_BENCH_CALLS", "200000"),))
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
