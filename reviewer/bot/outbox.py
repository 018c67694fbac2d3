"""The outbox: the mails and Patchwork checks a job's result causes, written in the transaction that records the
result (Outbox.put_with_result), and sent later by a sender that drains it and marks each row sent.

A row is a `mail` (an RFC 5322 message, as bytes, and its recipients) or a `check` (patchwork.Check). Its key
is unique: the same result queued twice (a job run again after its worker died) adds nothing, so no mail
is queued twice. A row moves queued -> sent | failed; `attempts` counts the sends tried, `error` keeps the
last failure, and a failed send is tried again after a backoff that doubles, `attempts` times at most.

The one window: a sender that dies after the server took a message and before its row is marked sent sends
it again (at least once, never lost). drain() leases each row it takes (`lease` seconds, during which no
other drain takes it); a row still queued when the lease ends is sent again. A mail's Message-ID is made
from its key (Mail.of), so the copy is the same message: lore and public-inbox keep one message per
Message-ID, and a reader's mail client shows one.
"""
from __future__ import annotations

import copy
import dataclasses
import email.parser
import email.utils
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any, cast

from reviewer.bot import jobs, sql
from reviewer.bot.patchwork import Check, Client, PatchworkError
from reviewer.errors import ReviewerError
from reviewer.report import message, send

STATES = ("queued", "sent", "failed")
FIELDS = ("id", "key", "job", "list", "kind", "body", "meta", "state", "attempts", "not_before", "error", "created", "updated")
COLUMNS = ", ".join(FIELDS)


@dataclass(frozen=True)
class Mail:
    key: str
    message: bytes  # RFC 5322, as it is sent
    recipients: tuple[str, ...] = ()  # the envelope's; empty: the message's To, Cc and Bcc
    author: str = ""  # the address of the series' author: what the per-author rate limit counts
    not_before: float = 0.0  # not sent before (an embargo, a rate limit)

    @classmethod
    def of(cls, key: str, msg: EmailMessage, recipients: Sequence[str] = (), *, author: str = "", not_before: float = 0.0) -> Mail:
        """MSG under KEY, its Message-ID made from the key: a copy sent again, or made again by a job run again,
        is recognisably the same message. MSG itself is left as it is."""
        mine = copy.deepcopy(msg)
        del mine["Message-ID"]
        mine["Message-ID"] = message_id(key, str(msg.get("From", "")))
        return cls(key, message.as_bytes(mine), tuple(recipients), author, not_before)


def message_id(key: str, sender: str) -> str:
    """<HASH.reviewer-bot@DOMAIN>: the same for the same key, in the sender's domain."""
    domain = email.utils.parseaddr(sender)[1].rpartition("@")[2] or "reviewer-bot.invalid"
    return f"<{hashlib.sha256(key.encode()).hexdigest()[:32]}.reviewer-bot@{domain}>"


Item = Mail | tuple[str, Check]  # a check is put with its key: (key, check)


@dataclass(frozen=True)
class Row:
    id: int
    key: str
    job: int | None
    list: str
    kind: str  # mail | check
    body: bytes
    meta: dict[str, Any]
    state: str
    attempts: int
    not_before: float
    error: str | None
    created: float
    updated: float

    @classmethod
    def of(cls, row: Sequence[Any]) -> Row:
        d = dict(zip(FIELDS, row, strict=True))
        d["body"], d["meta"] = bytes(d["body"]), json.loads(d["meta"])
        return cls(**d)

    def email(self) -> EmailMessage:
        return cast(EmailMessage, email.parser.BytesParser(policy=message.POLICY).parsebytes(self.body))

    @property
    def recipients(self) -> tuple[str, ...]:
        return tuple(self.meta.get("recipients", ()))

    def check(self) -> Check:
        return Check(**self.meta)


Sender = Callable[[Row], None]  # sends a row or raises


@dataclass(frozen=True)
class Delivery:
    """The sender: mail through reviewer's send path (send.transport(CWD): git send-email's sendemail.* keys),
    checks through Patchwork with the token of their API URL (TOKENS: the sender's only, never a worker's)."""

    transport: send.Transport
    cwd: Path
    tokens: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, row: Row) -> None:
        if row.kind == "mail":
            send.deliver(row.email(), self.transport, self.cwd, row.recipients)
            return
        check = row.check()
        token = self.tokens.get(check.api)
        if token is None:
            raise PatchworkError(f"no Patchwork token for {check.api}")
        Client(token).post(check)


def _schema(d: sql.Dialect) -> tuple[str, ...]:
    return (f"""CREATE TABLE IF NOT EXISTS outbox (
        id {d.id_column}, key TEXT NOT NULL UNIQUE, job INTEGER, list TEXT NOT NULL, kind TEXT NOT NULL, body {d.blob} NOT NULL,
        meta TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL, not_before {d.real} NOT NULL, error TEXT,
        created {d.real} NOT NULL, updated {d.real} NOT NULL)""",
            "CREATE INDEX IF NOT EXISTS outbox_due ON outbox (state, not_before, id)")


class Outbox:
    """The outbox table in DB, the jobs table's database (a result and its rows share one transaction). A send is
    tried ATTEMPTS times, BACKOFF seconds after the first failure and twice as long after each next one."""

    def __init__(self, db: sql.Database, *, attempts: int = 5, backoff: float = 60.0, lease: float = 300.0) -> None:
        self.db, self.attempts, self.backoff, self.lease = db, attempts, backoff, lease
        if not db.read_only:  # a reader (the dashboard) creates nothing
            db.create(_schema(db.dialect))

    def put(self, items: Iterable[Item], *, list_name: str = "", job: int | None = None, now: float | None = None) -> int:
        """Queue ITEMS (those whose key is already there are left as they are); how many were new."""
        with self.db.tx() as run:
            return put_in(run, items, list_name=list_name, job=job, now=now)

    def put_with_result(self, job_id: int, worker: str, result: Mapping[str, Any], items: Iterable[Item],
                        now: float | None = None) -> bool:
        """Record WORKER's RESULT of the job (jobs.finish_in) and queue ITEMS, in one transaction: both or neither.
        False, and nothing written, when the job is no longer WORKER's."""
        with self.db.tx() as run:
            if not jobs.finish_in(run, job_id, worker, result, now):
                return False
            (list_name,) = run("SELECT list FROM jobs WHERE id = ?", (job_id,)).fetchone()
            put_in(run, items, list_name=list_name, job=job_id, now=now)
            return True

    def drain(self, sender: Sender, now: float | None = None, limit: int = 100) -> list[Row]:
        """Send the queued rows that are due, oldest first, marking each sent, or queued again for later, or
        failed after `attempts` tries with the error; the rows as they are afterwards."""
        now = time.time() if now is None else now
        done = []
        for row in self._take(now, limit):
            try:
                sender(row)
            except Exception as exc:  # any failure of one row is its own; the drain goes on with the next
                done.append(self._failed(row, exc, now))
            else:
                done.append(self._mark(row.id, "state = 'sent', error = NULL, updated = ?", (now,)))
        return done

    def _take(self, now: float, limit: int) -> list[Row]:
        """Lease up to LIMIT due rows: another drain leaves them alone for `lease` seconds."""
        with self.db.tx() as run:
            rows = run(f"SELECT {COLUMNS} FROM outbox WHERE state = 'queued' AND not_before <= ? ORDER BY id LIMIT ?"
                       + self.db.dialect.lock, (now, limit)).fetchall()
            for r in rows:
                run("UPDATE outbox SET attempts = attempts + 1, not_before = ?, updated = ? WHERE id = ?", (now + self.lease, now, r[0]))
        return [Row.of(r) for r in rows]

    def _failed(self, row: Row, exc: Exception, now: float) -> Row:
        tried = row.attempts + 1
        error = exc.message if isinstance(exc, ReviewerError) else f"{type(exc).__name__}: {exc}"
        state = "queued" if tried < self.attempts else "failed"
        return self._mark(row.id, "state = ?, error = ?, not_before = ?, updated = ?",
                          (state, error, now + self.backoff * 2 ** (tried - 1), now))

    def _mark(self, row_id: int, assignments: str, values: tuple[Any, ...]) -> Row:
        with self.db.tx() as run:
            run(f"UPDATE outbox SET {assignments} WHERE id = ?", (*values, row_id))
            return Row.of(run(f"SELECT {COLUMNS} FROM outbox WHERE id = ?", (row_id,)).fetchone())

    def select(self, state: str | None = None) -> list[Row]:
        where, args = (" WHERE state = ?", (state,)) if state else ("", ())
        with self.db.tx() as run:
            return [Row.of(r) for r in run(f"SELECT {COLUMNS} FROM outbox{where} ORDER BY id", args).fetchall()]

    def sent_since(self, since: float) -> list[Row]:
        """The mails sent at or after SINCE."""
        with self.db.tx() as run:
            rows = run(f"SELECT {COLUMNS} FROM outbox WHERE kind = 'mail' AND state = 'sent' AND updated >= ? ORDER BY id", (since,))
            return [Row.of(r) for r in rows.fetchall()]

    def mails_since(self, since: float) -> list[tuple[Row, float]]:
        """What the policy's rate limits count: the mails sent at or after SINCE, and those queued (to be sent, at
        the earliest when they are due), each with its time (sent: when; queued: when it is due)."""
        with self.db.tx() as run:
            rows = run(f"SELECT {COLUMNS} FROM outbox WHERE kind = 'mail' AND ((state = 'sent' AND updated >= ?) OR state = 'queued') "
                       "ORDER BY id", (since,)).fetchall()
        out = [Row.of(r) for r in rows]
        return [(r, r.updated if r.state == "sent" else max(r.not_before, r.created)) for r in out]

    def counts(self) -> dict[str, int]:
        """How many rows are queued, sent and failed."""
        with self.db.tx() as run:
            got = dict(run("SELECT state, COUNT(*) FROM outbox GROUP BY state", ()).fetchall())
        return {s: int(got.get(s, 0)) for s in STATES}

    def errors(self, limit: int = 10) -> list[Row]:
        """The rows whose last send failed (queued again or failed for good), newest first."""
        with self.db.tx() as run:
            rows = run(f"SELECT {COLUMNS} FROM outbox WHERE error IS NOT NULL ORDER BY updated DESC, id DESC LIMIT ?", (limit,))
            return [Row.of(r) for r in rows.fetchall()]


def put_in(run: sql.Run, items: Iterable[Item], *, list_name: str = "", job: int | None = None, now: float | None = None) -> int:
    """Outbox.put inside the open transaction RUN."""
    now = time.time() if now is None else now
    new = 0
    for item in items:
        if isinstance(item, Mail):
            meta: dict[str, Any]
            key, kind, body, meta = item.key, "mail", item.message, {"recipients": list(item.recipients)}
            meta |= {"author": item.author} if item.author else {}
            due = max(now, item.not_before)
        else:
            key, kind, body, meta = item[0], "check", b"", dataclasses.asdict(item[1])
            due = now
        values = (key, job, list_name, kind, body, json.dumps(meta, sort_keys=True), "queued", 0, due, None, now, now)
        cur = run(f"INSERT INTO outbox ({COLUMNS.removeprefix('id, ')}) VALUES ({', '.join('?' * len(values))}) "
                  "ON CONFLICT (key) DO NOTHING", values)
        new += cur.rowcount == 1
    return new
