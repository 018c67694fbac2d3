"""What the tool keeps under $XDG_CACHE_HOME/reviewer, cache by cache: where, how much, last used, and its bound (`review cache`).

Listing writes nothing and creates no directory; a file that vanishes while it is walked (a review
pruning beside us) is just not counted. The caches' owners (selftests/, kernel/, apply/) import store/,
so they cannot be imported here: the caller hands over what only they know (Layout). store/prune.py
keeps each cache to its bound.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer.store import dirs, threads
from reviewer.store.kept import Kept, tree_size

DAY = 86400.0
THREADS_MAX_AGE = 30 * DAY  # only --offline reads a thread older than reviewer.cacheMinutes
KERNEL_LOCK = "lock"  # kernel.srctree.locked()'s file in a kernel cache


@dataclass(frozen=True)
class Layout:
    """What the caches' owners know: selftests.kept.store(), kernel.images.KEEP_IMAGES, apply.worktree.SLOTS."""

    selftests: Kept
    keep_images: int
    slots: int


@dataclass(frozen=True)
class Bound:
    max_bytes: int | None = None
    max_age: float | None = None  # seconds unused
    keep: int | None = None  # the N last built or used, per tree


@dataclass(frozen=True)
class Item:
    name: str
    path: Path
    bytes: int
    count: int
    oldest: float | None  # last use (epoch seconds)
    newest: float | None


@dataclass(frozen=True)
class Cache:
    name: str
    path: Path
    unit: str  # what count counts
    bound: Bound
    items: tuple[Item, ...]
    note: str = ""

    @property
    def bytes(self) -> int:
        return sum(i.bytes for i in self.items)

    @property
    def count(self) -> int:
        return sum(i.count for i in self.items)

    @property
    def oldest(self) -> float | None:
        return min((i.oldest for i in self.items if i.oldest is not None), default=None)

    @property
    def newest(self) -> float | None:
        return max((i.newest for i in self.items if i.newest is not None), default=None)


def caches(layout: Layout) -> list[Cache]:
    """Every cache, in the order a review fills them, with its items (store/prune.py keeps each to its bound)."""
    from reviewer.store import results  # importlib.metadata: a review without --tree never loads it

    root, kept = dirs.cache_root(), layout.selftests
    return [
        Cache("threads", threads.directory(), "threads", Bound(max_age=THREADS_MAX_AGE), tuple(files(threads.directory(), ".mbox"))),
        Cache("results", results.directory(), "results", Bound(results.MAX_BYTES, results.MAX_AGE), tuple(_kinds(results.directory()))),
        Cache("selftests", kept.root, "builds", Bound(kept.max_bytes, kept.max_age), tuple(builds(kept))),
        Cache("worktrees", worktrees_root(), "worktrees", Bound(), tuple(worktree_sets(worktrees_root())),
              "kept with git config reviewer.reuseWorktrees; prune's --older-than and --max-size remove them"),
        Cache("kernels", _kernel_top(), "images", Bound(keep=layout.keep_images), tuple(kernel_cache(p) for p in kernel_caches())),
        Cache("guest-roots", _guest_roots(), "roots", Bound(), tuple(_dirs(_guest_roots())),
              "made by `review guest-root ARCH`; never pruned"),
        Cache("applied", root / "applied", "repositories", Bound(), tuple(_dirs(root / "applied")),
              "the objects of cached applies; never pruned: written without a lock"),
    ]


def worktrees_root() -> Path:
    return dirs.cache_root() / "worktrees"  # pipeline.py's root of worktree.cached()


def _kernel_top() -> Path:
    return Path(os.environ.get("REVIEWER_BOOT_CACHE") or dirs.cache_root() / "boot")  # as kernel.cache_for()


def kernel_caches() -> list[Path]:
    """Every tree's cache under boot/, and REVIEWER_BOOT_CACHE's (one directory, whatever the tree)."""
    found = [p for p in subdirs(dirs.cache_root() / "boot") if not p.name.startswith(".")]
    override = os.environ.get("REVIEWER_BOOT_CACHE")
    return [*found, Path(override)] if override and Path(override).is_dir() and Path(override) not in found else found


def _guest_roots() -> Path:
    return Path(os.environ.get("REVIEWER_GUEST_ROOTS") or dirs.cache_root() / "guest-roots")  # as kernel.guestroot.location()


def subdirs(top: Path) -> list[Path]:
    with contextlib.suppress(OSError):
        return sorted(Path(e.path) for e in os.scandir(top) if e.is_dir(follow_symlinks=False))
    return []


def _mtime(path: Path) -> float | None:
    with contextlib.suppress(OSError):
        return path.stat().st_mtime
    return None


def files(top: Path, suffix: str) -> Iterator[Item]:
    """One item per file of TOP named *SUFFIX, but the hidden ones (a writer's file before its rename)."""
    with contextlib.suppress(OSError):
        for e in sorted(os.scandir(top), key=lambda e: e.name):
            with contextlib.suppress(OSError):
                if e.name.endswith(suffix) and not e.name.startswith(".") and e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    yield Item(e.name, Path(e.path), st.st_size, 1, st.st_mtime, st.st_mtime)


def result_files(top: Path, kind: str = "*") -> list[Item]:
    """Every result of KIND (all kinds: "*"), named kind/file."""
    return [replace(i, name=f"{k.name}/{i.name}") for k in subdirs(top) if kind in ("*", k.name)
            for shard in subdirs(k) for i in files(shard, ".json")]


def _kinds(top: Path) -> Iterator[Item]:
    """One item per kind of result (apply, checkpatch, base-tests...): its entries' count, bytes and use."""
    for kind in subdirs(top):
        found = result_files(top, kind.name)
        used = [i.newest for i in found if i.newest is not None]
        yield Item(kind.name, kind, sum(i.bytes for i in found), len(found), min(used, default=None), max(used, default=None))


def builds(kept: Kept) -> list[Item]:
    with contextlib.suppress(OSError):  # the store removed while it is read
        return [Item(e.key, e.path, e.size, 1, e.used, e.used) for e in kept.entries()]
    return []


def worktree_sets(top: Path) -> Iterator[Item]:
    """One item per tree's kept worktrees: its slots, and its last use (a review opens, truncating, each slot lock it tries)."""
    for d in subdirs(top):
        if not d.name.startswith("."):  # a prune's trash
            used = max((i.newest for i in files(d, ".lock") if i.newest is not None), default=_mtime(d))
            yield Item(d.name, d, tree_size(d), sum(1 for s in subdirs(d) if s.name.isdigit()), used, used)


def kernel_cache(cache: Path) -> Item:
    """A tree's kernel cache: its images, and its last use (the lock a review opens, truncating; the checkout's index; an image)."""
    images = list(files(cache / "images", ""))
    used = max((u for u in (_mtime(cache / KERNEL_LOCK), _mtime(cache / "src.index"), *(i.newest for i in images)) if u is not None),
               default=None)
    return Item(cache.name, cache, tree_size(cache), len(images), used, used)


def _dirs(top: Path) -> Iterator[Item]:
    for d in subdirs(top):
        if not d.name.startswith("."):
            yield Item(d.name, d, tree_size(d), 1, _mtime(d), _mtime(d))
