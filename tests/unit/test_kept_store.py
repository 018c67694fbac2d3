"""Kept directories (store/kept.py) for real on a tmp dir: whole or nothing, one writer a key, pruned by age then size.

The other writers are real processes (python -c), held in the middle of their work by a pipe: a lock is
flock(2), which another thread of this process would not contend with as another process does.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from reviewer.store.kept import STAMP, Kept

ROOT = Path(__file__).resolve().parents[2]
KEY = "0123456789abcdef"
OTHER = "fedcba9876543210"
THIRD = "00112233445566778899aabbccddeeff"

# Holds KEY's lock until a line arrives on stdin.
HOLDER = """
import sys
from pathlib import Path
from reviewer.store.kept import Kept
kept = Kept(Path(sys.argv[1]), 1 << 30, 1e9)
with kept.locked(sys.argv[2]):
    print("held", flush=True)
    sys.stdin.readline()
"""
# Publishes KEY as the stage does (under its lock), and stops in the middle of the fill, some files written.
WRITER = """
import sys
from pathlib import Path
from reviewer.store.kept import Kept
def fill(into):
    (into / "files").mkdir()
    (into / "files" / "prog").write_bytes(b"x" * 4096)
    print("filling", flush=True)
    sys.stdin.readline()
    (into / "runlists.json").write_text("{}")
kept = Kept(Path(sys.argv[1]), 1 << 30, 1e9)
with kept.locked(sys.argv[2]):
    kept.publish(sys.argv[2], fill)
"""


def _kept(tmp: Path) -> Kept:
    return Kept(tmp / "kept", 1 << 30, 3600.0)


@contextmanager
def _child(code: str, *args: object) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _publish(kept: Kept, key: str, size: int, used: float | None = None) -> Path:
    """Entry KEY of SIZE bytes (and its stamp), last used at USED."""
    entry = kept.publish(key, lambda into: (into / "blob").write_bytes(b"\0" * size))
    if used is not None:
        os.utime(entry / STAMP, (used, used))
    return entry


def _tmps(kept: Kept) -> list[str]:
    return sorted(p.name for p in kept.root.iterdir() if p.name.startswith(".tmp-"))


def test_publish_then_lookup(tmp_path: Path) -> None:
    kept = _kept(tmp_path)
    assert kept.lookup(KEY) is None and kept.entries() == []

    def fill(into: Path) -> None:
        (into / "files" / "tools").mkdir(parents=True)
        (into / "files" / "tools" / "prog").write_bytes(b"\x7fELF" + b"\0" * 96)
        (into / "link").symlink_to("files/tools/prog")

    entry = kept.publish(KEY, fill)
    assert entry == kept.root / KEY and kept.lookup(KEY) == entry
    assert (entry / "files" / "tools" / "prog").read_bytes().startswith(b"\x7fELF") and os.readlink(entry / "link") == "files/tools/prog"
    assert (entry / STAMP).is_file() and _tmps(kept) == []
    (listed,) = kept.entries()
    assert (listed.key, listed.path) == (KEY, entry) and listed.size >= 100
    assert kept.lookup(OTHER) is None
    with pytest.raises(ValueError, match="not a key"):
        kept.lookup("../elsewhere")


def test_a_lookup_marks_the_entry_used(tmp_path: Path) -> None:
    kept = _kept(tmp_path)
    entry = _publish(kept, KEY, 10, used=time.time() - 1000)
    assert kept.lookup(KEY) == entry
    assert time.time() - (entry / STAMP).stat().st_mtime < 60


def test_a_fill_that_raises_publishes_nothing(tmp_path: Path) -> None:
    kept = _kept(tmp_path)

    def fill(into: Path) -> None:
        (into / "files").mkdir()
        (into / "files" / "half").write_text("half a build")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        kept.publish(KEY, fill)
    assert kept.lookup(KEY) is None and kept.entries() == []
    assert [p.name for p in kept.root.iterdir()] in ([], [".locks"])  # neither the entry nor the private directory


def test_the_first_of_two_publishers_wins(tmp_path: Path) -> None:
    kept = _kept(tmp_path)
    first = kept.publish(KEY, lambda into: (into / "who").write_text("first"))
    assert kept.publish(KEY, lambda into: (into / "who").write_text("second")) == first
    assert (first / "who").read_text() == "first" and _tmps(kept) == []


def test_a_writer_killed_in_the_middle_leaves_nothing_to_read_and_the_next_prune_removes_it(tmp_path: Path) -> None:
    kept = _kept(tmp_path)
    with _child(WRITER, kept.root, KEY) as writer:
        assert writer.stdout is not None and writer.stdout.readline() == "filling\n"
        (tmp,) = _tmps(kept)
        assert tmp.startswith(f".tmp-{KEY}-{writer.pid}-") and (kept.root / tmp / "files" / "prog").is_file()
        assert kept.lookup(KEY) is None
        assert kept.prune() == [] and _tmps(kept) == [tmp]  # its writer is alive, holding the key's lock
        os.kill(writer.pid, signal.SIGKILL)
        assert writer.wait(timeout=10) == -signal.SIGKILL
    assert kept.lookup(KEY) is None and kept.entries() == [] and not (kept.root / KEY).exists()
    (gone,) = kept.prune()
    assert (gone.key, gone.path.name) == (KEY, tmp)
    assert _tmps(kept) == [] and kept.lookup(KEY) is None


def _taker(kept: Kept, key: str, when: list[float]) -> threading.Event:
    """A thread of ours that takes KEY's lock (then notes the time and lets it go): set once it had it."""
    got = threading.Event()

    def take() -> None:
        with kept.locked(key):
            when.append(time.monotonic())
        got.set()

    threading.Thread(target=take, daemon=True).start()
    return got


def test_a_held_lock_makes_a_second_locker_wait(tmp_path: Path) -> None:
    kept = _kept(tmp_path)
    when: list[float] = []
    with _child(HOLDER, kept.root, KEY) as holder:
        assert holder.stdin is not None and holder.stdout is not None and holder.stdout.readline() == "held\n"
        got = _taker(kept, KEY, when)
        assert not got.wait(0.5)  # blocked while the other process holds it
        assert _taker(kept, OTHER, []).wait(10)  # another key's lock is free
        released = time.monotonic()
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=10) == 0
        assert got.wait(10)
    assert when[0] >= released


def test_a_lock_dies_with_its_holder(tmp_path: Path) -> None:
    kept = _kept(tmp_path)
    with _child(HOLDER, kept.root, KEY) as holder:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
    assert _taker(kept, KEY, []).wait(10)


def test_prune_never_removes_an_entry_whose_lock_is_held(tmp_path: Path) -> None:
    kept = _kept(tmp_path)
    now = time.time()
    _publish(kept, KEY, 1000, used=now - 7200)
    (kept.root / OTHER).mkdir()  # no stamp: never read, removed when nobody holds its lock
    (kept.root / OTHER / "half").write_text("x")
    with _child(HOLDER, kept.root, KEY) as one, _child(HOLDER, kept.root, OTHER) as two:
        assert one.stdout is not None and one.stdout.readline() == "held\n"
        assert two.stdout is not None and two.stdout.readline() == "held\n"
        assert kept.prune(max_age=60, now=now) == [] and kept.prune(max_bytes=0, now=now) == []
        assert (kept.root / KEY / STAMP).is_file() and (kept.root / OTHER / "half").is_file()
    assert sorted(e.key for e in kept.prune(max_age=60, now=now)) == [KEY, OTHER]
    assert sorted(p.name for p in kept.root.iterdir()) == [".locks"]


def test_an_entry_without_its_stamp_is_never_read(tmp_path: Path) -> None:
    kept = _kept(tmp_path)
    entry = _publish(kept, KEY, 10)
    (entry / STAMP).unlink()  # a rename that a crash of the file system kept, its stamp's write lost
    assert kept.lookup(KEY) is None and kept.entries() == []
    (gone,) = kept.prune()
    assert gone.key == KEY and not entry.exists()


def test_prune_by_age_removes_the_unused_and_keeps_keep(tmp_path: Path) -> None:
    kept = _kept(tmp_path)
    now = time.time()
    for key, ago in ((KEY, 300), (OTHER, 200), (THIRD, 100)):
        _publish(kept, key, 1000, used=now - ago)
    assert kept.prune(now=now) == []  # within the store's max_age (an hour)
    assert [e.key for e in kept.prune(max_age=250, now=now)] == [KEY]
    assert [e.key for e in kept.prune(max_age=50, keep=OTHER, now=now)] == [THIRD]
    assert [e.key for e in kept.entries()] == [OTHER]
    assert [e.key for e in kept.prune(now=now + 3600)] == [OTHER]


def test_prune_by_size_removes_the_least_recently_used_first(tmp_path: Path) -> None:
    kept = _kept(tmp_path)
    now = time.time()
    for key, ago in ((KEY, 300), (OTHER, 200), (THIRD, 100)):
        _publish(kept, key, 1000, used=now - ago)
    assert [e.key for e in kept.entries()] == [THIRD, OTHER, KEY]  # the most recently used first
    assert kept.lookup(KEY) is not None  # now the most recently used
    assert [e.key for e in kept.prune(max_bytes=2100, now=now)] == [OTHER]
    assert sorted(e.key for e in kept.entries()) == sorted([KEY, THIRD])
    assert [e.key for e in kept.prune(max_bytes=500, keep=THIRD, now=now)] == [KEY]  # KEEP stays, even alone beyond the bound
    assert [e.key for e in kept.entries()] == [THIRD]


def test_publish_prunes_the_others_beyond_the_bound(tmp_path: Path) -> None:
    kept = Kept(tmp_path / "kept", 2500, 3600.0)
    now = time.time()
    _publish(kept, KEY, 1000, used=now - 200)
    _publish(kept, OTHER, 1000, used=now - 100)
    _publish(kept, THIRD, 1000)
    assert sorted(e.key for e in kept.entries()) == sorted([OTHER, THIRD])
