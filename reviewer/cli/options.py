"""What the review command and the other commands share: their help's width, the refusal of blank and
non-finite values, the --format, --debug and --color options, and the exit a review ends with."""
from __future__ import annotations

import math
import os
import sys
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
import typer.core
from typer._types import TyperChoice  # typer's choice type: what it makes of an Enum's values

from reviewer import app
from reviewer.report import formats

if TYPE_CHECKING:
    from typer._click import Context as ClickContext  # typer's own copy of click
    from typer._click import HelpFormatter
    from typer._click import Parameter as ClickParameter

HELP_WIDTH = 120  # columns of --help when stdout is not a terminal (rich's default, 80, cut the option names)


class WideHelp(typer.core.TyperCommand):
    """typer's rich --help, as wide as the report when piped or redirected (COLUMNS still rules)."""

    def format_help(self, ctx: ClickContext, formatter: HelpFormatter) -> None:
        from typer import rich_utils

        if not sys.stdout.isatty() and not os.environ.get("COLUMNS") and not os.environ.get("TERMINAL_WIDTH"):
            rich_utils.MAX_WIDTH = HELP_WIDTH
        super().format_help(ctx, formatter)

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        _refuse_blank_and_nan(self, ctx, args)
        return super().parse_args(ctx, args)


def _refuse_blank_and_nan(command: typer.core.TyperCommand, ctx: ClickContext, args: list[str]) -> None:
    """What click takes without a word: an empty value (an empty path is Path('.'): `review ''` reviewed the
    current directory, `--tree ''` it too) and a number that is not finite (NaN passes every range check:
    `--test-timeout nan` was no limit at all). Read from the words as given, before click converts them."""
    values, _, _ = command.make_parser(ctx).parse_args(args=list(args))
    params = {p.name: p for p in command.get_params(ctx)}
    for name, given in values.items():
        param = params.get(name)
        for value in given if isinstance(given, list) else [given]:
            if param is None or not isinstance(value, str):  # a flag's value, not a word
                continue
            if not value.strip():
                path = param.type.name == "path"
                raise _refused("an empty value", param, ctx,
                               "for the current directory, say `.`" if path else "give it a value, or leave it out")
            if param.type.name in ("float", "float range") and not math.isfinite(_number(value)):
                raise _refused(f"{value!r} is not a finite number", param, ctx, "`review --help` gives the range it takes")


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0  # not a number at all: click says so in its own words


def _refused(why: str, param: ClickParameter, ctx: ClickContext, hint: str) -> typer.BadParameter:
    error = typer.BadParameter(why, ctx, param)
    error.hint = hint  # type: ignore[attr-defined]  # read by cli/__init__.py's _usage
    return error


HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}  # -h as git and b4 have it (a subcommand's context inherits it)
FormatOpt = Annotated[str, typer.Option("--format", "-f", metavar="FORMAT", click_type=TyperChoice(tuple(formats.FORMATS)),
                                           help="terminal (rich), json (one document on stdout), html (one self-contained page), "
                                                "b4-check (b4 review's check JSON) or checkpatch (lines for b4 prep --check); the last "
                                                "two read one message on stdin (TARGET -).")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show b4's log and full tracebacks.")]
ColorOpt = Annotated[bool | None, typer.Option("--color/--no-color",
                                               help="Force colour on or off (default: when stdout is a terminal and NO_COLOR is not set).")]


def exit_for(done: app.Reviewed, *, strict: bool) -> NoReturn:
    """The exit: the error of the stage that stopped the review (cli/__init__.py says it), else the findings' status."""
    if done.error is not None:
        raise done.error
    raise typer.Exit(done.status(strict=strict))
