"""The machine rather than the input: a full $TMPDIR or cache, a TARGET we may not read, a crash log
that cannot be written. Each is made for real (a small tmpfs, a directory of a user we are not), and
each gets one line naming the directory and what to do, never a traceback (or, for a bug, still exit 70).

The small file systems are tmpfs mounts inside `unshare --user --map-root-user --mount` (a user and
mount namespace): that works as root (here and on CI) and unprivileged alike, and the mount goes
away with the namespace, so nothing is left mounted however the test ends.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from tests.conftest import SERIES
from tests.helpers import Result, review

# Mount a tmpfs of SIZE at DIR, fill FILL bytes of it, run the command, list what it left in DIR/tmp.
SMALL_FS = """set -e
dir=$1 size=$2 fill=$3 seen=$4; shift 4
mount -t tmpfs -o "size=$size" tmpfs "$dir"
mkdir "$dir/tmp" "$dir/cache"
head -c "$fill" /dev/zero > "$dir/fill" 2>/dev/null || true
set +e
"$@"; rc=$?
ls -A "$dir/tmp" > "$seen"
exit $rc
"""
UNSHARE = ("unshare", "--user", "--map-root-user", "--mount")


def _on_small_fs(tmp_path: Path, size: str, fill: str, *args: str | Path, env: dict[str, str]) -> tuple[Result, list[str]]:
    """Review ARGS with a SIZE tmpfs (FILL of it taken) at tmp_path/small; what the run left in small/tmp."""
    small, seen = tmp_path / "small", tmp_path / "seen.txt"
    small.mkdir()
    prefix = (*UNSHARE, "sh", "-c", SMALL_FS, "sh", str(small), size, fill, str(seen))
    result = review(*args, tmp=small / "tmp", env=env, prefix=prefix)
    return result, seen.read_text().split() if seen.exists() else ["(not listed: the shell did not get that far)"]


def test_a_full_tmpdir(kernel_repo: Path, tmp_path: Path) -> None:
    """The worktree goes in $TMPDIR (the result cache off, so nothing comes from the cache): it fills up
    half-way. Was: exit 70, `git worktree add` ... No space left on device."""
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "reviewer.resultCache", "GIT_CONFIG_VALUE_0": "false"}
    result, left = _on_small_fs(tmp_path, "256k", "200k", SERIES / "single-patch.mbox", "--tree", kernel_repo, env=env)
    result.assert_one_line_error(ExitStatus.CONFIG, f"$TMPDIR {tmp_path / 'small' / 'tmp'}: no space left on device")
    assert "point TMPDIR at a directory with room" in result.stderr
    assert left == []


def test_a_full_cache(kernel_repo: Path, tmp_path: Path) -> None:
    """The apply cache's repository cannot even be made. Was: exit 70, `git init` ... No space left on device."""
    env = {"XDG_CACHE_HOME": str(tmp_path / "small" / "cache")}
    result, left = _on_small_fs(tmp_path, "256k", "1M", SERIES / "single-patch.mbox", "--tree", kernel_repo, env=env)
    result.assert_one_line_error(ExitStatus.CONFIG, f"the cache {tmp_path / 'small' / 'cache' / 'reviewer'}: no space left on device")
    assert "point XDG_CACHE_HOME at a directory with room" in result.stderr
    assert left == []


def _not_ours(path: Path) -> tuple[str, ...]:
    """Make PATH (a directory tree) unreadable to the review; the prefix to run it under. Root passes every
    permission check, except on files whose owner is not mapped into its user namespace: as root, the
    tree goes to a uid the namespace does not map. Unprivileged, taking the owner's permissions away does."""
    if os.geteuid() != 0:
        path.chmod(0)
        return ()
    for p in [path, *path.rglob("*")]:
        os.chown(p, 12345, 12345)
    path.chmod(0o700)
    return (*UNSHARE[:3],)


def test_an_unreadable_directory_as_target(tmp_path: Path) -> None:
    """Was: exit 70, PermissionError while telling a maildir from a format-patch directory."""
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(SERIES / "single-patch.mbox", out / "0001-mm-dmapool.patch")
    prefix = _not_ours(out)
    try:
        result = review(out, tmp=tmp_path / "tmp", prefix=prefix)
        result.assert_one_line_error(ExitStatus.FETCH, f"{out}: cannot read it: Permission denied")
        result = review(out / "0001-mm-dmapool.patch", tmp=tmp_path / "tmp", prefix=prefix)
        result.assert_one_line_error(ExitStatus.FETCH, f"{out / '0001-mm-dmapool.patch'}: cannot read it: Permission denied")
        result.assert_nothing_left()
    finally:
        out.chmod(0o700)


# A bug on purpose: the review command as installed, with the loading stage made to raise (PYTHONPATH's
# sitecustomize runs before the command). No bug of ours is left to reach exit 70 with.
BUG = """import reviewer.series.target as target
def load(*args, **kwargs):
    raise RuntimeError("a bug put here by the test")
target.load = load
"""


@pytest.mark.parametrize("state", ["a-file", "read-only"])
def test_a_crash_log_that_cannot_be_written(state: str, tmp_path: Path) -> None:
    """Was: a raw traceback of the crash log's own OSError and exit 1. Now: the bug's line, a hint saying
    where the log could not be written and why, the traceback on stderr, and still exit 70."""
    (tmp_path / "inject").mkdir()
    (tmp_path / "inject" / "sitecustomize.py").write_text(BUG)
    env = {"PYTHONPATH": str(tmp_path / "inject")}
    if state == "a-file":
        (tmp_path / "state").write_text("not a directory\n")
        env["XDG_STATE_HOME"] = str(tmp_path / "state")
        result = review(SERIES / "single-patch.mbox", tmp=tmp_path / "tmp", env=env)
        why = "Not a directory"
    else:  # a read-only file system (mounted so in a mount namespace): root may not write it either
        state_dir = tmp_path / "ro"
        state_dir.mkdir()
        env["XDG_STATE_HOME"] = str(state_dir)
        ro = ("sh", "-c", 'mount -t tmpfs -o ro,size=64k tmpfs "$0" && exec "$@"', str(state_dir))
        result = review(SERIES / "single-patch.mbox", tmp=tmp_path / "tmp", env=env, prefix=(*UNSHARE, *ro))
        why = "Read-only file system"
    assert result.rc == ExitStatus.INTERNAL, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "review: error: internal error: RuntimeError: a bug put here by the test", lines
    crash = re.escape(str(Path(env["XDG_STATE_HOME"]) / "reviewer" / "crash"))
    assert re.fullmatch(rf"hint: this is a bug; its crash log could not be written in {crash} \({why}\), so its traceback follows",
                        lines[1]), lines[1]
    assert lines[2] == "Traceback (most recent call last):" and lines[-1] == "RuntimeError: a bug put here by the test", lines
