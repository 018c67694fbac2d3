"""Fetched threads, kept as mbox files under $XDG_CACHE_HOME/reviewer/threads/, keyed by Message-ID.

A fresh entry (younger than the freshness window, 10 minutes unless `git config
reviewer.cacheMinutes` says otherwise) saves a round trip to lore; `--no-cache` ignores it
and `--offline` uses it whatever its age.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import quote, unquote

from reviewer.store import dirs

FRESH_SECONDS = 600.0
_SUFFIX = ".mbox"


def root() -> Path:
    """$XDG_CACHE_HOME/reviewer (default ~/.cache/reviewer): threads/ and worktrees/ live here."""
    return dirs.cache_root()


def directory() -> Path:
    return root() / "threads"


def _path(msgid: str) -> Path:
    return directory() / (quote(msgid, safe="@+=-_.,") + _SUFFIX)


def read(msgid: str, max_age: float | None = FRESH_SECONDS) -> bytes | None:
    """The cached thread of MSGID, if there is one no older than MAX_AGE seconds (None: any age)."""
    path = _path(msgid)
    try:
        if max_age is not None and time.time() - path.stat().st_mtime > max_age:
            return None
        return path.read_bytes()
    except OSError:
        return None


def write(msgid: str, data: bytes) -> None:
    """Store atomically: a reader never sees half a thread."""
    path = _path(msgid)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def starting_with(partial: str) -> list[str]:
    """Cached Message-IDs that start with PARTIAL (for a truncated id with --offline)."""
    if not directory().is_dir():
        return []
    ids = (unquote(p.name[: -len(_SUFFIX)]) for p in directory().glob(f"*{_SUFFIX}") if not p.name.startswith("."))
    return sorted(i for i in ids if i.startswith(partial))
