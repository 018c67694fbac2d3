"""A job: one test program a guest runs (kernel/guest.py with vng, kernel/initramfs.py with our own init)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Job:
    cwd: Path  # the test's directory (the same path in the guest: the tree is shared)
    argv: tuple[str, ...]  # as kselftest's runner starts it, relative to CWD
    env: str  # plain | timens (run/sandbox.ENVS: the same namespaces, made inside the guest)
    timeout: float
