"""The series' mboxes, kept in the jobs table's database by their sha256, so that a worker on another machine
reads the series a job names from the database that gave it the job: no shared file system is needed. The
bot's loop stores each mbox it writes (loop.write_mbox); a worker materialises it in its own home before the
stage runs (`local`), checking the hash, and reuses the file afterwards."""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from reviewer.bot import sql


def _schema(d: sql.Dialect) -> tuple[str, ...]:
    return (f"CREATE TABLE IF NOT EXISTS mboxes (sha256 TEXT PRIMARY KEY, data {d.blob} NOT NULL, created {d.real} NOT NULL)",)


class Mboxes:
    def __init__(self, db: sql.Database) -> None:
        self.db = db
        if not db.read_only:
            db.create(_schema(db.dialect))

    def put(self, data: bytes, now: float | None = None) -> str:
        """Keep DATA (once, whoever stores it first); its sha256."""
        digest = hashlib.sha256(data).hexdigest()
        with self.db.tx() as run:
            run("INSERT INTO mboxes (sha256, data, created) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING",
                (digest, data, time.time() if now is None else now))
        return digest

    def get(self, digest: str) -> bytes | None:
        with self.db.tx() as run:
            row = run("SELECT data FROM mboxes WHERE sha256 = ?", (digest,)).fetchone()
        return None if row is None else bytes(row[0])


def local(mboxes: Mboxes, home: Path, digest: str) -> Path:
    """The mbox DIGEST as a file in HOME/mbox/ (written from the database the first time, atomically); a
    LookupError when the database does not have it or holds other bytes under its name."""
    path = home / "mbox" / f"{digest}.mbox"
    if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == digest:
        return path
    data = mboxes.get(digest)
    if data is None or hashlib.sha256(data).hexdigest() != digest:
        raise LookupError(f"mbox {digest}: not in the jobs database" if data is None else f"mbox {digest}: its bytes do not match")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{digest}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return path
