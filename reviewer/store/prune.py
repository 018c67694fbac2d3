"""`review cache prune`: each cache (store/inventory.py) to its own bound, tightened by --older-than and --max-size.

Nothing in use is removed. A kept selftest build goes through Kept.prune, which takes the entry's
lock; a tree's kept worktrees go only when every slot lock is ours (renamed away first, so a review
that comes after finds no half-removed slot); a kernel cache is skipped, and said so, while a review
holds its lock (kernel.srctree.locked), and one used in the last day is kept whatever the bound: a
review boots the kernels it built after releasing that lock. Results and threads are replaced by
rename and read as best effort, so one removed under a reader is a miss. The guest roots and the
applied repositories are only listed (inventory.py says why).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from reviewer.store import inventory as inv
from reviewer.store import threads
from reviewer.store.kept import tree_size

KERNEL_GRACE = inv.DAY
# What a kernel cache holds (kernel/images.py, srctree.py, make.py, compile/steps.py, boot/runner.py): a cleared
# cache loses these and keeps its lock, and whatever else REVIEWER_BOOT_CACHE's directory holds.
_KERNEL_PARTS = re.compile(r"^(src|src\.index(\.lock)?|images|ccache|logs|(build|check)-.+)$")
T = TypeVar("T", int, float)


@dataclass(frozen=True)
class Pruned:
    cache: str
    removed: tuple[str, ...] = ()  # what went (with dry_run: would go), by name
    bytes: int = 0
    kept: tuple[str, ...] = ()  # what the bound chose but is in use, and why


@dataclass(frozen=True)
class Ask:
    older_than: float | None = None  # seconds unused
    max_bytes: int | None = None  # per cache
    dry_run: bool = False
    now: float = 0.0


def prune(layout: inv.Layout, *, older_than: float | None = None, max_bytes: int | None = None, dry_run: bool = False,
          now: float | None = None) -> list[Pruned]:
    """Each cache to its bound, tightened by OLDER_THAN (seconds unused) and MAX_BYTES (each cache's total); what went."""
    ask = Ask(older_than, max_bytes, dry_run, time.time() if now is None else now)
    return [_threads(ask), _results(ask), _builds(layout, ask), _worktrees(layout, ask), _kernels(layout, ask)]


def select(items: Iterable[inv.Item], age: float | None, limit: int | None, now: float) -> list[inv.Item]:
    """What a bound removes, chosen as results.prune and Kept.prune choose: the items unused for AGE, then the least
    recently used beyond LIMIT bytes."""
    out, total = [], 0
    for i in sorted(items, key=lambda i: i.newest or 0.0, reverse=True):
        if (age is not None and now - (i.newest or 0.0) > age) or (limit is not None and total + i.bytes > limit):
            out.append(i)
        else:
            total += i.bytes
    return out


def _tight(own: T, given: T | None) -> T:
    return own if given is None else min(own, given)


def _done(cache: str, gone: Iterable[inv.Item], kept: Iterable[str] = ()) -> Pruned:
    gone = list(gone)
    return Pruned(cache, tuple(i.name for i in gone), sum(i.bytes for i in gone), tuple(kept))


def _threads(ask: Ask) -> Pruned:
    due = select(inv.files(threads.directory(), ".mbox"), _tight(inv.THREADS_MAX_AGE, ask.older_than), ask.max_bytes, ask.now)
    if not ask.dry_run:
        for i in due:
            with contextlib.suppress(OSError):
                i.path.unlink()
    return _done("threads", (i for i in due if ask.dry_run or not i.path.exists()))


def _results(ask: Ask) -> Pruned:
    from reviewer.store import results  # importlib.metadata: see inventory.caches()

    age, limit = _tight(results.MAX_AGE, ask.older_than), _tight(results.MAX_BYTES, ask.max_bytes)
    due = select(inv.result_files(results.directory()), age, limit, ask.now)
    if not ask.dry_run:
        results.prune(age, limit, ask.now)
    return _done("results", (i for i in due if ask.dry_run or not i.path.exists()))


def _builds(layout: inv.Layout, ask: Ask) -> Pruned:
    kept = layout.selftests
    age, limit = _tight(kept.max_age, ask.older_than), _tight(kept.max_bytes, ask.max_bytes)
    due = select(inv.builds(kept), age, limit, ask.now)
    if ask.dry_run:
        busy = {i.name for i in due if not _free(kept.lock_file(i.name))}
        gone = [i for i in due if i.name not in busy]
    else:
        removed = kept.prune(max_bytes=limit, max_age=age, now=ask.now)
        gone = [inv.Item(e.path.name, e.path, e.size, 1, e.used, e.used) for e in removed]
        busy = {i.name for i in due if i.path.exists()}
    return _done("selftests", gone, (f"{n}: in use (a review holds its lock)" for n in sorted(busy)))


def _worktrees(layout: inv.Layout, ask: Ask) -> Pruned:
    """Only when asked (they have no bound of their own): a tree's worktrees unused for --older-than, or beyond --max-size."""
    top = inv.worktrees_root()
    if ask.older_than is None and ask.max_bytes is None:
        return Pruned("worktrees")
    gone, busy = [], []
    for i in select(inv.worktree_sets(top), ask.older_than, ask.max_bytes, ask.now):
        with contextlib.ExitStack() as locks:
            if not all(locks.enter_context(_hold(i.path / f"{n}.lock", create=not ask.dry_run)) for n in range(layout.slots)):
                busy.append(f"{i.path}: in use (a review holds one of its worktrees)")
                continue
            try:
                if not ask.dry_run:
                    os.rename(i.path, top / f".trash-{i.name}-{os.getpid()}")
            except OSError as exc:
                busy.append(f"{i.path}: {exc.strerror}")
                continue
        gone.append(i)
    for old in inv.subdirs(top) if not ask.dry_run else ():
        if old.name.startswith(".trash-"):  # ours, and what a killed prune left
            shutil.rmtree(old, ignore_errors=True)
    return _done("worktrees", gone, busy)


def _kernels(layout: inv.Layout, ask: Ask) -> Pruned:
    """Per tree: the images beyond keep-N or unused for --older-than; the whole cache when unused for --older-than or
    beyond --max-size (never within KERNEL_GRACE of its last use)."""
    age = None if ask.older_than is None else max(ask.older_than, KERNEL_GRACE)
    caches = [inv.kernel_cache(p) for p in inv.kernel_caches()]
    clear = {i.path for i in select(caches, age, ask.max_bytes, ask.now)}
    gone: list[inv.Item] = []
    busy: list[str] = []
    for c in caches:
        if not _kernel_due(c, layout.keep_images, age, ask.now, clear=c.path in clear):
            continue
        with _hold(c.path / inv.KERNEL_LOCK, create=not ask.dry_run) as mine:
            if not mine:
                busy.append(f"{c.path}: in use (a review holds its lock)")
                continue
            again = inv.kernel_cache(c.path)  # under the lock: what a review did meanwhile counts
            for i in _kernel_due(again, layout.keep_images, age, ask.now, clear=c.path in clear):
                if not ask.dry_run:
                    _remove(i.path)
                gone.append(i)
    return _done("kernels", gone, busy)


def _kernel_due(c: inv.Item, keep: int, age: float | None, now: float, *, clear: bool) -> list[inv.Item]:
    """What goes of the kernel cache C: all its parts when CLEAR (and not used within the grace), else its old images."""
    if clear and (c.newest is None or now - c.newest > KERNEL_GRACE):
        with contextlib.suppress(OSError):
            parts = sorted(Path(e.path) for e in os.scandir(c.path) if _KERNEL_PARTS.match(e.name))
            return [inv.Item(f"{c.name}/{p.name}", p, _size(p), 0, None, None) for p in parts]
        return []
    images = sorted(inv.files(c.path / "images", ""), key=lambda i: i.newest or 0.0, reverse=True)
    old = [i for n, i in enumerate(images) if n >= keep or (age is not None and now - (i.newest or 0.0) > age)]
    return [replace(i, name=f"{c.name}/images/{i.name}") for i in old]


def _size(path: Path) -> int:
    with contextlib.suppress(OSError):
        return tree_size(path) if path.is_dir() else path.stat().st_size
    return 0


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _free(lock: Path) -> bool:
    with _hold(lock, create=False) as mine:
        return mine


@contextlib.contextmanager
def _hold(lock: Path, *, create: bool) -> Iterator[bool]:
    """LOCK taken without waiting: True while it is ours (or, not CREATE, there is no such file: nobody holds it), False
    while another process holds it or it cannot be opened. Opened without truncating: its mtime stays the last use."""
    try:
        fd = os.open(lock, os.O_RDONLY | (os.O_CREAT if create else 0), 0o644)
    except OSError as exc:
        yield isinstance(exc, FileNotFoundError) and not create
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        mine = True
    except OSError:
        mine = False
    try:
        yield mine
    finally:
        os.close(fd)
