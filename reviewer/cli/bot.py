"""`review bot --config FILE status|enqueue`: the review bot's commands (docs/bot.md, "Running it"). reviewer.bot
(huey, and psycopg for a shared table) is imported inside each command: docs/design.md, "Imports kept lazy"."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from typer._types import TyperChoice  # typer's choice type, as cli/options.py uses it

from reviewer.cli.options import HELP_OPTIONS, WideHelp

bot_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True, context_settings=HELP_OPTIONS,
                      help="The review bot: a list's traffic reviewed (docs/bot.md).")

ConfigOpt = Annotated[Path, typer.Option("--config", "-c", metavar="FILE", help="The bot's configuration file (TOML; docs/bot.md).")]


@bot_app.callback()
def _bot(ctx: typer.Context, config: ConfigOpt) -> None:
    ctx.obj = config


@bot_app.command("status", cls=WideHelp,
                 help="Per list and pool: jobs queued, running, done, failed, the oldest waiting; the last errors; the outbox.")
def status_command(
    ctx: typer.Context,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT", click_type=TyperChoice(("text", "json")),
                                     help="text (default) or json (one document on stdout).")] = "text",
) -> None:
    from reviewer.bot import config, operate

    doc = operate.status(config.load(ctx.obj))
    sys.stdout.write(json.dumps(doc, indent=2) + "\n" if fmt == "json" else operate.text(doc))


@bot_app.command("enqueue", cls=WideHelp, help="Add a static review job for a series' mbox now (a Message-ID: not yet).")
def enqueue_command(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(metavar="MBOX", help="The series as an mbox file.")],
    list_name: Annotated[str | None, typer.Option("--list", metavar="NAME", help="The list it belongs to (default: the one configured).")]
    = None,
) -> None:
    from reviewer.bot import config, operate

    job, new = operate.enqueue(config.load(ctx.obj), target, list_name)
    what = "queued" if new else f"already there ({job.state}): nothing added,"
    print(f"review: {what} job {job.id} ({job.stage}, list {job.list}) for {job.payload['mbox']}")
