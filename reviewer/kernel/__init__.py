"""The kernel layer: configure, build, cache and boot a kernel for an architecture, and nothing else.

THE architectures, their toolchains and guests (arches), the private source checkout of a cache (srctree), make
in the sandbox (make), the config fragment (kconfig), the kept-configuration stamp (configured), the image cache
(images), QEMU (qemu) and its console (console); the guests the selftests boot: their kernels (guestkernel), their
roots (guestroot), the test programs they run (jobs), virtme-ng (guest) and the initramfs guest with its own
init (initramfs, guest_init.c).
It imports no stage, no report/ and no cli/."""
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
