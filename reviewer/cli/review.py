"""The review command: its options -> a Request -> the pipeline -> a report, a reply, an exit status."""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from email.message import EmailMessage
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
import typer.core
import typer.main

from reviewer.errors import ApplyError, ConfigError, ExitStatus, InputError, ReviewerError, SelftestError, UsageError
from reviewer.model import Finding, Level, Review
from reviewer.pipeline import review
from reviewer.progress import QUIET, Display, Progress
from reviewer.report import email as reply_mail
from reviewer.request import BootOptions, BuildOptions, CheckOptions, ReviewRequest, RunOptions, SelftestOptions, SourceOptions
from reviewer.run.sandbox import ENVS, MAX_TEST_SECONDS
from reviewer.series import target as targets
from reviewer.verdict import BENCH_RUNS

if TYPE_CHECKING:
    from typer._click import Context as ClickContext  # typer's own copy of click
    from typer._click import HelpFormatter
    from typer._click import Parameter as ClickParameter

    from reviewer.report import send as mail

# Start-up time is most of a small review's time (b4 itself takes ~0.15 s to start), so what
# only some runs need (rich, GitPython, the mail, hook, demo and b4-check code) is imported
# where it is used.

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


class ReviewHelp(WideHelp):
    """The review command's --help also lists the other commands: they are another typer app (see
    cli/__init__.py), which the review's own help would not name."""

    def format_help(self, ctx: ClickContext, formatter: HelpFormatter) -> None:
        from typer import rich_utils

        super().format_help(ctx, formatter)
        _commands_panel(rich_utils.MAX_WIDTH)


def _commands_panel(width: int | None) -> None:
    """The other commands and what they do, in a panel like typer's own."""
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table

    from reviewer.cli.commands import sub_app

    group = typer.main.get_group(sub_app)
    table = Table(show_header=False, box=None, expand=True, padding=(0, 1))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(ratio=10)
    for name, cmd in group.commands.items():
        if not cmd.hidden:
            table.add_row(f"review {name}", cmd.help or "")
    console = Console(width=width, highlight=False)
    console.print(Panel(table, border_style="dim", title="Commands", title_align="left"))
    console.print(" `review COMMAND --help` shows a command's options.")



class Format(StrEnum):
    TERMINAL = "terminal"
    JSON = "json"
    B4_CHECK = "b4-check"  # b4 review's check protocol: one message on stdin, a JSON array out
    CHECKPATCH = "checkpatch"  # checkpatch-style lines, for b4 prep --check


B4_FORMATS = (Format.B4_CHECK, Format.CHECKPATCH)


HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}  # -h as git and b4 have it (a subcommand's context inherits it)
review_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, context_settings=HELP_OPTIONS)
FormatOpt = Annotated[Format, typer.Option("--format", "-f", metavar="FORMAT",
                                           help="terminal (rich), json (one document on stdout), b4-check (b4 review's check JSON) or "
                                                "checkpatch (lines for b4 prep --check); the last two read one message "
                                                "on stdin (TARGET -).")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show b4's log and full tracebacks.")]
ColorOpt = Annotated[bool | None, typer.Option("--color/--no-color",
                                               help="Force colour on or off (default: when stdout is a terminal and NO_COLOR is not set).")]


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
    fmt: FormatOpt = Format.TERMINAL,
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
                                             help="Build for these targets instead of the series' own (x86_64, ppc64le, ppc32, arm64, arm, "
                                                  "riscv64, s390x, loongarch); the first is also the guests' architecture with --run-on vm "
                                                  "(x86_64, ppc64le, ppc32, arm64, riscv64, s390x).")] = None,
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
    _preflight(_Preflight(repo, tree, tuple(rules or ()), lore_url, reply, send, yes or dry_run))
    cwd = (repo or Path.cwd()).resolve()
    of_range = targets.range_tree(target, cwd) if tree is None and fmt not in B4_FORMATS else None
    outgoing = _Outgoing(reply, reply_policy, tuple(_trailers(trailer or [])), per_patch, send, yes, dry_run, _in_reply_to(in_reply_to),
                         infos=reply_infos)
    outgoing.validate(fmt)
    sender, transport = "", None
    if outgoing.wanted:
        from reviewer.report import send as mail

        sender = mail.sender(cwd)
        transport = mail.transport(cwd) if send else None
    with _target(target, cwd, fmt) as resolved:
        source = SourceOptions(target=resolved, cwd=cwd, revision=revision, tree=tree.resolve() if tree else of_range,
                               tree_of_range=of_range is not None, base=base, lore_url=lore_url, no_cache=no_cache, offline=offline)
        checks = CheckOptions(rules_dirs=tuple(p.resolve() for p in rules or []), checkpatch=not no_checkpatch,
                              checkpatch_strict=checkpatch_strict, codespell=codespell)
        selftests = SelftestOptions(run=run_tests, tests=_list(tests) if tests else None, no_tests=no_tests, envs=_envs(env),
                                    bench_runs=bench_runs, slower_than=slower_than, benchmarks=_benchmarks(bench),
                                    test_timeout=test_timeout, run_on=_run_on(run_on), test_env=_pairs(test_env or []))
        request = ReviewRequest(source, checks, selftests, BuildOptions(build, build_timeout, _arches(arch)),
                                BootOptions(boot, _boot_envs(boot_env), boot_timeout),
                                RunOptions(debug, log_dir.resolve() if log_dir else None))
        if fmt in B4_FORMATS:
            _b4_check(request, fmt, strict=strict)
        result, error = run(request, fmt, color=color)
    if outgoing.wanted and reportable(result, error):
        _outgoing(result, outgoing, sender, transport, cwd, fmt=fmt, color=color, pager=not no_pager)
        exit_for(result, error, strict=strict)
    finish(result, error, fmt=fmt, color=color, strict=strict, pager=not no_pager)


@dataclass(frozen=True)
class _Outgoing:
    reply: str | None
    policy: reply_mail.ReplyPolicy
    trailers: tuple[str, ...]
    per_patch: bool
    send: bool
    yes: bool
    dry_run: bool
    in_reply_to: str | None = None  # --in-reply-to, without <>
    infos: bool = False  # --reply-infos

    @property
    def wanted(self) -> bool:
        return self.reply is not None or self.send or self.dry_run

    def validate(self, fmt: Format) -> None:
        if (self.per_patch or self.trailers or self.in_reply_to or self.infos) and not self.wanted:
            raise UsageError("--per-patch, --reply-infos, --trailer and --in-reply-to shape a reply: add --reply FILE, --send or --dry-run")
        if self.in_reply_to and self.per_patch:
            raise UsageError("--in-reply-to names one message, and --per-patch answers each patch", "drop one of them")
        if self.wanted and fmt in B4_FORMATS:
            raise UsageError(f"--format {fmt} is for b4's checks; it does not write replies",
                             "drop --reply/--send, or use --format terminal")
        if self.send and self.dry_run:
            raise UsageError("--send and --dry-run contradict each other", "--dry-run shows the message; --send sends it")


_TRAILER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*-by: \S.*$")


def _trailers(items: list[str]) -> list[str]:
    bad = [i for i in items if not _TRAILER.match(i.strip())]
    if bad:
        raise UsageError(f"--trailer {bad[0]!r}: expected 'Tested-by: Name <address>'",
                         "for example --trailer 'Tested-by: Ada Lovelace <ada@example.org>'")
    return [i.strip() for i in items]


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


def _preflight(p: _Preflight) -> None:
    """Exit 3 (a ConfigError naming the option) before any fetch or git work, rather than after the
    review, or as "git could not be started": the environment, the directories, the reply's file, and
    whether --send can ask. git config (reviewer.*) and the rules are checked next, by the pipeline."""
    from reviewer import config

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
        _writable(Path(p.reply))
    if p.send and not p.no_question and not sys.stdin.isatty():
        raise ConfigError("--send asks for confirmation, and standard input is not a terminal", "add --yes to send without asking")


def _tree(tree: Path) -> None:
    from reviewer import config
    from reviewer.tree import git as tree_git
    from reviewer.tree import kerneltop

    config.directory(tree, "--tree")
    if not tree_git.is_git_tree(tree):
        raise ConfigError(f"--tree {tree}: not a git repository", "point --tree at a kernel git checkout")
    kerneltop.check(tree)


def _writable(path: Path) -> None:
    """--reply FILE can be written, tried rather than guessed (root passes every access() test): an
    existing file is opened for appending and nothing written; a new one is made and removed again."""
    hint = "give a file in a writable directory, or --reply - for standard output"
    if path.is_dir():
        raise ConfigError(f"--reply {path}: is a directory", hint)
    try:
        if path.exists():
            with path.open("ab"):
                pass
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            path.unlink()
    except OSError as exc:
        raise ConfigError(f"--reply {path}: cannot write it: {exc.strerror or exc}", hint) from exc


def _in_reply_to(text: str | None) -> str | None:
    """--in-reply-to in any form a Message-ID is pasted in (`<id>`, `id`, a lore link), without <>."""
    if text is None:
        return None
    from reviewer.series import msgid

    ref = msgid.parse(text)
    if ref is None or ref.truncated:
        raise UsageError(f"--in-reply-to {text!r}: not a Message-ID",
                         "give the whole id, e.g. --in-reply-to '<20240816110717.10249-1-xry111@example.org>'")
    return ref.msgid


def _warn_invented(msgs: list[EmailMessage], *, sending: bool) -> None:
    """A reply to a Message-ID the tool made up would not thread on the list: say so (sending it fails)."""
    made_up = [p for m in msgs if (p := reply_mail.invented_parent(m)) is not None]
    if made_up and not sending:
        print(f"review: warning: the reply answers {made_up[0]}" + (f" (and {len(made_up) - 1} more)" if len(made_up) > 1 else "")
              + ", a Message-ID the tool made up (the series' mail has none): --send will not send it; "
              "give the real one with --in-reply-to MSGID", file=sys.stderr)


@contextlib.contextmanager
def _target(target: str | None, cwd: Path, fmt: Format) -> Iterator[str]:
    """TARGET as given; none: the b4 prep branch in CWD, written out as b4 would send it."""
    if fmt in B4_FORMATS:
        if target != "-":
            raise UsageError(f"--format {fmt} reads one message on standard input: give - as TARGET",
                             f'git config b4.review-perpatch-check-cmd "review --format {fmt} -"')
        yield "-"
        return
    if target is not None:
        yield target
        return
    from reviewer.series import prep

    branch = prep.find(cwd)
    if branch is None:
        raise UsageError("no TARGET given, and the checked-out branch is not a b4 prep branch",
                         "give an mbox, a directory, a git range or a Message-ID; see review --help")
    with tempfile.TemporaryDirectory(prefix="reviewer-prep-") as scratch:
        path = Path(scratch) / f"{branch.branch.replace('/', '-')}.mbox"
        path.write_bytes(prep.mbox(cwd, branch))
        yield str(path)


def _list(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _envs(text: str) -> tuple[str, ...]:
    return _choices("--env", text, ENVS)


def _arches(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    from reviewer.kernel.targets import TARGETS

    return _choices("--arch", text, TARGETS, "build target")


def _boot_envs(text: str) -> tuple[str, ...]:
    if text == "plain":  # the default, always known: no need to load the boot stage to check it
        return ("plain",)
    from reviewer.kernel.kconfig import ENVS as BOOT_ENVS

    return _choices("--boot-env", text, BOOT_ENVS)


def _run_on(text: str) -> str:
    from reviewer.vm import RUN_ON

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


def _b4_check(request: ReviewRequest, fmt: Format, *, strict: bool) -> NoReturn:
    """b4's per-patch / series check: review the series around the message on stdin, report on that message."""
    from reviewer.report import b4check
    from reviewer.series import fetch

    data = sys.stdin.buffer.read()
    if not data.strip():
        raise InputError("stdin: empty input, no mail in it", "b4 passes one message on standard input")
    ctx = b4check.context(request.source.cwd, data)
    with tempfile.TemporaryDirectory(prefix="reviewer-b4check-") as scratch:
        path = Path(scratch) / "series.mbox"
        path.write_bytes(ctx.mbox)
        result, error = review(replace(request, source=replace(request.source, target=str(path))))
    if not reportable(result, error):
        assert error is not None
        raise error
    _, found = b4check.select(result, fetch.parse_bytes(data), series_on_first=ctx.how == "b4 prep branch")
    if fmt is Format.B4_CHECK:
        sys.stdout.write(json.dumps(b4check.results(found, strict=strict), indent=2) + "\n")
    else:
        sys.stdout.writelines(line + "\n" for line in b4check.checkpatch_lines(found))
    if error is not None:
        raise error
    raise typer.Exit(status_of(found, strict=strict))


def reportable(result: Review, error: ReviewerError | None) -> bool:
    return result.series is not None and (error is None or isinstance(error, (ApplyError, SelftestError)))


def status_of(findings: Iterable[Finding], *, strict: bool) -> ExitStatus:
    levels = {f.level for f in findings}
    failing = Level.ERROR in levels or (strict and Level.WARNING in levels)
    return ExitStatus.FINDINGS if failing else ExitStatus.OK


def _outgoing(result: Review, out: _Outgoing, sender: str, transport: mail.Transport | None, cwd: Path,
              *, fmt: Format, color: bool | None, pager: bool = False) -> None:
    opts = reply_mail.ReplyOptions(sender, out.policy, out.trailers, in_reply_to=out.in_reply_to, infos=out.infos)
    msgs = reply_mail.per_patch(result, opts) if out.per_patch else [reply_mail.reply(result, opts)]
    _warn_invented(msgs, sending=out.send)
    if out.reply != "-":
        report(result, fmt, color=color, pager=pager)
    if not msgs:
        print("review: no patch has findings: no reply written", file=sys.stderr)
        return
    data = reply_mail.as_mbox(msgs) if len(msgs) > 1 else reply_mail.as_bytes(msgs[0])
    if out.reply == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
    elif out.reply is not None:
        Path(out.reply).write_bytes(data)
        print(f"review: reply written to {out.reply} ({len(msgs)} message{'s' if len(msgs) > 1 else ''})", file=sys.stderr)
    if out.dry_run or out.send:
        _show(msgs, already=out.reply == "-")
    if out.send:
        assert transport is not None
        _confirm_and_send(msgs, transport, cwd, yes=out.yes)


def _show(msgs: list[EmailMessage], *, already: bool) -> None:
    if already:
        return
    for msg in msgs:
        sys.stdout.write("\n" + reply_mail.as_bytes(msg).decode("utf-8", errors="replace"))
    sys.stdout.flush()


def _confirm_and_send(msgs: list[EmailMessage], transport: mail.Transport, cwd: Path, *, yes: bool) -> None:
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("--send asks for confirmation, and standard input is not a terminal", "add --yes to send without asking")
        if not typer.confirm(f"Send {len(msgs)} message(s) via {transport.where()}?", default=False, err=True):
            print("review: nothing sent", file=sys.stderr)
            return
    from reviewer.report import send as mail

    for msg in msgs:
        mail.send(msg, transport, cwd)
        print(f"review: sent {msg['Message-ID']} to {', '.join(mail.envelope(msg))} via {transport.where()}", file=sys.stderr)


def exit_for(result: Review, error: ReviewerError | None, *, strict: bool) -> None:
    if error is not None:
        raise error
    raise typer.Exit(status_of(result.findings, strict=strict))


def run(request: ReviewRequest, fmt: Format, *, color: bool | None) -> tuple[Review, ReviewerError | None]:
    return review(request, progress_display(fmt, color=color))


def no_color(*, color: bool | None) -> bool | None:
    """rich's no_color: what --color/--no-color says, else None: rich then reads NO_COLOR (set and not empty: no
    colour, https://no-color.org), which --color overrides."""
    return None if color is None else not color


def progress_display(fmt: Format, *, color: bool | None) -> Progress:
    """What the review shows on stderr while it runs: with the terminal report, and when stderr is a
    terminal (or --color forces it), a spinner per slow stage and each build, test and benchmark run
    with how many are left; else nothing (the JSON, the b4 formats, a redirected stderr)."""
    if fmt is not Format.TERMINAL:
        return QUIET
    from rich.console import Console

    err = Console(stderr=True, force_terminal=color, no_color=no_color(color=color))
    return Display(err) if err.is_terminal else QUIET


def finish(result: Review, error: ReviewerError | None, *, fmt: Format, color: bool | None, strict: bool = False,
           pager: bool = False) -> None:
    # A series that could not be read has nothing to report but the error; one that was
    # read and checked is reported even when a later stage (apply) failed.
    if reportable(result, error):
        report(result, fmt, color=color, pager=pager)
    exit_for(result, error, strict=strict)


def report(result: Review, fmt: Format, *, color: bool | None, pager: bool = False) -> None:
    """The report on stdout; the terminal one through a pager (PAGER, else less) when PAGER is true,
    stdout is a terminal, and the report is taller than it (report/pager.py)."""
    if fmt is Format.JSON:
        from reviewer.report import json as json_report

        sys.stdout.write(json_report.dumps(result))
    else:
        from rich.console import Console

        from reviewer.report import terminal

        # Piped or redirected output is not squeezed into rich's default 80 columns.
        width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
        out = Console(force_terminal=color, no_color=no_color(color=color), highlight=False, width=width)
        from reviewer.report import pager as paging

        paging.show(out, lambda: terminal.render(result, out), enabled=pager and sys.stdout.isatty())
    sys.stdout.flush()


