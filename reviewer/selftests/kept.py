"""Selftest builds kept between reviews (issue 34): a tree's built selftests, once per tree content.

After the chosen directories built on a tree, what the build wrote (the untracked files under tools/
and usr/include/: programs, objects, the installed uapi headers) and the directories' run lists are
kept as an entry of $XDG_CACHE_HOME/reviewer/selftests/<key> (store/kept.py), keyed by what the
build read: the commit's tree id, the directories, make's variables, the test environment and the
toolchain (the compilers', make's and libc's identity) and our version. Then:

- a tree with an entry (the base of a second series; a series reviewed again) gets its files back and
  runs no make at all;
- the patched tree of a series that leaves the build's inputs alone gets the base's files back, then
  the files the series changed are touched and make rebuilds what lists them (a program built from
  a changed .S file); a series touching tools/, usr/, scripts/, an include/ directory, a header, a
  Makefile, Kbuild or .mk file, or a file whose name a chosen directory's sources mention, is built
  afresh: make does not know which headers a program read.

Writers of one key take its lock (a second review of the same base waits, then restores); an entry
is published whole (write, then rename), so a build killed by SIGKILL leaves nothing a later review trusts.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from reviewer.errors import CommandError
from reviewer.kernel.srctree import SELFTESTS, commit_of
from reviewer.run.sandbox import read_untrusted
from reviewer.selftests.run import RunList
from reviewer.store import dirs, results
from reviewer.store.kept import Kept
from reviewer.tree.git import git

FORMAT = 2  # 2: the files keep the build's mtimes
MAX_BYTES = 4 << 30  # a vDSO build with its headers is ~8 MB
MAX_AGE = 30 * 24 * 3600.0
KEPT = ("tools", "usr/include")  # where a selftest build writes
_FILES = "files"
_LISTS = "runlists.json"
# What a selftest build may read without make knowing: then the base's build is not a start for the patched one.
# A syscall table (.tbl) is one: `make headers` writes the uapi unistd headers from it.
_UNSEEN = re.compile(r"^(tools|usr|scripts)/|(^|/)include/|\.(h|tbl)$|(^|/)(Makefile[^/]*|Kbuild[^/]*|[^/]*\.mk)$")


def store() -> Kept:
    """The kept selftest builds: $XDG_CACHE_HOME/reviewer/selftests (keyed by content: one store for every tree)."""
    return Kept(dirs.cache_root() / "selftests", MAX_BYTES, MAX_AGE)


def tree_of(wt: Path) -> str:
    """The tree id of what worktree WT holds (its modified tracked files included)."""
    return git(wt, "rev-parse", f"{commit_of(wt)}^{{tree}}").strip()


def key(tree: str, dirs: Sequence[str], variables: Sequence[str], env: dict[str, str]) -> str:
    """The key of a build of DIRS in a tree of id TREE with make's VARIABLES in the sandbox's extra ENV."""
    cross = [v.split("=", 1)[1] for v in variables if v.startswith("CROSS_COMPILE=")]
    tools = {t: results.program_id(shutil.which(t)) for t in ("make", "cc", "gcc", "clang", "ld", *(f"{c}gcc" for c in cross))}
    libc = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else ""
    parts = [FORMAT, results.VERSION, tree, sorted(dirs), list(variables), sorted(env.items()), tools, libc]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def reusable(wt: Path, touched: Iterable[str], dirs: Sequence[str]) -> bool:
    """May the base's build be the start of the patched tree's (WT) build for a series touching TOUCHED?"""
    paths = list(touched)
    if any(_UNSEEN.search(p) for p in paths):
        return False
    names = {p.rsplit("/", 1)[-1] for p in paths}
    mentioned = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in names) + r")(?![\w.-])") if names else None
    for d in dirs:
        for top, _sub, files in os.walk(wt / SELFTESTS / d):
            for name in files:
                path = Path(top, name)
                with contextlib.suppress(OSError):  # the series' files: no symlink followed, no FIFO waited on
                    if mentioned is not None and mentioned.search(read_untrusted(path, 1 << 20).decode(errors="replace")):
                        return False
    return True


def restore(entry: Path, wt: Path, *, touched: Iterable[str] = ()) -> float:
    """The files of ENTRY into WT, newer than any file the checkout wrote and in the order the build wrote them (a
    program stays newer than its objects, however slow the copy); then the TOUCHED files newer still, so that make
    rebuilds what lists them. When the entry was published."""
    files = entry / _FILES
    copied: list[tuple[int, Path]] = []  # (the build's mtime, the restored file)
    for top, _dirs, names in os.walk(files):
        rel = Path(top).relative_to(files)
        (wt / rel).mkdir(parents=True, exist_ok=True)
        for name in names:
            src, dst = Path(top, name), wt / rel / name
            with contextlib.suppress(FileNotFoundError):
                dst.unlink()
            if src.is_symlink():
                os.symlink(os.readlink(src), dst)
            else:
                shutil.copyfile(src, dst)
                st = src.stat()
                os.chmod(dst, stat.S_IMODE(st.st_mode))
                copied.append((st.st_mtime_ns, dst))
    # The build's order kept, each later time a microsecond after the one before, all after now (make compares
    # nanoseconds; a second ahead would be "clock skew").
    now = time.time_ns()
    rank = {t: i for i, t in enumerate(sorted({t for t, _ in copied}))}
    for t, dst in copied:
        os.utime(dst, ns=(now + rank[t] * 1000, now + rank[t] * 1000))
    later = now + len(rank) * 1000 + 50_000_000
    for p in touched:
        with contextlib.suppress(OSError):
            if (wt / p).is_file() and not (wt / p).is_symlink():
                os.utime(wt / p, ns=(later, later))
    return published(entry)


def published(entry: Path) -> float:
    """When ENTRY was published."""
    return (entry / ".complete").stat().st_mtime


def clean(wt: Path) -> None:
    """Remove what a restore that failed half-way wrote (every untracked file under KEPT): the build starts afresh."""
    git(wt, "clean", "-ffdxq", "--", *KEPT, check=False)


def lists_of(entry: Path) -> dict[str, RunList] | None:
    try:
        doc = json.loads((entry / _LISTS).read_text())
        return {d: RunList(tuple(v["tests"]), tuple((p, var) for p, var in v["others"])) for d, v in doc.items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save(into: Path, wt: Path, lists: dict[str, RunList]) -> None:
    """WT's build (the untracked files under KEPT) and its run LISTS into the directory INTO (a Kept.publish fill)."""
    out = git(wt, "ls-files", "-z", "--others", "--", *KEPT).split("\0")
    for rel in filter(None, out):
        src, dst = wt / rel, into / _FILES / rel
        st = os.lstat(src)
        dst.parent.mkdir(parents=True, exist_ok=True)
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(src), dst)
        elif stat.S_ISREG(st.st_mode):
            shutil.copyfile(src, dst, follow_symlinks=False)
            os.chmod(dst, stat.S_IMODE(st.st_mode))
            os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))  # the build's order, which restore() keeps
    (into / _LISTS).write_text(json.dumps({d: {"tests": list(rl.tests), "others": [list(o) for o in rl.others]}
                                           for d, rl in lists.items()}))


@contextlib.contextmanager
def claimed(kept: Kept | None, k: str | None) -> Iterator[None]:
    """KEY's lock while a tree of that key is built and published (nothing without a store)."""
    if kept is None or k is None:
        yield
        return
    with kept.locked(k):
        yield


def publish(kept: Kept, k: str, wt: Path, lists: dict[str, RunList], *, replace: bool = False) -> None:
    """Keep WT's build (best effort: a full disk or a vanished file only loses the saving); REPLACE: in place of
    a kept one (a build made again on purpose)."""
    if any(rl.error for rl in lists.values()):
        return
    with contextlib.suppress(OSError, CommandError):
        kept.publish(k, lambda into: save(into, wt, lists), replace=replace)
