#!/usr/bin/env python3
"""A list's day through the review bot (issue 34): series per hour, and the share of the machine the base side takes
(target: base work done once per base).

The day: SERIES series (default 100; `--series N` or SERIES=N), each 1 to 3 patches of real 6.12 code, spread at
random (SEED, default 1) over 3 bases: the tree's HEAD and two commits on top of it, each a small real change (a
helper added to lib/string.c, then one to kernel/sys.c). Each patch adds a small static inline helper before a
top-level definition of a C file x86_64's tinyconfig compiles (lib/, kernel/, mm/ and lib/vdso/: most need no
symbol beyond tinyconfig, mm/mmap.c and mm/vmalloc.c name CONFIG_MMU, so their series build in a configuration of
their own); files are drawn with repeats, so several series share a file and several do not. The series are written
by `git format-patch --base` (the base-commit trailer b4 writes; a cover letter above 2 and 3 patches, threaded)
and delivered with public-inbox-mda into a public-inbox v2 archive, served by public-inbox-httpd on 127.0.0.1 and
mirrored with public-inbox-clone: the bot's own feed reads them.

The bot: its configuration's list has `stages = ["static", "apply", "build"]`, `arches = ["x86_64"]`, `mail =
"off"`, the tree Debian's 6.12 as the real-kernel tests keep it (bench/_kernel.py). It runs as four processes,
each in a process group and a cgroup of its own: `review bot run --workers 0` (feeds, reports) and one `review bot
worker` per pool (static, apply, build-x86_64), huey on SQLite (the default), with an empty kernel cache and ccache
(a private XDG_CACHE_HOME). Time runs from the bot's start until every series has its report (all its jobs ended).

CPU seconds are each cgroup's (the sandboxed make and gcc included, which getrusage() never sees: bench/_meter.py),
or the whole machine's busy time where no cgroup can be made. Base-side work is read from the build jobs' JSON
(`builds[].steps[]` with `patch` 0: checkout of the base, configuration when the build directory held another base,
make of the series' goals at the base); its CPU is the build pool's, sampled every 0.5 s, over the step's interval
(placed from the job's end and the JSON's stage and step seconds). The apply stage's worktree on the base is inside
its stage's seconds and is not told apart. Per base step: whether Kconfig ran (the build directory's .config, which
only tinyconfig and olddefconfig write, was written during the step: the sampler notes its modification times) and
whether make ran (the step has seconds: a step reused whole would have none); the ideal is one configuration per base
and build configuration (the build's `config` lines), or fewer.

Run it as `PYTHONPATH=$PWD python3 bench/list_day.py [--series N]`; TIMEOUT (seconds, default 4 hours) bounds the
wait. It leaves nothing behind: the bot's processes are stopped with their groups, whatever is left in the cgroups
is killed, the temporary directory (archive, bot home, kernel cache: a few GB) is removed; ^C and SIGTERM too.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import mailbox
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from _common import ROOT, env, kernel, scratch

from bench import _daystats
from bench._kernel import commit, format_patch, git, show
from bench._lore import ADDRESS, Inbox, bot_site, make_inbox, start_httpd
from bench._meter import Meter
from bench._procs import stop_groups

SERIES = int(os.environ.get("SERIES", "100"))
SEED = int(os.environ.get("SEED", "1"))
TIMEOUT = float(os.environ.get("TIMEOUT", str(4 * 3600)))
POOLS = ("static", "apply", "build-x86_64")
GROUPS = ("run", *POOLS)
TOOLS = ("public-inbox-init", "public-inbox-mda", "public-inbox-httpd", "public-inbox-clone", "public-inbox-fetch")
# Drawn with repeats: the first ones often (shared by several series), the last ones rarely.
FILES = ("lib/string.c", "kernel/sys.c", "lib/cmdline.c", "kernel/fork.c", "mm/util.c", "lib/vdso/gettimeofday.c", "lib/sort.c",
         "kernel/panic.c", "lib/bitmap.c", "mm/mempool.c", "kernel/signal.c", "lib/rbtree.c", "kernel/params.c", "mm/mmap.c",
         "lib/string_helpers.c", "kernel/kthread.c", "lib/vsprintf.c", "mm/filemap.c", "kernel/notifier.c", "mm/vmalloc.c")
WEIGHTS = tuple(1 / (1 + i / 4) for i in range(len(FILES)))
AUTHORS = ("Ann Author <ann@example.org>", "Bo Builder <bo@example.org>", "Cy Coder <cy@example.org>", "Di Dev <di@example.org>")
_TOP = re.compile(r"^(static |int |void |bool |long |unsigned |size_t |ssize_t |u32 |u64 |char )")


@dataclass(frozen=True)
class Planned:
    """One series of the day: its number, base, author and the file each patch changes."""

    number: int
    base: str
    author: str
    files: tuple[str, ...]


def helper(code: str, text: str, salt: int) -> str:
    """TEXT with CODE before one of its top-level definitions that follow a blank line (SALT chooses which)."""
    lines = text.split("\n")
    # Not right below a comment; a kernel-doc comment a blank line above its function still takes the helper as its own,
    # which W=1 reports (the day's only new warnings: docs/benchmarks.md).
    spots = [i for i in range(1, len(lines)) if not lines[i - 1] and _TOP.match(lines[i])]
    at = spots[len(spots) // 3 + salt % (len(spots) - len(spots) // 3)] if spots else len(lines)
    return "\n".join([*lines[:at], *code.rstrip("\n").split("\n"), "", *lines[at:]])


def code_for(tag: str, k: int) -> str:
    return (f"/* {tag}: a helper for what follows. */\nstatic inline unsigned long {tag}(unsigned long x)\n{{\n"
            f"\treturn x * {k + 2} + {k};\n}}\n")


def subject_of(path: str) -> str:
    return path.rsplit(".", 1)[0].replace("/vdso/", "/vdso: ")


def bases(linux: Path) -> list[str]:
    """The tree's HEAD and two commits on top, each a helper added to a real file."""
    out = [git(linux, "rev-parse", "HEAD").strip()]
    for n, path in enumerate(("lib/string.c", "kernel/sys.c"), 1):
        tag = f"base_change_{n}"
        text = helper(code_for(tag, n), show(linux, out[-1], path), n)
        msg = f"{subject_of(path)}: Add {tag}()\n\nA small change of the day's tree.\n\nSigned-off-by: {AUTHORS[0]}\n"
        out.append(commit(linux, out[-1], {path: text}, msg, author=AUTHORS[0]))
    return out


def plan(count: int, heads: list[str]) -> list[Planned]:
    rng = random.Random(SEED)
    return [Planned(n, rng.choice(heads), rng.choice(AUTHORS), tuple(rng.choices(FILES, WEIGHTS, k=rng.choice((1, 1, 2, 2, 3)))))
            for n in range(1, count + 1)]


def write_series(linux: Path, s: Planned, out: Path) -> list[bytes]:
    """The series' commits on its base, and its mails as `git format-patch --base --thread` writes them."""
    tip = s.base
    for k, path in enumerate(s.files, 1):
        tag = f"day_s{s.number}_p{k}"
        text = helper(code_for(tag, k), show(linux, tip, path), s.number + k)
        msg = f"{subject_of(path)}: Add {tag}()\n\nA helper for the code below it.\n\nSigned-off-by: {s.author}\n"
        tip = commit(linux, tip, {path: text}, msg, author=s.author)
    cover = ("--cover-letter",) if len(s.files) > 1 else ()
    format_patch(linux, s.base, tip, out, "--thread=shallow", f"--to={ADDRESS}", *cover)
    text = out.read_text().replace("*** SUBJECT HERE ***", f"day series {s.number}: small helpers")
    out.write_text(text.replace("*** BLURB HERE ***", "Helpers for the code below them."))
    return [m.as_bytes(unixfrom=False) for m in mailbox.mbox(str(out))]


def site(work: Path, linux: Path, url: str) -> Path:
    """The mirror and the bot's configuration (_lore.bot_site): static, apply and build for x86_64 on LINUX, mail off."""
    return bot_site(work, url, lambda mirror: f'[lists.day]\nmirror = {mirror}\ntree = {json.dumps(str(linux))}\n'
                    'stages = ["static", "apply", "build"]\narches = ["x86_64"]\nmail = "off"\nsettle = 60\n')


@contextlib.contextmanager
def bot(config: Path, environ: dict[str, str], meter: Meter, logs: Path) -> Iterator[None]:
    """`review bot run --workers 0` and a `worker` per pool, each in a process group and cgroup of its own; stopped by
    SIGINT to each group (a worker hands its running jobs back at once), SIGKILL 60 s later."""
    cmd = [sys.executable, "-m", "reviewer", "bot", "--config", str(config)]
    argvs = {"run": [*cmd, "run", "--workers", "0", "--interval", "30"], **{p: [*cmd, "worker", "--pool", p] for p in POOLS}}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for name, argv in argvs.items():
            with (logs / f"{name}.log").open("wb") as out:
                procs.append(subprocess.Popen(meter.wrap(name, argv), cwd=config.parent, env=environ, stdin=subprocess.DEVNULL,
                                              stdout=out, stderr=out, start_new_session=True))
        yield
    finally:
        stop_groups(procs, signal.SIGINT, 60)


def progress(home: Path) -> tuple[int, int, dict[str, int]]:
    """(series with jobs, series reported, stage jobs per state) from the jobs table, read-only."""
    db_path = home / "jobs.db"
    if not db_path.exists():
        return 0, 0, {}
    with contextlib.closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)) as db:
        series = db.execute("SELECT COUNT(DISTINCT series) FROM jobs WHERE stage != 'report'").fetchone()[0]
        reported = db.execute("SELECT COUNT(DISTINCT series) FROM jobs WHERE stage = 'report' AND state = 'done'").fetchone()[0]
        states = dict(db.execute("SELECT state, COUNT(*) FROM jobs WHERE stage != 'report' GROUP BY state").fetchall())
    return series, reported, states


def wait_done(home: Path, count: int, logs: Path) -> float:
    """Until COUNT series are reported and no stage job is queued or running; when (time.time)."""
    deadline, shown = time.monotonic() + TIMEOUT, time.monotonic()
    while True:
        with contextlib.suppress(sqlite3.OperationalError):  # a writer holding the WAL's lock for a moment
            series, reported, states = progress(home)
            if series == count and reported == count and not states.get("queued") and not states.get("running"):
                return time.time()
        if time.monotonic() > deadline:
            raise SystemExit(f"list_day: not done after {TIMEOUT:g} s: {reported}/{count} series reported, jobs {states}; "
                             f"the logs:\n{tails(logs)}")
        if time.monotonic() - shown > 60:
            shown = time.monotonic()
            print(f"  ... {reported}/{count} series reported; stage jobs {states}", file=sys.stderr, flush=True)
        time.sleep(2)


def tails(logs: Path, lines: int = 15) -> str:
    return "\n".join(f"--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-lines:]) for p in sorted(logs.glob("*.log")))


def _interrupt(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 (signal's signature)
    raise KeyboardInterrupt


def main(count: int = SERIES) -> None:
    missing = [c for c in TOOLS if shutil.which(c) is None]
    if missing:
        print(f"\n## A list's day through the bot: skipped: public-inbox is not installed ({', '.join(missing)}; ./dev deps installs it)")
        return
    signal.signal(signal.SIGTERM, _interrupt)  # cleaned up as on ^C
    linux = kernel()
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    with scratch("listday") as tmp:
        work = Path(tmp)
        (work / "tmp").mkdir()
        environ = env(work / "home") | {"PYTHONPATH": str(ROOT), "TMPDIR": str(work / "tmp")}
        environ.pop("REVIEWER_BOOT_CACHE", None)  # the kernel cache in the private XDG_CACHE_HOME: empty at the start
        heads = bases(linux)
        day = plan(count, heads)
        inbox = make_inbox(work / "archive")
        # An empty inbox answers 404 to public-inbox-clone.
        inbox.deliver(b"From: Someone <someone@example.org>\nTo: " + ADDRESS.encode() + b"\nSubject: the day begins\n"
                      b"Date: Sun, 06 Dec 2026 06:00:00 +0000\nMessage-ID: <day.begins@example.org>\n\nhello\n")
        (work / "mbox").mkdir()
        for s in day:
            deliver(inbox, write_series(linux, s, work / "mbox" / f"{s.number}.mbox"))
        (logs := work / "logs").mkdir()
        httpd = start_httpd(inbox, logs / "httpd.log")
        meter = Meter(GROUPS, "listday", watch=[str(work / "home/.cache/reviewer/boot/*/check-*/.config")])  # only Kconfig writes it
        try:
            config = site(work, linux, httpd.url)
            meter.start()
            start = time.time()
            with bot(config, environ, meter, logs):
                end = wait_done(config.parent / "state", count, logs)
            meter.stop()
            _daystats.show(_daystats.read(config.parent / "state", meter, start, end), day, heads, load)
        finally:
            left = meter.close()
            httpd.stop()
            if left:
                print(f"list_day: killed {len(left)} process(es) left in the bot's cgroups", file=sys.stderr)


def deliver(inbox: Inbox, mails: list[bytes]) -> None:
    for m in mails:
        inbox.deliver(m)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=SERIES, metavar="N", help=f"series in the day (default {SERIES}: SERIES)")
    try:
        main(parser.parse_args().series)
    except KeyboardInterrupt:
        print("list_day: interrupted: the bot was stopped and its files removed", file=sys.stderr)
        sys.exit(130)
