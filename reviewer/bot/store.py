"""The bot's own durable state: the feed cursor of each list, the messages it read, the series it found.

SQLite in WAL mode (readers do not block the writer: a status command reads while the feed writes),
in the bot's home. A batch of messages and the cursor after them are written in ONE transaction, so
a bot killed at any point restarts from a cursor that matches exactly what it recorded: no message
is lost, none is read twice. The SQL is plain SQL that PostgreSQL runs as well (`ON CONFLICT ...
DO NOTHING/UPDATE`, `DOUBLE PRECISION`, no ROWID, no `INSERT OR ...`); what is SQLite's own is
marked "SQLite:" below. sqlite3's placeholders are `?`, psycopg's `%s`: a PostgreSQL store would
translate them in _sql().
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reviewer.bot.assemble import Assembled, Readiness, Seen
from reviewer.bot.commands import Command, Stops, Verb
from reviewer.series import postings
from reviewer.series.fetch import MailFacts

DB_NAME = "bot.sqlite"
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS cursors (list TEXT NOT NULL, epoch INTEGER NOT NULL, last_commit TEXT NOT NULL,"
    " PRIMARY KEY (list, epoch))",
    # Per list: a series cross-posted to two lists is seen (and judged by the policy) on each.
    "CREATE TABLE IF NOT EXISTS messages (list TEXT NOT NULL, msgid TEXT NOT NULL, position INTEGER NOT NULL, epoch INTEGER NOT NULL,"
    " last_commit TEXT NOT NULL, seen_at DOUBLE PRECISION NOT NULL, facts TEXT NOT NULL, PRIMARY KEY (list, msgid))",
    "CREATE TABLE IF NOT EXISTS series (key TEXT PRIMARY KEY, list TEXT NOT NULL, identity TEXT NOT NULL,"
    " revision INTEGER NOT NULL, state TEXT NOT NULL, duplicate_of TEXT, supersedes TEXT, ready_at DOUBLE PRECISION NOT NULL,"
    " detail TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS series_identity ON series (identity)",
    # What commands stopped: kind `series` (its key) or `author` (an address); the reply that said it.
    "CREATE TABLE IF NOT EXISTS stops (kind TEXT NOT NULL, value TEXT NOT NULL, msgid TEXT NOT NULL, PRIMARY KEY (kind, value))",
)


class Store:
    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        if read_only:  # a reader (the dashboard): creates nothing, and its SELECTs take no write lock
            self.db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30, check_same_thread=False)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")  # SQLite: PostgreSQL needs none
        self.db.execute("PRAGMA synchronous=FULL")  # SQLite: a commit survives a power cut, not only a crash
        with self._tx() as c:
            for statement in SCHEMA:
                c.execute(statement)

    @classmethod
    def in_home(cls, home: Path, *, read_only: bool = False) -> Store:
        return cls(home / DB_NAME, read_only=read_only)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Cursor]:
        """One transaction: committed when the block ends, rolled back when it raises."""
        with self.db:
            yield self.db.cursor()

    def cursor(self, listname: str) -> dict[int, str]:
        rows = self.db.execute("SELECT epoch, last_commit FROM cursors WHERE list = ?", (listname,))
        return {int(e): str(c) for e, c in rows}

    def record(self, listname: str, seen: Sequence[Seen], cursor: dict[int, str]) -> list[Seen]:
        """SEEN (read from LISTNAME's feed) and the CURSOR after them, in one transaction; the messages not
        recorded before (by Message-ID), in order."""
        new = []
        with self._tx() as c:
            # The feed's order (the archive's commits), kept as a number: seen_at ties within a batch.
            position = int(c.execute("SELECT COALESCE(MAX(position), 0) FROM messages WHERE list = ?", (listname,)).fetchone()[0])
            for s in seen:
                c.execute("INSERT INTO messages (list, msgid, position, epoch, last_commit, seen_at, facts) VALUES (?, ?, ?, ?, ?, ?, ?)"
                          " ON CONFLICT (list, msgid) DO NOTHING",
                          (listname, s.msgid, position + 1, s.epoch, s.commit, s.seen_at, json.dumps(facts_json(s.facts))))
                if c.rowcount == 1:
                    new.append(s)
                    position += 1
            for epoch, commit in sorted(cursor.items()):
                c.execute("INSERT INTO cursors (list, epoch, last_commit) VALUES (?, ?, ?)"
                          " ON CONFLICT (list, epoch) DO UPDATE SET last_commit = excluded.last_commit", (listname, epoch, commit))
        return new

    def messages(self, listname: str) -> list[Seen]:
        """LISTNAME's messages, in the order they were read."""
        rows = self.db.execute("SELECT epoch, last_commit, seen_at, facts FROM messages WHERE list = ? ORDER BY position",
                               (listname,))
        return [Seen(facts_from(json.loads(f)), listname, float(t), int(e), str(c)) for e, c, t, f in rows]

    def save_ready(self, series: Sequence[Assembled], now: float) -> list[Assembled]:
        """The ready (or settled incomplete) SERIES not recorded before, recorded now: each is decided once, but for a
        series decided incomplete whose missing parts came later (held in a moderation queue, say): it is decided
        again, once, as ready."""
        new = []
        with self._tx() as c:
            for s in series:
                if s.state is Readiness.WAITING:
                    continue
                c.execute("INSERT INTO series (key, list, identity, revision, state, duplicate_of, supersedes, ready_at, detail)"
                          " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET state = excluded.state,"
                          " ready_at = excluded.ready_at, detail = excluded.detail"
                          " WHERE series.state = 'incomplete' AND excluded.state = 'ready'",
                          (s.key, s.list, s.identity, s.revision, s.state.value, s.duplicate_of, s.supersedes, now,
                           json.dumps(dataclasses.asdict(s))))
                if c.rowcount == 1:
                    new.append(s)
        return new

    def stop(self, commands: Sequence[Command]) -> None:
        """Record the stops among COMMANDS (commands.parse's, from an author or a maintainer): they hold across restarts."""
        with self._tx() as c:
            for cmd in commands:
                if cmd.verb in (Verb.STOP, Verb.STOP_AUTHOR):
                    kind, value = ("series", cmd.series) if cmd.verb is Verb.STOP else ("author", cmd.author.lower())
                    c.execute("INSERT INTO stops (kind, value, msgid) VALUES (?, ?, ?) ON CONFLICT (kind, value) DO NOTHING",
                              (kind, value, cmd.msgid))

    def stops(self) -> Stops:
        rows = list(self.db.execute("SELECT kind, value FROM stops"))
        return Stops(frozenset(v for k, v in rows if k == "series"), frozenset(v for k, v in rows if k == "author"))

    def series(self, listname: str) -> list[Assembled]:
        return [s for s, _ in self.series_at(listname)]

    def series_at(self, listname: str) -> list[tuple[Assembled, float]]:
        """LISTNAME's series decided, each with when it was (last) decided, oldest first."""
        rows = self.db.execute("SELECT detail, ready_at FROM series WHERE list = ? ORDER BY ready_at, key", (listname,))
        return [(_assembled(json.loads(d)), float(t)) for d, t in rows]


def facts_json(f: MailFacts) -> dict[str, Any]:
    mail = dataclasses.asdict(f.mail) | {"date": f.mail.date.isoformat(), "kind": f.mail.kind.value}
    return {"mail": mail, "change_id": f.change_id, "patch_id": f.patch_id, "rfc": f.rfc}


def facts_from(d: dict[str, Any]) -> MailFacts:
    m = d["mail"]
    mail = postings.Mail(**(m | {"date": dt.datetime.fromisoformat(m["date"]), "kind": postings.Kind(m["kind"]),
                                 "references": tuple(m["references"])}))
    return MailFacts(mail, d["change_id"], d["patch_id"], bool(d["rfc"]))


def _assembled(d: dict[str, Any]) -> Assembled:
    tuples = {k: tuple(d[k]) for k in ("parts", "missing", "patch_ids")}
    return Assembled(**(d | tuples | {"state": Readiness(d["state"])}))
