"""The bundled demo: the LoongArch vDSO getrandom() v4 series and a kernel-shaped tree."""
from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from reviewer.errors import ConfigError
from reviewer.tree.plainrepo import build_base_repo

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DEMO_MBOX = FIXTURES / "series" / "loongarch-vdso-getrandom-v4.mbox"
DEMO_TREE = FIXTURES / "kernel-mini"


@contextlib.contextmanager
def prepared() -> Iterator[tuple[Path, Path]]:
    """Yield (demo mbox, a fresh git repo of the demo tree); the repo is removed afterwards."""
    if not DEMO_MBOX.is_file() or not DEMO_TREE.is_dir():
        raise ConfigError(
            f"the demo fixtures are not at {FIXTURES}",
            "install reviewer from a clone with `pip install -e .` (the demo reads fixtures/ from the clone)",
        )
    scratch = Path(tempfile.mkdtemp(prefix="reviewer-demo-"))
    try:
        tree = scratch / "linux"
        build_base_repo(DEMO_TREE, tree)
        yield DEMO_MBOX, tree
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
