"""Compiling a kernel tree: the private source checkout of a cache (srctree) and make in the sandbox (make)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from reviewer.store import dirs


def cache_for(tree: Path) -> Path:
    """The kernel cache of TREE, shared by the build and boot stages (one source checkout, one ccache, the
    build directories): $XDG_CACHE_HOME/reviewer/boot/<tree>/, or REVIEWER_BOOT_CACHE."""
    key = hashlib.sha1(str(tree.resolve()).encode()).hexdigest()[:16]
    return Path(os.environ.get("REVIEWER_BOOT_CACHE") or dirs.cache_root() / "boot" / key)
