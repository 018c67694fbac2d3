"""The real-kernel tier's repository helpers live in bench/_kernel.py (the benchmarks use them too,
and bench/ does not import tests/); the tests keep importing them from here."""
from __future__ import annotations

from bench._kernel import (
    BOOT_CACHE,
    BUILDER,
    CACHE,
    GUEST_ROOTS,
    IDENTITY,
    TARBALL,
    commit,
    edit_series,
    ensure_repo,
    format_patch,
    git,
    show,
)

__all__ = ["BOOT_CACHE", "BUILDER", "CACHE", "GUEST_ROOTS", "IDENTITY", "TARBALL", "commit", "edit_series", "ensure_repo",
           "format_patch", "git", "show"]
