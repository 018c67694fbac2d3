"""Results of slow, deterministic steps, content-addressed: $XDG_CACHE_HOME/reviewer/results/<kind>/<sha256>.json.

A result is stored under the sha256 of everything that can change it (its key parts: our
version and cache format, the scripts' and data files' contents, the options, the input), so
an entry is never stale: when an input changes the key changes and the old entry is simply
never asked for again. Old entries go by age and total size (`prune`, run now and then by
`put`). The cache is best effort: an unreadable or broken entry is a miss, a failed write is
ignored. `--no-cache` reads nothing from it (results are still stored); `git config
reviewer.resultCache false` turns it off entirely.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from reviewer.store import threads as cache

FORMAT = 1  # bump when what is stored, or how a key is made, changes
MAX_AGE = 30 * 24 * 3600.0  # seconds since an entry was last used
MAX_BYTES = 200 * 1024 * 1024
PRUNE_ONE_IN = 64  # `put` prunes about once per this many new entries


def version() -> str | None:
    """The installed package's version (the one lookup: this cache's keys, the reply mail's signature);
    None when it is not installed (run from a source tree)."""
    try:
        return metadata.version("reviewer")
    except metadata.PackageNotFoundError:
        return None


VERSION = version() or "unknown"


@dataclass(frozen=True)
class CacheUse:
    """Whether to read cached results and whether to store new ones."""

    read: bool = True
    write: bool = True

    @classmethod
    def of(cls, *, no_cache: bool, enabled: bool = True) -> CacheUse:
        """--no-cache recomputes (and stores); reviewer.resultCache=false neither reads nor writes."""
        return cls(read=enabled and not no_cache, write=enabled)


OFF = CacheUse(read=False, write=False)


def directory() -> Path:
    return cache.root() / "results"


def key(kind: str, parts: object) -> str:
    """The sha256 of KIND, our version and cache format, and PARTS (JSON: str, int, None, lists, dicts)."""
    text = json.dumps([FORMAT, VERSION, kind, parts], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _path(kind: str, digest: str) -> Path:
    return directory() / kind / digest[:2] / f"{digest}.json"


def get(kind: str, digest: str) -> Any | None:
    """The value stored under DIGEST, or None (absent, unreadable, or not what we wrote)."""
    path = _path(kind, digest)
    try:
        entry = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != digest or "value" not in entry:
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # last used: pruning goes by it
    return entry["value"]


def put(kind: str, digest: str, value: Any) -> None:
    """Store VALUE atomically (a reader sees the old entry, the new one or none, never half of one)."""
    path = _path(kind, digest)
    data = json.dumps({"key": digest, "value": value}, ensure_ascii=False).encode("utf-8", "surrogateescape")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return
    if int(digest[:8], 16) % PRUNE_ONE_IN == 0:
        prune()


def prune(max_age: float = MAX_AGE, max_bytes: int = MAX_BYTES, now: float | None = None) -> int:
    """Remove entries unused for MAX_AGE seconds, then the least recently used beyond MAX_BYTES; how many went."""
    now = time.time() if now is None else now
    entries = []
    for path in directory().glob("*/*/*.json") if directory().is_dir() else ():
        with contextlib.suppress(OSError):
            st = path.stat()
            entries.append((st.st_mtime, st.st_size, path))
    entries.sort(reverse=True)  # newest first
    kept = removed = 0
    for mtime, size, path in entries:
        if now - mtime > max_age or kept + size > max_bytes:
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
            continue
        kept += size
    return removed


def clear() -> None:
    shutil.rmtree(directory(), ignore_errors=True)


def file_id(path: Path) -> str | None:
    """The sha256 of PATH's content (a symlink: of its target's), or None when it is absent or unreadable."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def program_id(path: str | None) -> list[object] | None:
    """An installed program (perl, git, python3), by where it resolves to and that file's size and mtime."""
    if path is None:
        return None
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return [real]
    return [real, st.st_size, st.st_mtime_ns]


def through(kind: str, digest: str | None, policy: CacheUse, compute: Callable[[], Any | None]) -> tuple[Any | None, bool]:
    """(value, from the cache?): the stored value when POLICY reads and has it, else COMPUTE's
    (stored when POLICY writes; COMPUTE returns None for what must not be kept, such as a failure)."""
    if digest is not None and policy.read and (stored := get(kind, digest)) is not None:
        return stored, True
    value = compute()
    if digest is not None and policy.write and value is not None:
        put(kind, digest, value)
    return value, False


