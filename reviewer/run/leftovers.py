"""What a run leaves on disk is named after its owner, so that the next run can remove it.

Every directory a run makes for itself (its temporary directory, each worktree, the trash a
worktree is renamed to) is called `reviewer-<kind>-<pid>-<start>-<tag>-<random>`: the owner's
process id, its start time (clock ticks since boot, field 22 of /proc/<pid>/stat: a reused pid
has another one) and a tag of the boot and the PID namespace (a pid and a start time mean
nothing across them: entries with another tag are left alone). git names a worktree's
administrative directory ($GIT_COMMON_DIR/worktrees/<id>) after the worktree's directory, so
the user's repository carries the same marker.

A directory is removed by renaming it to a trash name beside it (one rename, whatever its
size) and deleting the trash with `rm -rf` in a process of its own session, which outlives us
when we do not wait for it; the next run deletes any trash whose owner is gone.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

KINDS = ("tmp", "wt", "trash")  # the run's temporary directory, a worktree, a directory being deleted
NAME = re.compile(r"^reviewer-(?P<kind>tmp|wt|trash)-(?P<pid>\d+)-(?P<start>\d+)-(?P<tag>[0-9a-f]{8})-")
DELETERS: set[int] = set()  # background `rm -rf` processes: not children to stop on a signal

Deadline = Callable[[], float | None]  # time.monotonic() after which a deletion is left to the background; None: wait


@dataclass(frozen=True)
class Owner:
    pid: int
    start: int
    tag: str

    def __str__(self) -> str:
        return f"{self.pid}-{self.start}-{self.tag}"


@dataclass(frozen=True)
class Removed:
    what: str  # "temporary directory" | "worktree" | "trash"
    path: Path
    owner: Owner


def start_time(pid: int) -> int | None:
    """PID's start time in clock ticks since boot (/proc/PID/stat field 22); None if there is no such live process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name in (...) may hold spaces
    return None if fields[0] in ("Z", "X") else int(fields[19])


@functools.cache
def tag() -> str:
    """This boot and PID namespace, in 8 hex digits."""
    return hashlib.sha256(f"{_read('/proc/sys/kernel/random/boot_id')} {_inode('/proc/self/ns/pid')}".encode()).hexdigest()[:8]


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:  # hidden in some containers: the tag is then only as good as what is left
        return "?"


def _inode(path: str) -> str:
    try:
        return str(os.stat(path).st_ino)
    except OSError:
        return "?"


def me() -> Owner:
    start = start_time(os.getpid())
    assert start is not None
    return Owner(os.getpid(), start, tag())


def owner_of(name: str) -> tuple[str, Owner] | None:
    m = NAME.match(name)
    return (m["kind"], Owner(int(m["pid"]), int(m["start"]), m["tag"])) if m else None


def is_stale(owner: Owner) -> bool:
    """OWNER is of this boot and PID namespace, and no longer runs (a pid now used by another process counts as gone)."""
    return owner.tag == tag() and start_time(owner.pid) != owner.start and start_time(os.getpid()) is not None


def make(kind: str, where: Path | None = None) -> Path:
    """A new empty directory named after this process (in WHERE, else the temporary directory)."""
    assert kind in KINDS
    # Resolved: git records a worktree's real path in its administrative directory (drop_worktree() compares).
    return Path(tempfile.mkdtemp(prefix=f"reviewer-{kind}-{me()}-", dir=where)).resolve()


def drop(path: Path, deadline: Deadline = lambda: None) -> None:
    """Rename PATH to a trash name beside it and delete that; past DEADLINE the deletion goes on in the background."""
    with contextlib.suppress(OSError):
        os.rmdir(path)  # empty (a run that made no temporary file): no rm to start
        return
    trash = _to_trash(path)
    if trash is not None:
        _delete(trash, deadline)


def _to_trash(path: Path) -> Path | None:
    owned = owner_of(path.name)
    if owned is not None and owned[0] == "trash":
        return path if path.exists() else None
    for _ in range(3):
        trash = path.with_name(f"reviewer-trash-{me()}-{os.urandom(4).hex()}")
        try:
            os.rename(path, trash)
            return trash
        except FileNotFoundError:
            return None
        except FileExistsError:
            continue
        except OSError:  # not renamable (another file system, a busy mount point): delete it where it is
            return path
    return path


def _delete(path: Path, deadline: Deadline) -> None:
    # posix_spawn, not subprocess: this also runs from a signal handler, where subprocess's locks may be held.
    null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    try:
        pid = os.posix_spawnp("rm", ["rm", "-rf", "--one-file-system", "--", str(path)], os.environ, file_actions=null, setsid=True)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return
    DELETERS.add(pid)
    while True:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            DELETERS.discard(pid)
            break
        until = deadline()
        if until is not None and time.monotonic() >= until:
            return  # rm goes on without us; the next run removes what it may leave
        time.sleep(0.005)
    if path.exists():  # something rm could not delete (a directory a test made read-only): once more, writable
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
            for top, dirs, _ in os.walk(path):
                for d in dirs:
                    os.chmod(os.path.join(top, d), 0o700)
        shutil.rmtree(path, ignore_errors=True)


def admin_dir(wt: Path) -> Path | None:
    """The administrative directory a linked worktree's .git file points to."""
    with contextlib.suppress(OSError, ValueError):
        line = (wt / ".git").read_text().strip()
        if line.startswith("gitdir:"):
            return Path(line.removeprefix("gitdir:").strip())
    return None


def drop_worktree(wt: Path, common: Path, deadline: Deadline = lambda: None) -> None:
    """Remove worktree WT of the repository whose common git dir is COMMON without walking it file by
    file first, as `git worktree remove --force` does: rename it away, delete its administrative
    directory (what `git worktree prune` does for a worktree whose directory is gone), then the trash."""
    admin = admin_dir(wt) or common / "worktrees" / wt.name  # no .git file yet: killed inside `git worktree add`
    trash = _to_trash(wt)
    _drop_admin(admin, wt)
    if trash is not None:
        _delete(trash, deadline)


def _drop_admin(admin: Path, wt: Path | None) -> None:
    """ADMIN, if it is ours (named so) and, when WT is known, registered for WT; then git's empty worktrees/ too."""
    owned = owner_of(admin.name)
    if owned is None or owned[0] != "wt":
        return
    with contextlib.suppress(OSError):
        registered = (admin / "gitdir").read_text().strip()
        if wt is not None and os.path.realpath(registered) != os.path.realpath(wt / ".git"):
            return
    for _ in range(3):  # again if a process we could not stop wrote into it meanwhile
        shutil.rmtree(admin, ignore_errors=True)
        if not admin.exists():
            break
        time.sleep(0.01)
    with contextlib.suppress(OSError):
        admin.parent.rmdir()  # git removes worktrees/ when its last entry goes


def sweep_tmp(tmp: Path) -> list[Removed]:
    """Remove what runs that are gone left in TMP: their temporary directories, worktrees and trash,
    and the worktrees' registrations in their repositories."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in sorted(tmp.iterdir()):
            owned = owner_of(entry.name)
            if owned is None or not is_stale(owned[1]) or not entry.is_dir() or entry.is_symlink():
                continue
            registered = []
            for wt in _worktrees_in(entry):
                admin = admin_dir(wt)
                if admin is not None and admin.is_dir() and (a := owner_of(admin.name)) is not None and is_stale(a[1]):
                    _drop_admin(admin, None)
                    registered.append(Removed("worktree", admin, a[1]))
            drop(entry)
            removed += registered
            if not (owned[0] == "wt" and registered):  # a worktree is counted once
                removed.append(Removed({"tmp": "temporary directory", "wt": "worktree", "trash": "trash"}[owned[0]], entry, owned[1]))
    return removed


def _worktrees_in(entry: Path) -> Iterable[Path]:
    """ENTRY itself and the worktrees (or their trash) directly inside it."""
    yield entry
    with contextlib.suppress(OSError):
        yield from (p for p in entry.iterdir() if owner_of(p.name) is not None and (p / ".git").is_file())


def sweep_repo(common: Path) -> list[Removed]:
    """Remove the worktrees that runs which are gone registered in the repository whose common git dir is COMMON."""
    removed = []
    with contextlib.suppress(OSError):
        for admin in sorted((common / "worktrees").iterdir()):
            owned = owner_of(admin.name)
            if owned is None or owned[0] != "wt" or not is_stale(owned[1]):
                continue
            with contextlib.suppress(OSError):
                wt = Path((admin / "gitdir").read_text().strip()).parent
                if wt.name == admin.name and wt.is_dir():  # ours by name too: never a directory someone put there
                    drop(wt)
            _drop_admin(admin, None)
            removed.append(Removed("worktree", admin, owned[1]))
    return removed


_PLURAL = {"worktree": "worktrees", "temporary directory": "temporary directories", "trash": "trash directories"}


def describe(removed: list[Removed]) -> str:
    """One line for the user: what was removed, and whose it was."""
    parts = []
    for what, plural in _PLURAL.items():
        these = [r for r in removed if r.what == what]
        if these:
            repos = sorted({str(_repo(r.path)) for r in these if what == "worktree"})
            where = f" (registered in {', '.join(repos)})" if repos else ""
            parts.append(f"{len(these)} {plural if len(these) > 1 else what}{where}")
    pids = sorted({r.owner.pid for r in removed})
    whose = f"an interrupted run (pid {pids[0]})" if len(pids) == 1 else f"interrupted runs (pids {', '.join(map(str, pids))})"
    return f"review: removed what {whose} left behind: {', '.join(parts)}"


def _repo(admin: Path) -> Path:
    """The repository of administrative directory ADMIN (<repo>/.git/worktrees/<id>)."""
    common = admin.parent.parent
    return common.parent if common.name == ".git" else common
