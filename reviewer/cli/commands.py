"""The commands other than the review itself: rules, demo, guest-root, install-hook, uninstall-hook, pre-push, and the groups of
the bot (cli/bot.py) and the cache (cli/cache.py)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from reviewer import app, hook
from reviewer import demo as demo_mod
from reviewer.cli.bot import bot_app
from reviewer.cli.cache import cache_app
from reviewer.cli.options import HELP_OPTIONS, ColorOpt, DebugOpt, FormatOpt, WideHelp, exit_for
from reviewer.errors import ExitStatus, UsageError
from reviewer.kernel import arches
from reviewer.report import formats
from reviewer.request import ReviewRequest, RunOptions, SelftestOptions, SourceOptions
from reviewer.rules import doc as rulesdoc

sub_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True, context_settings=HELP_OPTIONS)


@sub_app.callback()
def _subcommands() -> None:
    """Commands other than the review itself."""


sub_app.add_typer(bot_app, name="bot")
sub_app.add_typer(cache_app, name="cache")


@sub_app.command("rules", cls=WideHelp, help="List the rules and checks with their documentation, or validate a rules directory.")
def rules_command(
    check: Annotated[Path | None, typer.Option("--check", metavar="DIR", help="Validate the rule files in DIR and exit.")] = None,
    rules: Annotated[list[Path] | None, typer.Option("--rules", metavar="DIR", help="Also list the rules in DIR.")] = None,
) -> None:

    if check is not None:
        for line in rulesdoc.check_rules_dir(check):
            print(line)
        return
    sys.stdout.write(rulesdoc.list_rules(rules or []))


@sub_app.command("demo", cls=WideHelp, help="Run the whole pipeline offline on the bundled demo series and kernel-shaped tree.")
def demo_command(*, fmt: FormatOpt = formats.DEFAULT, debug: DebugOpt = False, color: ColorOpt = None) -> None:
    if formats.FORMATS[fmt].reads_message:
        raise UsageError(f"review demo --format {fmt}: the demo reports as terminal, json or html")

    with demo_mod.prepared() as (mbox, tree):
        # The bundled series is ours, so its selftests run; the benchmark is shortened (the
        # kernel's makes 25,000,000 calls per figure).
        tests = SelftestOptions(run=True, envs=("plain", "timens"), test_env=(("VDSO_BENCH_CALLS", "200000"),))
        request = ReviewRequest(SourceOptions(target=str(mbox), cwd=mbox.parent, tree=tree), selftests=tests, run=RunOptions(debug=debug))
        done = app.review(request, formats.progress(fmt, color=color))
    formats.render(fmt, done.review, formats.Style(color))
    exit_for(done, strict=False)


@sub_app.command("guest-root", cls=WideHelp,
                 help=f"Make the root file system --run-on vm boots for another architecture (e.g. {arches.rooted()[0]}), "
                      "from its Debian packages.")
def guest_root_command(
    arch: Annotated[str, typer.Argument(metavar="ARCH",
                                        help=f"The guest architecture: {arches.spoken(arches.rooted(), 'or')} "
                                             f"({arches.spoken(arches.initramfs_guests(), 'and')} need none).")],
) -> None:
    from reviewer.kernel import guestroot as root
    g = arches.GUESTS.get(arch)
    others = ", ".join(arches.rooted())
    if g is not None and g.initramfs:
        raise UsageError(f"guest-root {arch!r}: a {arch} guest needs no root (it boots an initramfs of the tests and reviewer's own init)",
                         f"roots are made for: {others}")
    if g is None or g.native:
        raise UsageError(f"guest-root {arch!r}: not another architecture's guest",
                         f"choose from: {others} (the machine's own boots its own root)")
    made = root.make(g, lambda line: print(f"review: {line}", file=sys.stderr, flush=True))  # the steps: downloads take a while
    print(f"review: made the {g.deb} guest root {made}")


@sub_app.command("install-hook", cls=WideHelp,
                 help="Install a git pre-push hook that reviews the commits being pushed (exit 1 blocks the push).")
def install_hook_command(
    *,
    repo: Annotated[Path | None, typer.Option("-C", help="The repository (default: the current directory).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings block the push too.")] = False,
) -> None:

    path, replaced = hook.install((repo or Path.cwd()).resolve(), strict=strict)
    print(f"review: {'updated' if replaced else 'installed'} the pre-push hook {path}")


@sub_app.command("uninstall-hook", cls=WideHelp, help="Remove the pre-push hook installed by `review install-hook`.")
def uninstall_hook_command(
    repo: Annotated[Path | None, typer.Option("-C", help="The repository (default: the current directory).")] = None,
) -> None:

    path = hook.uninstall((repo or Path.cwd()).resolve())
    print(f"review: removed the pre-push hook {path}" if path else "review: no pre-push hook installed; nothing to do")


@sub_app.command("pre-push", cls=WideHelp, hidden=True, help="Run by the installed pre-push hook: review what is pushed.")
def pre_push_command(
    *,
    remote: Annotated[str, typer.Argument()] = "origin",
    _url: Annotated[str, typer.Argument(metavar="URL")] = "",  # git gives the hook the remote's URL too; unused
    strict: Annotated[bool, typer.Option("--strict")] = False,
) -> None:

    cwd = Path.cwd().resolve()
    top = hook.toplevel(cwd)
    worst = ExitStatus.OK
    for push in hook.pushes(top, remote, sys.stdin.read().splitlines()):
        since = f", the commits since {push.since}" if push.since else ""
        print(f"review: checking {push.ref} ({push.spec}{since}) before pushing to {remote}", file=sys.stderr)
        done = app.review(ReviewRequest(SourceOptions(target=push.spec, cwd=top, tree=top), selftests=SelftestOptions(no_tests=True)))
        formats.render(formats.DEFAULT, done.review)
        worst = max(worst, done.status(strict=strict))
    if worst:
        print(f"review: error: push blocked: the review of the pushed commits failed (exit {int(worst)})", file=sys.stderr)
        print("hint: fix the findings above, or push with --no-verify to skip the check", file=sys.stderr)
    raise typer.Exit(worst)


