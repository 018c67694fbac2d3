"""A bot home with real reviewed series, for the dashboard's tests (test_web.py, test_web_browser.py): a public-inbox
v2 inbox read in place, the bot's loop run in this process (tick, the jobs run as their consumers would, report) with
the `static` and `apply` stages on a kernel-shaped tree. Three postings: `lib: rework the api` v1 and v2 (v2 changes
each patch's line and drops v1's second patch's missing sign-off), and a hostile one whose subject is markup and whose
file name is `"><svg onload=alert(3)>`."""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench._lore import INBOX, Inbox, make_inbox
from reviewer.bot import config, loop
from reviewer.bot.config import BotConfig
from reviewer.tree.plainrepo import build_base_repo
from tests.bot.mails import diff, mail, series
from tests.conftest import FIXTURES

BOT = "reviewer-bot <bot@example.org>"
SUBJECT = "lib: rework the api"
HOSTILE = "<img src=x onerror=alert(1)> </script><script>alert(2)</script>"
HOSTILE_PATH = 'lib/"><svg onload=alert(3)>.c'


@dataclass(frozen=True)
class Home:
    cfg: BotConfig
    tree: Path
    v1: str  # the roots' Message-IDs
    v2: str
    hostile: str


def tree(root: Path) -> Path:
    """The kernel-shaped tree with the files the series change (lib/fK.c), committed."""
    repo = root / "linux"
    build_base_repo(FIXTURES / "kernel-mini", repo)
    for k in (1, 2, 3):
        (repo / f"lib/f{k}.c").write_text(f"context one\nold {k}\ncontext two\n")
    subprocess.run(["git", "-C", str(repo), "add", "lib"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "lib: the files the series change"], check=True)
    return repo


def hostile() -> list[bytes]:
    cover = "evil.0@example.org"
    body = f"Break it.\n\nSigned-off-by: Ann Author <ann@example.org>\n---\n{diff(HOSTILE_PATH, 'old 1', 'new 1')}"
    return [mail(cover, f"[PATCH 0/1] {HOSTILE}", "A series with a hostile subject.\n"),
            mail("evil.1@example.org", f"[PATCH 1/1] {HOSTILE}", body, reply_to=cover, minute=1)]


def _work(lp: loop.Loop) -> None:
    for job in lp.bot.jobs.select(state="queued"):
        if job.pool != loop.REPORT:
            lp.bot.run(job.pool, job.id)


def _round(lp: loop.Loop, at: float) -> None:
    loop.tick(lp, at)
    _work(lp)
    loop.report(lp, BOT, time.time())


def _loop(root: Path) -> tuple[loop.Loop, Inbox, Path]:
    inbox = make_inbox(root / "archive")
    inbox.deliver(mail("first@example.org", "the list's first mail", "hello\n"))
    repo = tree(root)
    path = root / "bot.toml"
    path.write_text(f'[bot]\nhome = "state"\n\n[lists.test]\nmirror = "{inbox.root / INBOX}"\nsettle = 0\nmail = "off"\n'
                    f'stages = ["static", "apply"]\ntree = "{repo}"\n')
    return loop.Loop(config.load(path), fetch=False), inbox, repo


def make(root: Path) -> Home:
    """The home under ROOT, its series reviewed and reported (mail off: nothing is sent)."""
    lp, inbox, repo = _loop(root)
    try:
        v1 = series("api", "PATCH", SUBJECT, 2)
        v1[2] = v1[2].replace(b"Signed-off-by: Ann Author <ann@example.org>\n", b"")  # a finding v2 fixes
        for m in v1:
            inbox.deliver(m)
        _round(lp, time.time())
        for m in series("api2", "PATCH v2", SUBJECT, 2, change=" v2", wording="Do it better"):
            inbox.deliver(m)
        _round(lp, time.time())
        for m in hostile():
            inbox.deliver(m)
        _round(lp, time.time())
    finally:
        lp.close()
    return Home(lp.cfg, repo, "api.0@example.org", "api2.0@example.org", "evil.0@example.org")


def superseded_early(root: Path) -> Home:
    """A home whose v1 was superseded by its v2 before any of v1's jobs ran: v1's jobs are cancelled (no hostile series)."""
    lp, inbox, repo = _loop(root)
    try:
        for m in series("early", "PATCH", SUBJECT, 2):
            inbox.deliver(m)
        loop.tick(lp, time.time())
        for m in series("early2", "PATCH v2", SUBJECT, 2, change=" v2"):
            inbox.deliver(m)
        _round(lp, time.time())
    finally:
        lp.close()
    return Home(lp.cfg, repo, "early.0@example.org", "early2.0@example.org", "")
