"""Which directory a full-disk failure is named by: the most specific root the failing path lies under."""
from __future__ import annotations

import errno
from pathlib import Path

from reviewer.errors import CommandError
from reviewer.store import diskfull


def _roots(tmp: Path) -> dict[str, tuple[Path, str]]:
    return {"the cache": (tmp / "tmpdir" / "cache", "XDG_CACHE_HOME"), "$TMPDIR": (tmp / "tmpdir", "TMPDIR")}


def test_an_oserror_under_the_cache_inside_tmpdir_names_the_cache(tmp_path: Path) -> None:
    exc = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "tmpdir" / "cache" / "reviewer" / "x"))
    got = diskfull.diagnose(exc, _roots(tmp_path))
    assert got is not None and got.message() == f"the cache {tmp_path / 'tmpdir' / 'cache'}: no space left on device"
    assert got.hint() == "free some space there, or point XDG_CACHE_HOME at a directory with room, then run the review again"


def test_git_saying_so_names_the_directory_it_was_given(tmp_path: Path) -> None:
    shadow = tmp_path / "tmpdir" / "run" / "shadow.git"
    exc = CommandError(("git", "-C", str(shadow), "checkout"), 128, "", "fatal: sha1 file 'x' write error. Out of diskspace", None)
    got = diskfull.diagnose(exc, _roots(tmp_path))
    assert got is not None and got.message() == f"$TMPDIR {tmp_path / 'tmpdir'}: no space left on device"


def test_a_cause_is_looked_through_and_elsewhere_is_the_files_directory(tmp_path: Path) -> None:
    try:
        try:
            raise OSError(errno.EROFS, "Read-only file system", "/mnt/ro/logs/run/out.log")
        except OSError as inner:
            raise RuntimeError("writing the log failed") from inner
    except RuntimeError as outer:
        got = diskfull.diagnose(outer, _roots(tmp_path))
    assert got is not None and got.message() == "/mnt/ro/logs/run: read-only file system"
    assert got.hint() == "make it writable there, then run the review again"


def test_other_errors_are_bugs(tmp_path: Path) -> None:
    assert diskfull.diagnose(OSError(errno.EACCES, "Permission denied", str(tmp_path / "tmpdir" / "x")), _roots(tmp_path)) is None
    assert diskfull.diagnose(ValueError("embedded null byte"), _roots(tmp_path)) is None
    assert diskfull.diagnose(CommandError(("git", "x"), 1, "", "fatal: bad object", None), _roots(tmp_path)) is None
