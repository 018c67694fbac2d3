"""The one SQL dialect layer of the bot's tables (no ORM): SQLite in WAL mode by default, PostgreSQL when
workers on several machines share the table, chosen by a URL. SQL is written once, with `?` placeholders;
what differs is the Dialect's: placeholders, column types, the row lock of a claim, the schema's lock."""
from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg


@dataclass(frozen=True)
class Dialect:
    placeholder: str
    id_column: str  # an integer key the database assigns
    real: str  # a float column (Unix seconds)
    lock: str  # appended to a SELECT whose rows the transaction then updates
    schema_lock: str = ""  # run before creating tables: two workers starting at once on PostgreSQL would race
    blob: str = "BLOB"  # a bytes column (the outbox's messages)
    columns: str = "SELECT name FROM pragma_table_info(?)"  # the names of a table's columns


SQLITE = Dialect("?", "INTEGER PRIMARY KEY AUTOINCREMENT", "REAL", "")  # BEGIN IMMEDIATE locks the whole database
POSTGRES = Dialect("%s", "BIGSERIAL PRIMARY KEY", "DOUBLE PRECISION", " FOR UPDATE SKIP LOCKED",
                   "SELECT pg_advisory_xact_lock(3232)", "BYTEA",  # any number: the bot's schema
                   "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?")


@dataclass(frozen=True)
class Run:
    """Executes SQL written with `?` placeholders in the database's dialect; returns the DB-API cursor."""

    dialect: Dialect
    execute: Callable[..., Any]

    def __call__(self, sql: str, args: tuple[Any, ...] = ()) -> Any:
        return self.execute(sql.replace("?", self.dialect.placeholder), args)


class Database:
    """The database at URL: `postgresql://...`, `sqlite:///PATH` or a path (SQLite). One connection, used by
    one thread at a time (a worker's heartbeat thread shares it with the stage's)."""

    def __init__(self, url: str | Path, *, read_only: bool = False) -> None:
        text = str(url)
        self._lock = threading.Lock()
        self.read_only = read_only
        self._begin = "BEGIN" if read_only else "BEGIN IMMEDIATE"
        self._pg: psycopg.Connection[tuple[Any, ...]] | None = None
        self._lite: sqlite3.Connection | None = None
        if text.startswith(("postgresql://", "postgres://")):
            import psycopg  # the `bot` extra, 105 ms: only a shared table needs it (docs/design.md, "Imports kept lazy")

            self.dialect = POSTGRES
            self._pg = psycopg.connect(text, autocommit=True)
            self._pg.read_only = read_only
        else:
            self.dialect = SQLITE
            path = Path(text.removeprefix("sqlite://"))
            if read_only:  # a reader (the dashboard): never creates the file, never takes the write lock
                self._lite = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60, isolation_level=None,
                                             check_same_thread=False)
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            self._lite = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
            _wal(self._lite)
            self._lite.execute("PRAGMA synchronous=NORMAL")

    def create(self, statements: tuple[str, ...], added: tuple[tuple[str, str, str], ...] = ()) -> None:
        """Run the CREATE ... IF NOT EXISTS STATEMENTS, once however many workers start at the same moment; then add
        the columns ADDED (table, column, type: columns newer than the table's first version) that a table made by
        an older version lacks."""
        with self.tx() as run:
            for statement in (self.dialect.schema_lock, *statements):
                if statement:
                    run(statement)
            for table, column, kind in added:
                if column not in {r[0] for r in run(self.dialect.columns, (table,)).fetchall()}:
                    run(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    def close(self) -> None:
        with self._lock:
            if self._pg is not None:
                self._pg.close()
            if self._lite is not None:
                self._lite.close()

    @contextlib.contextmanager
    def tx(self) -> Iterator[Run]:
        """One transaction. On SQLite it takes the write lock at once (BEGIN IMMEDIATE: two claims never both
        read a job as queued), but for a read-only Database (a plain BEGIN: a snapshot, no lock held against the
        writers); on PostgreSQL a claim's row lock (Dialect.lock) does that."""
        with self._lock:
            if self._pg is not None:
                with self._pg.transaction():
                    yield Run(self.dialect, self._pg.execute)
                return
            assert self._lite is not None
            self._lite.execute(self._begin)
            try:
                yield Run(self.dialect, self._lite.execute)
            except BaseException:
                self._lite.execute("ROLLBACK")
                raise
            self._lite.execute("COMMIT")


def _wal(conn: sqlite3.Connection, seconds: float = 60.0) -> None:
    """Put the database in WAL mode. The switch needs the database to itself and SQLite does not wait for that
    (no busy handler): another process opening the new file at the same moment makes it fail, so try again."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
