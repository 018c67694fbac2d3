"""`review cache` and `review cache prune`, through the real CLI, on real entries in the test's own $XDG_CACHE_HOME
(tests/conftest.py): each cache filled through its owner's API (results.put, Kept.publish, kernel.cache_for, threads.write),
or, for the kernel images and worktree slots, as the plain files that are that cache's format. What is in use is held
by another process, with the owner's own lock."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reviewer.cli.cache import human, parse_size
from reviewer.errors import ExitStatus
from reviewer.kernel import cache_for, images
from reviewer.selftests import kept
from reviewer.store import dirs, results, threads
from tests.helpers import review

DAY = 86400.0
KEYS = [f"{n:x}" * 16 for n in range(1, 4)]  # Kept keys: 16 hex digits


def _age(path: Path, days: float) -> None:
    t = time.time() - days * DAY
    os.utime(path, (t, t))


def _build(key: str, size: int, days: float) -> Path:
    """A kept selftest build of SIZE bytes (and its stamp), last used DAYS ago."""
    entry = kept.store().publish(key, lambda into: (into / "prog").write_bytes(b"x" * size))
    _age(entry / ".complete", days)
    return entry


def _result(n: int, days: float, kind: str = "apply") -> Path:
    digest = results.key(kind, {"n": n})
    results.put(kind, digest, {"n": n, "pad": "y" * 100})
    path = results.directory() / kind / digest[:2] / f"{digest}.json"
    _age(path, days)
    return path


def _thread(msgid: str, days: float) -> Path:
    threads.write(msgid, b"From x\n\n" + b"z" * 992)
    path = next(threads.directory().glob(f"{msgid.split('@')[0]}*"))
    _age(path, days)
    return path


def _kernel(tree: Path, n_images: int, days: float = 0.0) -> Path:
    """TREE's kernel cache (where kernel.cache_for puts it) with a checkout and N_IMAGES images of 1 KiB, the newest DAYS
    old, each older one a minute older."""
    cache = cache_for(tree)
    (cache / "src").mkdir(parents=True)
    (cache / "src" / "Makefile").write_bytes(b"m" * 4096)
    (cache / "images").mkdir()
    (cache / "lock").touch()
    _age(cache / "lock", days)
    for n in range(n_images):
        image = cache / "images" / f"{n:012x}-vm-x86_64-k.bzImage"
        image.write_bytes(b"k" * 1024)
        _age(image, days + n / 1440)
    return cache


def _slots(name: str, days: float) -> Path:
    """A tree's kept worktrees (apply/worktree.py cached()): slot 0 checked out, its lock, the shadow repository."""
    top = dirs.cache_root() / "worktrees" / name
    (top / "0").mkdir(parents=True)
    (top / "0" / "file.c").write_bytes(b"w" * 2048)
    (top / "shadow.git").mkdir()
    (top / "0.lock").touch()
    _age(top / "0.lock", days)
    return top


@contextlib.contextmanager
def held(code: str, *args: str) -> Iterator[None]:
    """A lock taken by CODE, as a review takes it, held by another process until the block ends."""
    script = f"import sys\nfrom pathlib import Path\n{code}\nprint('held', flush=True)\nsys.stdin.read()\n"
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        assert proc.stdout.readline() == "held\n"
        yield
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def _json(tmp_path: Path, *args: str) -> Any:
    done = review("cache", *args, "--format", "json", tmp=tmp_path / "tmp")
    assert done.rc == 0 and done.stderr == "", done.stderr
    return done.json()


def _by_name(doc: Any) -> dict[str, Any]:
    return {c["name"]: c for c in doc["caches"]}


def test_the_listing_counts_each_cache_and_creates_nothing(tmp_path: Path) -> None:
    empty = _json(tmp_path)
    assert [c["name"] for c in empty["caches"]] == ["threads", "results", "selftests", "worktrees", "kernels", "guest-roots", "applied"]
    assert empty["bytes"] == 0 and not dirs.cache_root().exists()  # read-only: not even the root was made
    _thread("a@example.org", 1)
    _thread("b@example.org", 2)
    for n in range(3):
        _result(n, 1)
    _result(9, 1, kind="base-tests")
    entry = _build(KEYS[0], 100_000, 1)
    _kernel(tmp_path / "linux", 3)
    (dirs.cache_root() / "guest-roots" / "ppc64el" / "bin").mkdir(parents=True)
    (dirs.cache_root() / "guest-roots" / "ppc64el" / "bin" / "sh").write_bytes(b"s" * 5000)
    caches = _by_name(_json(tmp_path))
    assert (caches["threads"]["count"], caches["threads"]["bytes"]) == (2, 2000)
    assert caches["threads"]["bound"] == {"max_bytes": None, "max_age_days": 30, "keep": None}
    assert caches["results"]["count"] == 4
    assert {e["name"]: e["count"] for e in caches["results"]["entries"]} == {"apply": 3, "base-tests": 1}
    assert caches["results"]["bound"]["max_bytes"] == results.MAX_BYTES
    stamp = (entry / ".complete").stat().st_size
    assert (caches["selftests"]["count"], caches["selftests"]["bytes"]) == (1, 100_000 + stamp)
    assert caches["selftests"]["entries"][0]["name"] == KEYS[0] and caches["selftests"]["bound"]["max_bytes"] == kept.MAX_BYTES
    assert (caches["kernels"]["count"], caches["kernels"]["bytes"]) == (3, 3 * 1024 + 4096)
    assert caches["kernels"]["bound"]["keep"] == images.KEEP_IMAGES
    assert (caches["guest-roots"]["count"], caches["guest-roots"]["bytes"]) == (1, 5000)
    assert caches["threads"]["oldest_use"] < caches["threads"]["newest_use"]


def test_the_text_listing_says_size_count_use_and_bound(tmp_path: Path) -> None:
    _build(KEYS[0], 3 << 20, 0)
    done = review("cache", tmp=tmp_path / "tmp")
    assert done.rc == 0, done.stderr
    row = next(ln for ln in done.stdout.splitlines() if ln.startswith("selftests"))
    assert "3.0 MiB" in row and "1 build " in row and "last used 20" in row and str(kept.store().root) in row
    assert "bound: at most 4.0 GiB, unused for 30 days" in done.stdout
    assert done.stdout.startswith(f"{dirs.cache_root()}: 3.0 MiB in 7 caches")


def test_prune_keeps_each_cache_to_its_bound_and_tightens_it_by_age(tmp_path: Path) -> None:
    old_thread, new_thread = _thread("old@example.org", 40), _thread("new@example.org", 1)
    week_result, new_result = _result(1, 10), _result(2, 0)
    week_build, new_build = _build(KEYS[1], 1000, 10), _build(KEYS[2], 1000, 0)
    month_build = _build(KEYS[0], 1000, 40)  # last: a publish prunes the store to its bound
    first = _json(tmp_path, "prune")
    assert _by_name(first)["threads"]["removed"] == [old_thread.name] and _by_name(first)["selftests"]["removed"] == [KEYS[0]]
    assert not old_thread.exists() and not month_build.exists() and week_result.exists() and week_build.exists()
    second = _by_name(_json(tmp_path, "prune", "--older-than", "7"))
    assert second["results"]["count"] == 1 and second["selftests"]["removed"] == [KEYS[1]]
    assert not week_result.exists() and not week_build.exists()
    assert new_thread.exists() and new_result.exists() and new_build.exists()


def test_prune_by_size_removes_the_least_recently_used_first(tmp_path: Path) -> None:
    older, newer = _build(KEYS[0], 600 << 10, 2), _build(KEYS[1], 600 << 10, 1)
    doc = _json(tmp_path, "prune", "--max-size", "1M")
    assert _by_name(doc)["selftests"]["removed"] == [KEYS[0]] and _by_name(doc)["selftests"]["bytes"] > 600 << 10
    assert not older.exists() and newer.exists()


def test_a_build_a_review_holds_is_kept_and_said(tmp_path: Path) -> None:
    entry = _build(KEYS[0], 1000, 40)  # beyond the 30 days of its bound
    with held("from reviewer.selftests import kept\nlock = kept.store().locked(sys.argv[1])\nlock.__enter__()", KEYS[0]):
        doc = _by_name(_json(tmp_path, "prune"))
    assert entry.exists() and doc["selftests"]["removed"] == []
    assert doc["selftests"]["kept"] == [f"{KEYS[0]}: in use (a review holds its lock)"]
    assert _by_name(_json(tmp_path, "prune"))["selftests"]["removed"] == [KEYS[0]] and not entry.exists()


def test_dry_run_says_what_would_go_and_removes_nothing(tmp_path: Path) -> None:
    thread, result, build = _thread("x@example.org", 40), _result(1, 40), _build(KEYS[0], 1000, 40)
    dry = _json(tmp_path, "prune", "--dry-run")
    assert dry["dry_run"] and dry["count"] == 3
    assert dry["bytes"] == 1000 + result.stat().st_size + 1000 + (build / ".complete").stat().st_size
    assert thread.exists() and result.exists() and build.exists()
    text = review("cache", "prune", "--dry-run", tmp=tmp_path / "tmp")
    assert "selftests  would remove 1 (" in text.stdout and build.exists()
    real = _json(tmp_path, "prune")
    assert [c["removed"] for c in real["caches"]] == [c["removed"] for c in dry["caches"]] and real["bytes"] == dry["bytes"]
    assert not thread.exists() and not result.exists() and not build.exists()


def test_kernel_images_are_kept_to_n_per_tree_and_a_locked_cache_is_skipped(tmp_path: Path) -> None:
    free = _kernel(tmp_path / "a", images.KEEP_IMAGES + 2)
    busy = _kernel(tmp_path / "b", images.KEEP_IMAGES + 2)
    with held("from reviewer.kernel import srctree\nlock = srctree.locked(Path(sys.argv[1]))\nlock.__enter__()", str(busy)):
        doc = _by_name(_json(tmp_path, "prune"))["kernels"]
    assert sorted(doc["removed"]) == [f"{free.name}/images/{n:012x}-vm-x86_64-k.bzImage" for n in range(24, 26)]
    assert len(list((free / "images").iterdir())) == images.KEEP_IMAGES
    assert len(list((busy / "images").iterdir())) == images.KEEP_IMAGES + 2
    assert doc["kept"] == [f"{busy}: in use (a review holds its lock)"]


def test_a_kernel_cache_unused_for_long_is_cleared_and_a_recent_one_is_not(tmp_path: Path) -> None:
    old, recent = _kernel(tmp_path / "a", 2, days=3), _kernel(tmp_path / "b", 2, days=0.1)
    doc = _by_name(_json(tmp_path, "prune", "--older-than", "0"))["kernels"]
    assert sorted(doc["removed"]) == [f"{old.name}/images", f"{old.name}/src"] and doc["bytes"] == 2 * 1024 + 4096
    assert sorted(p.name for p in old.iterdir()) == ["lock"]  # the lock stays: a review may be opening it
    assert len(list((recent / "images").iterdir())) == 2 and (recent / "src").is_dir()  # booted after the lock is released
    assert _by_name(_json(tmp_path, "prune", "--max-size", "0"))["kernels"]["removed"] == [] and (recent / "src").is_dir()


def test_worktrees_go_only_when_asked_and_never_while_a_slot_is_held(tmp_path: Path) -> None:
    free, busy = _slots("a" * 16, 5), _slots("b" * 16, 5)
    assert _by_name(_json(tmp_path, "prune"))["worktrees"]["removed"] == [] and free.exists()  # no bound of its own
    with held("import fcntl\nf = open(sys.argv[1], 'w')\nfcntl.flock(f, fcntl.LOCK_EX)", str(busy / "0.lock")):  # worktree._slot's
        _age(busy / "0.lock", 5)  # a review that has held its slot for days
        doc = _by_name(_json(tmp_path, "prune", "--older-than", "1"))["worktrees"]
    assert doc["removed"] == [free.name] and doc["bytes"] == 2048 and not free.exists()
    assert busy.exists() and doc["kept"] == [f"{busy}: in use (a review holds one of its worktrees)"]
    assert sorted(p.name for p in busy.parent.iterdir()) == [busy.name]  # no trash left behind


def test_a_bad_size_is_a_usage_error(tmp_path: Path) -> None:
    build = _build(KEYS[0], 1000, 40)
    done = review("cache", "prune", "--max-size", "12parsecs", tmp=tmp_path / "tmp")
    done.assert_one_line_error(ExitStatus.USAGE, "invalid value for '--max-size': '12parsecs' is not a size")
    assert build.exists()


@pytest.mark.parametrize(("text", "size"), [("4096", 4096), ("500M", 500 << 20), ("1.5G", 3 << 29), ("2KiB", 2048), ("3 gb", 3 << 30),
                                            ("10b", 10)])
def test_sizes_read_as_du_counts(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_sizes_are_shown_in_binary_units() -> None:
    assert [human(n) for n in (0, 1023, 1024, 3 << 20, 5 << 30)] == ["0 B", "1023 B", "1.0 KiB", "3.0 MiB", "5.0 GiB"]


def test_the_review_help_names_the_cache_command(tmp_path: Path) -> None:
    done = review("--help", tmp=tmp_path / "tmp")
    assert done.rc == 0 and "review cache" in done.stdout
    sub = review("cache", "prune", "--help", tmp=tmp_path / "tmp")
    assert sub.rc == 0 and all(opt in sub.stdout for opt in ("--older-than", "--max-size", "--dry-run", "--format"))
