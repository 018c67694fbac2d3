"""A list's mail, read from a local git mirror of its public-inbox v2 archive, never from web pages.

`public-inbox-clone URL DIR` makes the mirror and `public-inbox-fetch -C DIR` brings it up to date
(https://public-inbox.org/public-inbox-v2-format.html): the archive is split into epochs, DIR/git/0.git,
1.git, ..., each a bare repository whose every commit adds one message as the blob `m` (a commit that
removes one holds `d` instead). A cursor is the last commit read of each epoch: reading from it gives
exactly the messages committed since, oldest first, and an epoch not in the cursor yet is read whole.
"""
from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from reviewer.errors import CommandError, FetchError
from reviewer.proc import run_group
from reviewer.tree import git

log = logging.getLogger(__name__)
Cursor = Mapping[int, str]  # epoch -> the last commit read in it
FETCH_TIMEOUT = 600.0
_EPOCH = re.compile(r"^(\d+)\.git$")
_NOTHING_NEW = 127  # public-inbox-fetch --exit-code: "no updates", see public-inbox-fetch(1)


@dataclass(frozen=True)
class RawMail:
    """One message as the archive holds it, and where: the cursor it moves to once it is read."""

    epoch: int
    commit: str
    data: bytes


def epochs(mirror: Path) -> dict[int, Path]:
    """The epochs of MIRROR (its git/N.git), by number."""
    found = (_EPOCH.match(p.name) for p in (mirror / "git").glob("*.git"))
    return {int(m.group(1)): mirror / "git" / m.group(0) for m in found if m is not None}


def tip(mirror: Path) -> dict[int, str]:
    """A cursor at the end of MIRROR: a bot that starts on a list's long history reads only what comes next."""
    return {n: head for n, repo in epochs(mirror).items() if (head := git.read(repo, "rev-parse", "--verify", "-q", "HEAD"))}


def new_messages(mirror: Path, cursor: Cursor) -> tuple[list[RawMail], dict[int, str]]:
    """Every message committed to MIRROR since CURSOR, oldest first (epoch by epoch), and the cursor after them.

    A message whose blob cannot be read is skipped with a warning; the cursor still moves past it."""
    mails: list[RawMail] = []
    after = dict(cursor)
    for n, repo in sorted(epochs(mirror).items()):
        commits = _commits(repo, cursor.get(n))
        if commits:
            mails += _read(n, repo, commits)
            after[n] = commits[-1]
    return mails, after


def message(mirror: Path, epoch: int, commit: str) -> bytes:
    """The message that COMMIT of EPOCH added to MIRROR (a series' part, read again to write its mbox)."""
    return git.output(mirror / "git" / f"{epoch}.git", "cat-file", "blob", f"{commit}:m", timeout=60)


def _commits(repo: Path, since: str | None) -> list[str]:
    if not git.ok(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}"):
        return []  # an epoch made but not yet fetched into
    if since is not None and not git.ok(repo, "merge-base", "--is-ancestor", since, "HEAD"):
        # public-inbox-purge/-edit rewrite an epoch's history: the cursor's commit is gone from it.
        raise FetchError(f"{repo}: the last commit read ({since}) is no longer in the epoch's history",
                         "the archive was rewritten (public-inbox-purge): set the list's cursor again")
    span = f"{since}..HEAD" if since else "HEAD"
    return git.git(repo, "log", "--reverse", "--format=%H", span, timeout=120).split()


def _read(epoch: int, repo: Path, commits: list[str]) -> list[RawMail]:
    """The `m` blob of each of COMMITS, with one `git cat-file --batch`; one by one when that fails."""
    request = "".join(f"{c}:m\n" for c in commits).encode()
    try:
        out = git.output(repo, "cat-file", "--batch", input=request, timeout=300)
    except CommandError:  # a corrupt object ends the batch: find which, keep the others
        return [m for c in commits if (m := _one(epoch, repo, c)) is not None]
    mails, pos = [], 0
    for commit in commits:
        end = out.index(b"\n", pos)
        line, pos = out[pos:end], end + 1
        header = line.split()
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            mails.append(RawMail(epoch, commit, out[pos : pos + size]))
            pos += size + 1
        else:  # "<name> missing": no blob m in the commit, or the blob is gone
            _skipped(repo, commit, line.decode(errors="replace"))
    return mails


def _one(epoch: int, repo: Path, commit: str) -> RawMail | None:
    try:
        return RawMail(epoch, commit, git.output(repo, "cat-file", "blob", f"{commit}:m", timeout=60))
    except CommandError as exc:
        _skipped(repo, commit, exc.stderr.strip() or exc.message)
        return None


def _skipped(repo: Path, commit: str, why: str) -> None:
    # A removal (`d`, public-inbox-learn rm) has no `m` either: it is no new message.
    log.warning("%s: commit %s: no message read (%s); skipped", repo, commit, why)


def fetch(mirror: Path, timeout: float = FETCH_TIMEOUT) -> bool:
    """`public-inbox-fetch` MIRROR: whether anything new came. Failure or timeout: FetchError saying which.

    It runs in a process group of its own, killed whole at TIMEOUT: the git and curl it starts go too."""
    hint = "is DIR a mirror made by public-inbox-clone, and its server reachable?"
    try:
        done = run_group(["public-inbox-fetch", "--exit-code", "-q", "-C", str(mirror)], cwd=mirror, env=os.environ, timeout=timeout)
    except CommandError as exc:
        raise FetchError(f"{mirror}: {exc.message}", "is public-inbox installed?") from exc
    if done.timed_out:
        raise FetchError(f"{mirror}: public-inbox-fetch timed out after {timeout:g}s", hint)
    if done.returncode not in (0, _NOTHING_NEW):
        last = done.output.strip().splitlines()
        raise FetchError(f"{mirror}: public-inbox-fetch exited {done.returncode}" + (f": {last[-1]}" if last else ""), hint)
    return done.returncode == 0
