"""The bundled demo: the LoongArch vDSO getrandom() v4 series and a kernel-shaped tree.

In a clone (and an editable install) they are read from fixtures/; a built wheel carries a copy,
reviewer/demo_data/ (setup.py), with the tree as a tar: a wheel cannot hold its symlink.
"""
from __future__ import annotations

import contextlib
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from reviewer.errors import ConfigError
from reviewer.tree.plainrepo import build_base_repo

MBOX_NAME = "loongarch-vdso-getrandom-v4.mbox"
_HERE = Path(str(resources.files("reviewer")))
PACKAGED = _HERE / "demo_data"  # in a wheel: the mbox and kernel-mini.tar
FIXTURES = _HERE.parent / "fixtures"  # in a clone


def sources() -> tuple[Path, Path]:
    """(the demo mbox, the demo tree: the wheel's kernel-mini.tar, else the clone's fixtures/kernel-mini)."""
    if (PACKAGED / "kernel-mini.tar").is_file():
        return PACKAGED / MBOX_NAME, PACKAGED / "kernel-mini.tar"
    return FIXTURES / "series" / MBOX_NAME, FIXTURES / "kernel-mini"


@contextlib.contextmanager
def prepared() -> Iterator[tuple[Path, Path]]:
    """Yield (demo mbox, a fresh git repo of the demo tree); the repo is removed afterwards."""
    mbox, tree_src = sources()
    if not mbox.is_file() or not tree_src.exists():
        raise ConfigError(
            f"the demo fixtures are at neither {PACKAGED} nor {FIXTURES}",
            "reinstall reviewer (`pip install .` or, from a clone, `pip install -e .`)",
        )
    scratch = Path(tempfile.mkdtemp(prefix="reviewer-demo-"))
    try:
        if tree_src.is_file():
            tree_src = _unpack(tree_src, scratch / "kernel-mini")
        tree = scratch / "linux"
        build_base_repo(tree_src, tree)
        yield mbox, tree
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _unpack(archive: Path, dest: Path) -> Path:
    """The tar as setup.py wrote it: regular files, directories and relative links inside DEST only."""
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    return dest
