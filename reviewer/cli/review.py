"""The review command: its options -> a ReviewRequest -> reviewer.app -> a report in the format asked
(report/formats.py), a reply (report/outgoing.py) -> an exit status."""
from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
import typer.core
import typer.main

from reviewer import app, config
from reviewer.cli.options import HELP_OPTIONS, ColorOpt, DebugOpt, FormatOpt, WideHelp, exit_for
from reviewer.errors import ConfigError, UsageError
from reviewer.kernel import arches
from reviewer.report import email as reply_mail
from reviewer.report import formats
from reviewer.report import outgoing as replies
from reviewer.request import BootOptions, BuildOptions, CheckOptions, ReviewRequest, RunOptions, SelftestOptions, SourceOptions
from reviewer.run.sandbox import ENVS, MAX_TEST_SECONDS
from reviewer.tree import git as tree_git
from reviewer.tree import kerneltop
from reviewer.verdict import BENCH_RUNS

if TYPE_CHECKING:
    from typer._click import Context as ClickContext  # typer's own copy of click
    from typer._click import HelpFormatter

# What only some runs need (rich, GitPython, scipy, the kernel stages) is imported where it is used:
# docs/design.md, "Imports kept lazy".

class ReviewHelp(WideHelp):
    """The review command's --help also lists the other commands: they are another typer app (see
    cli/__init__.py), which the review's own help would not name; cli/__init__.py hands them over."""

    others: typer.Typer | None = None

    def format_help(self, ctx: ClickContext, formatter: HelpFormatter) -> None:
        from typer import rich_utils

        super().format_help(ctx, formatter)
        _commands_panel(rich_utils.MAX_WIDTH)


def _commands_panel(width: int | None) -> None:
    """The other commands and what they do, in a panel like typer's own."""
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table

    if ReviewHelp.others is None:
        return
    group = typer.main.get_group(ReviewHelp.others)
    table = Table(show_header=False, box=None, expand=True, padding=(0, 1))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(ratio=10)
    for name, cmd in group.commands.items():
        if not cmd.hidden:
            table.add_row(f"review {name}", cmd.help or "")
    console = Console(width=width, highlight=False)
    console.print(Panel(table, border_style="dim", title="Commands", title_align="left"))
    console.print(" `review COMMAND --help` shows a command's options.")



review_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, context_settings=HELP_OPTIONS)
def _version(*, asked: bool) -> None:
    """--version: the installed package's version, then exit 0 (eager: nothing else is parsed or checked)."""
    if asked:
        from reviewer.store.results import version

        print(f"review {version() or 'unknown (not installed: run from a source tree)'}")
        raise typer.Exit(0)


@review_app.command(cls=ReviewHelp, help="Review a patch series: an mbox, a maildir, a `git format-patch` directory, a git "
                                         "range or a Message-ID.")
def main_command(  # keyword-only: typer passes every option by name
    *,
    target: Annotated[str | None, typer.Argument(metavar="TARGET",
                                                 help="mbox | maildir | format-patch dir | git range | Message-ID | lore URL | - (stdin); "
                                                      "none: the b4 prep branch checked out", show_default=False)] = None,
    fmt: FormatOpt = formats.DEFAULT,
    revision: Annotated[int | None, typer.Option("--revision", "-r", min=1, metavar="N",
                                                 help="Review revision N of the series (default: the newest).")] = None,
    repo: Annotated[Path | None, typer.Option("-C", metavar="PATH", help="Run as if started in PATH (for git ranges).")] = None,
    tree: Annotated[Path | None, typer.Option("--tree", "-t", metavar="DIR",
                                              help="Kernel git tree to apply the series to (in an isolated worktree).")] = None,
    base: Annotated[str | None, typer.Option("--base", metavar="REF", help="Apply on REF instead of the series' base-commit.")] = None,
    lore_url: Annotated[str | None, typer.Option("--lore-url", metavar="URL",
                                                 help="public-inbox archive to fetch Message-IDs from (default: git config "
                                                      "reviewer.loreUrl, else https://lore.kernel.org/all/).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Fetch from lore even if the thread is cached.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Never fetch: use only threads cached by earlier runs.")] = False,
    run_tests: Annotated[bool, typer.Option("--run-tests",
                                            help="Build and run the relevant selftests and benchmarks on base and patched (runs code from "
                                                 "the series, sandboxed).")] = False,
    tests: Annotated[str | None, typer.Option("--tests", metavar="LIST",
                                              help="Run exactly these, e.g. vDSO:vdso_test_getrandom,timens "
                                                   "(implies --run-tests).")] = None,
    no_tests: Annotated[bool, typer.Option("--no-tests", help="Do not choose or run selftests.")] = False,
    env: Annotated[str, typer.Option("--env", metavar="LIST",
                                     help="Environments for tests and benchmarks: plain, timens (a user+time namespace, "
                                          "boot time +1 year).")] = "plain",
    bench_runs: Annotated[int, typer.Option("--bench-runs", min=0, metavar="N",
                                            help=f"Runs per benchmark and tree, alternating (a verdict needs {BENCH_RUNS} a side); "
                                                 "0 runs no benchmark.")] = BENCH_RUNS,
    slower_than: Annotated[float | None, typer.Option("--slower-than", min=1.0, metavar="RATIO",
                                                      help="Warn when a benchmark is this many times slower on the patched tree, beyond "
                                                           "the noise (default 1.25; 1.5 in kernels emulated by TCG).")] = None,
    build: Annotated[bool, typer.Option("--build",
                                        help="Compile the touched code for each architecture the series touches (cross gcc, or clang for "
                                             "LoongArch), the base and then each patch with W=1: new warnings, patches that do not build, "
                                             "the vDSO's exported symbols.")] = False,
    build_timeout: Annotated[float, typer.Option("--build-timeout", min=10.0, metavar="SECONDS",
                                                 help="Wall-clock seconds for all of --build before it stops.")] = 1800.0,
    arch: Annotated[str | None, typer.Option("--arch", metavar="LIST",
                                             help=f"Build for these targets instead of the series' own ({', '.join(arches.BY_NAME)}); "
                                                  "the first is also the guests' architecture with --run-on vm "
                                                  f"({', '.join(arches.GUESTS)}).")] = None,
    boot: Annotated[bool, typer.Option("--boot",
                                       help="Build and boot base and patched kernels under QEMU for the relevant in-kernel tests "
                                            "(dmapool_test, KUnit).")] = False,
    boot_env: Annotated[str, typer.Option("--boot-env", metavar="LIST",
                                          help="Kernel configs for --boot: plain, debug (SLUB_DEBUG_ON).")] = "plain",
    boot_timeout: Annotated[float, typer.Option("--boot-timeout", min=10.0, metavar="SECONDS",
                                                help="Wall-clock seconds per boot before the VM is killed.")] = 300.0,
    test_timeout: Annotated[float, typer.Option("--test-timeout", min=1.0, metavar="SECONDS",
                                                help="The longest one selftest may run, whatever its directory's settings file asks (the "
                                                     "series wrote it; timeout=0 there asks for no limit); a test cut "
                                                     "short is a warning.")] = MAX_TEST_SECONDS,
    run_on: Annotated[str, typer.Option("--run-on", metavar="WHERE",
                                        help="Where selftests and benchmarks run: vm (base and patched each in its own kernel, built from "
                                             "the tree and booted with virtme-ng), host (this machine's kernel), auto (vm when the series "
                                             "changes what the kernel is built from, else host).")] = "auto",
    log_dir: Annotated[Path | None, typer.Option("--log-dir", metavar="DIR",
                                                 help="Keep this run's logs (boot console logs, selftest output) in DIR/<UTC time>-<pid>/ "
                                                      "(default: git config reviewer.logDir, else $XDG_STATE_HOME/reviewer/logs).")] = None,
    bench: Annotated[str | None, typer.Option("--bench", metavar="LIST",
                                              help="Also run these opt-in benchmarks, e.g. 'vdso_test_getrandom bench-multi' "
                                                   "(256 threads: long).")] = None,
    test_env: Annotated[list[str] | None, typer.Option("--test-env", metavar="KEY=VALUE",
                                                       help="Extra environment for tests and benchmarks (repeatable).")] = None,
    rules: Annotated[list[Path] | None, typer.Option("--rules", metavar="DIR",
                                                     help="Also load the rules in DIR (repeatable; git config "
                                                          "reviewer.rules too).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too (exit 1), for CI and pre-submit checks.")] = False,
    no_checkpatch: Annotated[bool, typer.Option("--no-checkpatch",
                                                help="With --tree: do not run the tree's scripts/checkpatch.pl.")] = False,
    checkpatch_strict: Annotated[bool, typer.Option("--checkpatch-strict",
                                                    help="Run checkpatch.pl --strict (its CHECK reports, as info).")] = False,
    codespell: Annotated[bool, typer.Option("--codespell", help="Run checkpatch.pl --codespell (needs the codespell dictionary).")] = False,
    html: Annotated[Path | None, typer.Option("--html", metavar="FILE",
                                              help="Also write the review as one self-contained HTML page to FILE, beside "
                                                   "what --format prints (--format html prints it on stdout).")] = None,
    reply: Annotated[str | None, typer.Option("--reply", metavar="FILE",
                                              help="Write a reply mail (RFC 2822) to FILE, - for stdout; with --per-patch "
                                                   "an mbox of several.")] = None,
    reply_policy: Annotated[reply_mail.ReplyPolicy, typer.Option("--reply-policy", metavar="POLICY",
                                                                 help="Recipients: author, list (author + the thread's To:) or all "
                                                                      "(author + To: + Cc:).")] = reply_mail.ReplyPolicy.ALL,
    trailer: Annotated[list[str] | None, typer.Option("--trailer", metavar="TRAILER",
                                                      help="Add this trailer to the reply, e.g. 'Tested-by: NAME <ADDR>' (repeatable); "
                                                           "none is added otherwise.")] = None,
    per_patch: Annotated[bool, typer.Option("--per-patch",
                                            help="One reply per patch with findings, instead of one to the cover letter.")] = False,
    send: Annotated[bool, typer.Option("--send",
                                       help="Send the reply (SMTP or sendmail as configured for git send-email), "
                                            "after confirmation.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --send: do not ask for confirmation.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the reply that --send would send, and send nothing.")] = False,
    in_reply_to: Annotated[str | None, typer.Option("--in-reply-to", metavar="MSGID",
                                                    help="Thread the reply under this Message-ID (needed when the series' mail has none: a "
                                                         "reply to an id the tool made up is never sent).")] = None,
    reply_infos: Annotated[bool, typer.Option("--reply-infos",
                                              help="Say the infos in the reply too (by default they stay in the "
                                                   "terminal and JSON reports).")] = False,
    no_pager: Annotated[bool, typer.Option("--no-pager",
                                           help="Print the terminal report as it is, never through $PAGER (default: less, when stdout is a "
                                                "terminal and the report is taller).")] = False,
    debug: DebugOpt = False,
    color: ColorOpt = None,
    _shown_version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_version,
                                                 help="Print the version and exit.")] = False,
) -> None:
    output = formats.FORMATS[fmt]
    _preflight(_Preflight(repo, tree, tuple(rules or ()), lore_url, reply, send, yes or dry_run, html))
    cwd = (repo or Path.cwd()).resolve()
    outgoing = replies.Outgoing(reply, reply_policy, replies.trailers(trailer or []), per_patch, send, yes, dry_run,
                                replies.in_reply_to(in_reply_to), infos=reply_infos)
    outgoing.validate(fmt, reads_message=output.reads_message)
    mailer = replies.mailer(outgoing, cwd) if outgoing.wanted else replies.Mailer("")
    if output.reads_message and target != "-":
        raise UsageError(f"--format {fmt} reads one message on standard input: give - as TARGET",
                         f'git config b4.review-perpatch-check-cmd "review --format {fmt} -"')
    source = SourceOptions(target=target, cwd=cwd, revision=revision, tree=tree.resolve() if tree else None, base=base,
                           lore_url=lore_url, no_cache=no_cache, offline=offline)
    checks = CheckOptions(rules_dirs=tuple(p.resolve() for p in rules or []), checkpatch=not no_checkpatch,
                          checkpatch_strict=checkpatch_strict, codespell=codespell)
    selftests = SelftestOptions(run=run_tests, tests=_list(tests) if tests else None, no_tests=no_tests, envs=_envs(env),
                                bench_runs=bench_runs, slower_than=slower_than, benchmarks=_benchmarks(bench),
                                test_timeout=test_timeout, run_on=_run_on(run_on), test_env=_pairs(test_env or []))
    request = ReviewRequest(source, checks, selftests, BuildOptions(build, build_timeout, _arches(arch)),
                            BootOptions(boot, _boot_envs(boot_env), boot_timeout),
                            RunOptions(debug, log_dir.resolve() if log_dir else None))
    style = formats.Style(color, pager=not no_pager, strict=strict)
    if output.reads_message:  # b4's checks: the series around the message on stdin, reported on that message
        done = app.b4_check(request, sys.stdin.buffer.read())
    else:
        done = app.review(request, formats.progress(fmt, color=color))
    if outgoing.wanted:
        msgs = replies.prepare(done.review, outgoing, mailer.sender)
        if outgoing.reply != "-":
            formats.render(fmt, done.review, style)
        replies.deliver(msgs, outgoing, cwd, mailer.transport, confirm=_confirm)
    else:
        formats.render(fmt, done.review, style)
    if html is not None:
        formats.write_page(done.review, html)
        print(f"review: HTML page written to {html}", file=sys.stderr)
    exit_for(done, strict=strict)


@dataclass(frozen=True)
class _Preflight:
    """What the review command can check before it fetches anything or runs git."""

    repo: Path | None  # -C
    tree: Path | None
    rules: tuple[Path, ...]
    lore_url: str | None
    reply: str | None
    send: bool
    no_question: bool  # --yes or --dry-run: --send will not ask
    html: Path | None = None  # --html FILE


def _preflight(p: _Preflight) -> None:
    """Exit 3 (a ConfigError naming the option) before any fetch or git work, rather than after the
    review, or as "git could not be started": the environment, the directories, the reply's file, and
    whether --send can ask. git config (reviewer.*) and the rules are checked next, by the pipeline."""

    config.check_environment()
    if p.repo is not None:
        config.directory(p.repo, "-C")
    if p.tree is not None:
        _tree(p.tree)
    for folder in p.rules:
        config.directory(folder, "--rules")
    if p.lore_url is not None and not config.is_http_url(p.lore_url):
        raise UsageError(f"--lore-url {p.lore_url!r}: expected an http:// or https:// URL", "e.g. --lore-url https://lore.kernel.org/all/")
    if p.reply not in (None, "-"):
        replies.writable(Path(p.reply))
    if p.html is not None:
        if str(p.html) == "-":
            raise UsageError("--html writes a file; the page on standard output is --format html", "e.g. --html review.html")
        replies.writable(p.html, "--html")
    if p.send and not p.no_question and not sys.stdin.isatty():
        raise ConfigError("--send asks for confirmation, and standard input is not a terminal", "add --yes to send without asking")


def _tree(tree: Path) -> None:

    config.directory(tree, "--tree")
    if not tree_git.is_git_tree(tree):
        raise ConfigError(f"--tree {tree}: not a git repository", "point --tree at a kernel git checkout")
    kerneltop.check(tree)


def _list(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _envs(text: str) -> tuple[str, ...]:
    return _choices("--env", text, ENVS)


def _arches(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return _choices("--arch", text, arches.BY_NAME, "build target")


def _boot_envs(text: str) -> tuple[str, ...]:
    if text == "plain":  # the default, always known: no need to load the boot stage to check it
        return ("plain",)
    from reviewer.kernel.kconfig import ENVS as BOOT_ENVS

    return _choices("--boot-env", text, BOOT_ENVS)


def _run_on(text: str) -> str:
    from reviewer.selftests.where import RUN_ON

    if text not in RUN_ON:
        raise UsageError(f"--run-on {text!r}: not a place tests can run", f"choose from {', '.join(RUN_ON)}")
    return text


def _choices(option: str, text: str, known: Iterable[str], what: str = "environment") -> tuple[str, ...]:
    """A comma-separated list of names (environments, or WHAT), each one of KNOWN."""
    names, known = _list(text), list(known)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise UsageError(f"{option} {text!r}: unknown {what} {', '.join(unknown) or '(none)'}", f"choose from {', '.join(known)}")
    return names


def _benchmarks(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    from reviewer.selftests.bench import BENCHMARKS

    names = _list(text)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise UsageError(f"--bench: unknown benchmark {unknown[0]!r}", f"known: {', '.join(BENCHMARKS)}")
    return names


def _pairs(items: list[str]) -> tuple[tuple[str, str], ...]:
    bad = [i for i in items if "=" not in i or not i.split("=", 1)[0]]
    if bad:
        raise UsageError(f"--test-env {bad[0]!r}: expected KEY=VALUE", "for example --test-env VDSO_BENCH_CALLS=1000000")
    return tuple((k, v) for k, _, v in (i.partition("=") for i in items))


def _confirm(question: str) -> bool:
    """--send's question, asked on the terminal (no terminal: a usage error, --yes sends without asking)."""
    if not sys.stdin.isatty():
        raise UsageError("--send asks for confirmation, and standard input is not a terminal", "add --yes to send without asking")
    return typer.confirm(question, default=False, err=True)
