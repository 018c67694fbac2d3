"""Files only the user may read: the run's logs and unsent mail (a test's output can hold anything
the test could read; a mail, the review of unpublished work). Directories 700, files 600."""
from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO


def make_dir(path: Path) -> Path:
    """PATH and its missing parents, each made mode 700 (Path.mkdir gives the parents the umask's mode)."""
    missing = []
    for p in (path, *path.parents):
        if p.is_dir():
            break
        missing.append(p)
    for p in reversed(missing):
        try:
            p.mkdir(mode=0o700)
        except FileExistsError:
            if not p.is_dir():
                raise
        else:
            os.chmod(p, 0o700)  # mkdir's mode is masked by the umask: 700 is meant whatever it is
    return path


def open_private(path: Path, *, exclusive: bool = False) -> BinaryIO:
    """PATH opened for writing, mode 600 (also when it was there before); never through a symlink.
    EXCLUSIVE: fail if it exists (FileExistsError)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "wb")


def write_private(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    with open_private(path, exclusive=exclusive) as f:
        f.write(data)
