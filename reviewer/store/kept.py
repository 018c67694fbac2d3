"""Kept directories: products of a slow step (a selftest build), one directory per key, shared by reviews and workers.

    kept = Kept(root, max_bytes, max_age)
    with kept.locked(key):            # one writer per key: a second review of the same base waits, then finds it
        entry = kept.lookup(key)      # a published entry, or None
        if entry is None:
            entry = kept.publish(key, fill)   # FILL writes a private directory; it appears whole or not at all

An entry is published by rename(2) of a directory written beside it, so a reader sees it whole or
not at all: a build killed with SIGKILL leaves at most a `.tmp-*` directory that no lookup returns and
the next prune() removes (its writer is dead: its lock is free). Every entry carries a `.complete`
stamp written last, so a copy whose rename a crash of the file system undid is still never read.
Entries go by age and then by total size, the least recently used first (a lookup touches its stamp).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

STAMP = ".complete"
_KEY = re.compile(r"^[0-9a-f]{16,64}$")


@dataclass(frozen=True)
class Entry:
    key: str
    path: Path
    size: int  # bytes, as du counts the files (symlinks as their own size)
    used: float  # the last lookup or publish (epoch seconds)


@dataclass(frozen=True)
class Kept:
    root: Path
    max_bytes: int
    max_age: float  # seconds since last used

    def path(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"not a key: {key!r}")
        return self.root / key

    def lookup(self, key: str) -> Path | None:
        """The published entry KEY (marked used now), or None."""
        entry = self.path(key)
        stamp = entry / STAMP
        try:
            os.utime(stamp)
        except OSError:
            return None
        return entry

    def publish(self, key: str, fill: Callable[[Path], None], *, replace: bool = False) -> Path:
        """Entry KEY made by FILL(directory) in a private directory, then renamed into place; an entry another
        writer published first wins (the caller's lock makes that rare), unless REPLACE (a build made again on
        purpose, --no-cache): then the old entry is renamed aside first and removed. FILL's exception publishes
        nothing and leaves the old entry."""
        final = self.path(key)
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self._private(key)
        tmp.mkdir()
        old: Path | None = None
        try:
            fill(tmp)
            (tmp / STAMP).write_text(f"{time.time():.0f}\n")
            if replace and final.exists():
                old = self._private(key)
                os.rename(final, old)  # a reader now finds no entry, never half of one
            try:
                os.rename(tmp, final)
            except OSError:  # published meanwhile (ENOTEMPTY/EEXIST): keep the first
                if self.lookup(key) is None:
                    raise
        finally:
            for leftover in (tmp, old):
                if leftover is not None and leftover.exists():
                    shutil.rmtree(leftover, ignore_errors=True)
        self.prune(keep=key)
        return final

    def _private(self, key: str) -> Path:
        """A name beside the entries that no lookup returns and prune() removes once its writer is gone."""
        return self.root / f".tmp-{key}-{os.getpid()}-{time.monotonic_ns()}"

    def locked(self, key: str) -> contextlib.AbstractContextManager[None]:
        """Hold KEY's lock (flock: released when the process dies, even by SIGKILL)."""
        return locked(self.root / ".locks", self.path(key).name)

    def lock_file(self, key: str) -> Path:
        """The file whose flock is KEY's lock (locked() holds it; a reader may test it without waiting)."""
        return lock_file(self.root / ".locks", self.path(key).name)

    def entries(self) -> list[Entry]:
        """The published entries, the most recently used first."""
        out = []
        for p in self.root.iterdir() if self.root.is_dir() else ():
            if _KEY.match(p.name):
                with contextlib.suppress(OSError):
                    out.append(Entry(p.name, p, tree_size(p), (p / STAMP).stat().st_mtime))
        return sorted(out, key=lambda e: e.used, reverse=True)

    def prune(self, *, keep: str = "", max_bytes: int | None = None, max_age: float | None = None, now: float | None = None) -> list[Entry]:
        """Remove entries unused for MAX_AGE, then the least recently used beyond MAX_BYTES (never KEEP, just made), the
        writers' leftovers whose lock is free, and directories without a stamp; the entries removed."""
        now = time.time() if now is None else now
        limit = self.max_bytes if max_bytes is None else max_bytes
        age = self.max_age if max_age is None else max_age
        gone: list[Entry] = []
        total = 0
        for e in self.entries():
            if e.key != keep and (now - e.used > age or total + e.size > limit):
                if self._remove(e.key, e.path):
                    gone.append(e)
                continue
            total += e.size
        for p in self.root.iterdir() if self.root.is_dir() else ():
            stale = p.name.startswith(".tmp-") or (_KEY.match(p.name) and not (p / STAMP).exists())
            if stale and p.is_dir():
                key = p.name.removeprefix(".tmp-").split("-")[0]
                if _KEY.match(key) and self._remove(key, p):
                    gone.append(Entry(key, p, 0, 0.0))
        return gone

    def _remove(self, key: str, path: Path) -> bool:
        """Remove PATH if nobody holds KEY's lock (a writer, or a review reading the entry under it)."""
        lock = self.lock_file(key)
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "w") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            shutil.rmtree(path, ignore_errors=True)
            return not path.exists()


@contextlib.contextmanager
def locked(locks: Path, key: str) -> Iterator[None]:
    """Hold the lock of KEY (a hex digest) in the directory LOCKS: one writer per key, across processes
    (flock: released when its holder dies, even by SIGKILL)."""
    lock = lock_file(locks, key)
    locks.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def lock_file(locks: Path, key: str) -> Path:
    """The lock file of KEY (a hex digest) in the directory LOCKS."""
    if not _KEY.match(key):
        raise ValueError(f"not a key: {key!r}")
    return locks / f"{key}.lock"


def tree_size(path: Path) -> int:
    """The bytes of the files below PATH (symlinks not followed)."""
    total = 0
    for top, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(top, name)).st_size
    return total
