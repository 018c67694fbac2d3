"""`review bot --config FILE run|worker|status|enqueue|replay|serve`: the review bot's commands (docs/bot.md, "Running it"). reviewer.bot
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


@bot_app.command("enqueue", cls=WideHelp, help="Add a static review job now for a series: its mbox, or a Message-ID in a list's mirror.")
def enqueue_command(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(metavar="MBOX|MSGID", help="The series as an mbox file, or the Message-ID of one of its parts.")],
    list_name: Annotated[str | None, typer.Option("--list", metavar="NAME", help="The list it belongs to (default: the one configured).")]
    = None,
) -> None:
    from reviewer.bot import config, operate, service

    cfg = config.load(ctx.obj)
    if "@" in target and not Path(target).exists():
        job, new = service.enqueue_msgid(cfg, target, list_name)
    else:
        job, new = operate.enqueue(cfg, target, list_name)
    what = "queued" if new else f"already there ({job.state}): nothing added,"
    print(f"review: {what} job {job.id} ({job.stage}, list {job.list}) for {job.payload['mbox']}")


def _say(line: str) -> None:
    print(f"review-bot: {line}", file=sys.stderr, flush=True)


@bot_app.command("run", cls=WideHelp, help="Feeds, workers and sender in one process, until SIGTERM (or one tick with --once).")
def run_command(
    ctx: typer.Context,
    *,
    workers: Annotated[int, typer.Option("--workers", "-w", min=0, metavar="N",
                                         help="Worker threads per pool (0: feeds and sender only; the pools run elsewhere).")] = 1,
    once: Annotated[bool, typer.Option("--once", help="One tick: read the feeds, wait for the jobs, report, send; then exit.")] = False,
    interval: Annotated[float, typer.Option("--interval", min=1.0, metavar="SECONDS", help="Seconds between two ticks.")] = 60.0,
) -> None:
    from reviewer.bot import config, service

    service.run(config.load(ctx.obj), workers, once=once, interval=interval, say=_say)


@bot_app.command("worker", cls=WideHelp, help="One pool's consumer (static, build-ARCH, guest-ARCH), for other machines.")
def worker_command(
    ctx: typer.Context,
    pool: Annotated[str, typer.Option("--pool", "-p", metavar="NAME", help="The pool to run.")],
    workers: Annotated[int, typer.Option("--workers", "-w", min=1, metavar="N", help="Worker threads.")] = 1,
) -> None:
    from reviewer.bot import config, service

    service.worker(config.load(ctx.obj), pool, workers)


@bot_app.command("replay", cls=WideHelp, help="Review a range of a mirror's history again with a throwaway state (sends only with --send).")
def replay_command(
    ctx: typer.Context,
    span: Annotated[str, typer.Argument(metavar="FROM..TO", help="Two commits of a mirror's epoch: after FROM, up to TO.")],
    *,
    send: Annotated[bool, typer.Option("--send", help="Send the mails (default: list them).")] = False,
) -> None:
    from reviewer.bot import config, service

    for line in service.replay(config.load(ctx.obj), span, send=send):
        print(line)


@bot_app.command("serve", cls=WideHelp, help="A read-only dashboard of the bot's home, and the same data as JSON, until SIGTERM.")
def serve_command(
    ctx: typer.Context,
    listen: Annotated[str, typer.Option("--listen", "-l", metavar="HOST:PORT",
                                        help="Where to listen (default 127.0.0.1:8470). It has no authentication: keep it on "
                                             "loopback, or put a web server in front.")] = "127.0.0.1:8470",
) -> None:
    from reviewer.bot import config, web

    cfg = config.load(ctx.obj)
    host, port = web.listen(listen)
    web.serve(cfg, host, port, say=_say)
