"""The laptop's feed: a `lei` saved search (public-inbox's local email interface) written to a maildir.

`lei q -o maildir:DIR QUERY` makes the search once (e.g. `l:linux-mm.kvack.org AND dfn:mm/dmapool.c AND rt:2.weeks.ago..`:
cross-list, path-filtered), `lei up DIR` brings it up to date (https://public-inbox.org/lei-q.html, lei-up.html). The
bot reads the maildir's new/ and cur/ and never changes it (the maintainer's mail client may read it too). What was
read is remembered by file in the bot's store (bot.sqlite, table `lei_read`): a file's name up to its ':' flags
(lei names a message by a hash of it; a mail client that marks it seen changes only the flags, or moves it from
new/ to cur/). The messages go to Store.record first and the names after, in a second transaction: a bot killed
between them reads those files again and Store.record, which keeps one message per Message-ID, records none twice.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Collection, Sequence
from pathlib import Path

from reviewer.bot import assemble
from reviewer.bot.assemble import Seen
from reviewer.bot.feed import RawMail
from reviewer.bot.store import Store
from reviewer.errors import CommandError, FetchError
from reviewer.proc import run_group

log = logging.getLogger(__name__)
TIMEOUT = 600.0
EPOCH = 0  # a maildir has no epochs: RawMail.commit holds the file's key instead
SCHEMA = "CREATE TABLE IF NOT EXISTS lei_read (list TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (list, name))"


def search_command(maildir: Path, query: str) -> list[str]:
    """`lei q` making the saved search QUERY, its results written to MAILDIR (once: lei q replaces what is there)."""
    return ["lei", "q", "-q", "-o", f"maildir:{maildir}", query]


def update_command(maildir: Path) -> list[str]:
    return ["lei", "up", "-q", str(maildir)]


def follow(maildir: Path, query: str, timeout: float = TIMEOUT, env: dict[str, str] | None = None) -> None:
    """Make the saved search QUERY into MAILDIR if there is none there yet, else bring it up to date (`lei up`).
    A failure or its timeout is a FetchError naming the maildir."""
    made = (maildir / "cur").is_dir() and (maildir / "new").is_dir()
    _lei(update_command(maildir) if made else search_command(maildir, query), maildir, timeout, env)


def _lei(args: Sequence[str], maildir: Path, timeout: float, env: dict[str, str] | None) -> None:
    maildir.parent.mkdir(parents=True, exist_ok=True)
    try:
        done = run_group(args, cwd=maildir.parent, env=os.environ if env is None else env, timeout=timeout)
    except CommandError as exc:
        raise FetchError(f"{maildir}: {exc.message}", "is lei installed? (Debian: apt-get install lei)") from exc
    if done.timed_out:
        raise FetchError(f"{maildir}: {args[0]} {args[1]} timed out after {timeout:g}s")
    if done.returncode != 0:
        last = done.output.strip().splitlines()
        raise FetchError(f"{maildir}: {' '.join(args[:2])} exited {done.returncode}" + (f": {last[-1]}" if last else ""),
                         "does `lei ls-search` list the search, and `lei ls-external` its inboxes?")


def key(name: str) -> str:
    """A maildir file's name without its flags (`:2,S`): the same message after a mail client marked it."""
    return name.partition(":")[0]


def files(maildir: Path) -> list[Path]:
    """MAILDIR's messages (new/ and cur/; tmp/ holds those still being written), oldest first."""
    found = [p for sub in ("new", "cur") if (maildir / sub).is_dir() for p in (maildir / sub).iterdir()
             if p.is_file() and not p.name.startswith(".")]
    return sorted(found, key=lambda p: (_mtime(p), p.name))


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:  # moved new/ -> cur/ meanwhile: read (or found) next time
        return 0.0


def message(maildir: Path, name: str) -> bytes:
    """The message whose file's key (its name up to the flags) is NAME, wherever the mail client moved it."""
    for path in files(maildir):
        if key(path.name) == name:
            return path.read_bytes()
    raise FetchError(f"{maildir}: no file {name} any more (deleted by a mail client?)", "enqueue the series' mbox instead")


def new_messages(maildir: Path, read: Collection[str]) -> list[RawMail]:
    """MAILDIR's messages whose key is not in READ, oldest first, as the archive feed gives them (the key in
    RawMail.commit). A file moved away while it is listed is left for the next call."""
    mails = []
    for path in files(maildir):
        name = key(path.name)
        if name in read:
            continue
        try:
            mails.append(RawMail(EPOCH, name, path.read_bytes()))
        except FileNotFoundError:
            log.info("%s: moved while read; read next time", path)
    return mails


class Cursor:
    """Which maildir files of a list the bot has read, in the bot's store."""

    def __init__(self, store: Store, listname: str) -> None:
        self.store, self.list = store, listname
        with store.db:
            store.db.execute(SCHEMA)

    def read(self) -> set[str]:
        return {str(n) for (n,) in self.store.db.execute("SELECT name FROM lei_read WHERE list = ?", (self.list,))}

    def mark(self, mails: Sequence[RawMail]) -> None:
        with self.store.db:
            self.store.db.executemany("INSERT INTO lei_read (list, name) VALUES (?, ?) ON CONFLICT (list, name) DO NOTHING",
                                      [(self.list, m.commit) for m in mails])


def poll(store: Store, listname: str, maildir: Path, at: float) -> list[Seen]:
    """Read MAILDIR's new files as LISTNAME's (read AT), record them in STORE, and return the messages not
    recorded before. A file that is no mail is skipped with a warning, and remembered as read all the same."""
    cursor = Cursor(store, listname)
    mails = new_messages(maildir, cursor.read())
    new = store.record(listname, assemble.read(listname, mails, at), {})
    cursor.mark(mails)
    return new
