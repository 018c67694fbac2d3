"""What an operator asks of the bot by hand: its status (per list and pool: jobs queued, running, done, failed,
the oldest waiting; the last errors; the outbox's counts) and a job added now (`enqueue`). The CLI
(reviewer/cli/bot.py) only parses the options and prints what these return."""
from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path
from typing import Any

from reviewer.bot.config import BotConfig
from reviewer.bot.jobs import Job, Jobs, Spec
from reviewer.bot.mboxes import Mboxes
from reviewer.bot.outbox import Outbox
from reviewer.bot.queue import Bot
from reviewer.errors import ConfigError, InputError, UsageError

COUNTED = ("queued", "running", "done", "failed", "cancelled")


def _open(cfg: BotConfig, *, read_only: bool = False) -> Jobs | None:
    """The jobs table, or None when its SQLite file does not exist yet (a bot that never ran: status creates nothing);
    READ_ONLY: opened for reading only (the dashboard: no schema written, no write lock taken)."""
    url = cfg.jobs_url
    if not url.startswith(("postgresql://", "postgres://")) and not Path(url.removeprefix("sqlite://")).exists():
        return None
    try:
        return Jobs(url, read_only=read_only)
    except Exception as exc:  # psycopg's or sqlite3's: the database named in the file cannot be used
        raise ConfigError(f"{cfg.path}: [bot] db: cannot open the jobs table: {' '.join(str(exc).split())}") from exc


def status(cfg: BotConfig, now: float | None = None, *, read_only: bool = False) -> dict[str, Any]:
    """The bot's status as JSON-able data (docs/bot.md, "Running it"); READ_ONLY: see _open()."""
    now = time.time() if now is None else now
    lists: dict[str, dict[str, Any]] = {name: {"mirror": lc.mirror or None, "lei": lc.lei or None, "pools": {}}
                                        for name, lc in (cfg.lists or {}).items()}
    doc: dict[str, Any] = {"config": str(cfg.path), "home": str(cfg.home), "queue": cfg.queue, "lists": lists, "errors": [],
                           "outbox": {"queued": 0, "sent": 0, "failed": 0, "errors": []}, "time": now}
    table = _open(cfg, read_only=read_only)
    if table is None:
        return doc
    with table:
        for c in table.counts():
            pools = lists.setdefault(c.list, {"mirror": None, "lei": None, "pools": {}})["pools"]
            pool = pools.setdefault(c.pool, {**dict.fromkeys(COUNTED, 0), "oldest_waiting": None})
            pool[c.state] = c.jobs
            if c.state == "queued":
                pool["oldest_waiting"] = c.oldest
        doc["errors"] = [{"job": j.id, "list": j.list, "pool": j.pool, "stage": j.stage, "series": j.series, "error": j.error,
                          "at": j.updated} for j in table.errors()]
        if read_only and not _has(table, "outbox"):  # a table made by `enqueue` alone: no outbox yet, and a reader makes none
            return doc
        outbox = Outbox(table.db)
        doc["outbox"] = {**outbox.counts(), "errors": [{"key": r.key, "kind": r.kind, "state": r.state, "attempts": r.attempts,
                                                        "error": r.error, "at": r.updated} for r in outbox.errors()]}
    return doc


def _has(table: Jobs, name: str) -> bool:
    with table.db.tx() as run:
        return bool(run(table.db.dialect.columns, (name,)).fetchall())


def text(doc: dict[str, Any]) -> str:
    """DOC (status()) for a person."""
    out = [f"bot {doc['home']} (queue {doc['queue']})"]
    for name, lst in doc["lists"].items():
        source = lst["mirror"] or (f"lei search {lst['lei']}" if lst.get("lei") else "")
        out.append(f"list {name}" + (f" ({source})" if source else " (not in the configuration)"))
        if not lst["pools"]:
            out.append("  no jobs")
        for pool, n in lst["pools"].items():
            counts = ", ".join(f"{n[s]} {s}" for s in COUNTED)
            oldest = "" if n["oldest_waiting"] is None else f"; oldest waiting {_age(doc['time'] - n['oldest_waiting'])}"
            out.append(f"  pool {pool}: {counts}{oldest}")
    if not doc["lists"]:
        out.append("no lists configured and no jobs")
    ob = doc["outbox"]
    out.append(f"outbox: {ob['queued']} queued, {ob['sent']} sent, {ob['failed']} failed")
    out += [f"  {e['kind']} {e['key']}: {e['state']} after {e['attempts']} attempt(s): {e['error']}" for e in ob["errors"]]
    out.append("last errors:" if doc["errors"] else "no failed jobs")
    out += [f"  job {e['job']} ({e['list']}, {e['pool']}, {e['stage']}): {e['error']}" for e in doc["errors"]]
    return "\n".join(out) + "\n"


def _age(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}h {s % 3600 // 60}m" if s >= 3600 else f"{s // 60}m {s % 60}s" if s >= 60 else f"{s}s"


def enqueue(cfg: BotConfig, target: str, list_name: str | None = None) -> tuple[Job, bool]:
    """A static job for the mbox TARGET (copied into the bot's home), on LIST_NAME (default: the one list
    configured); whether it is new (the same mbox enqueued again is the same job). A Message-ID is not taken yet."""
    path = Path(target)
    if not path.is_file():
        if "@" in target and not path.exists():
            raise UsageError(f"enqueue {target}: enqueueing by Message-ID is not wired to the feed yet",
                             "save the series as an mbox (b4 mbox MSGID) and enqueue that file")
        raise InputError(f"enqueue {target}: no such file", "give an mbox file of the series")
    name = _list_for(cfg, list_name)
    data = path.read_bytes()
    if not data.strip():
        raise InputError(f"enqueue {target}: the file is empty", "give an mbox file of the series")
    digest = hashlib.sha256(data).hexdigest()
    saved = cfg.home / "mbox" / f"{digest}.mbox"
    saved.parent.mkdir(parents=True, exist_ok=True)
    if not saved.exists():
        shutil.copyfile(path, saved)
    bot = Bot(cfg.settings())
    try:
        Mboxes(bot.jobs.db).put(data)
        payload = {"mbox": str(saved), "mbox_sha256": digest}
        job, new = bot.jobs.put(Spec(list=name, series=f"mbox-{digest[:16]}", stage="static", payload=payload))
        if new:
            bot.deliver(job)
    finally:
        bot.close()
    return job, new


def _list_for(cfg: BotConfig, name: str | None) -> str:
    known = sorted(cfg.lists or {})
    if name is not None and name in known:
        return name
    if name is None and len(known) == 1:
        return known[0]
    what = f"--list {name}: not a list of {cfg.path}" if name is not None else "which list? give --list NAME"
    hint = f"the lists configured: {', '.join(known)}" if known else f"add a [lists.NAME] table to {cfg.path}"
    raise UsageError(f"enqueue: {what}", hint)

