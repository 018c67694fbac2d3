"""The tool's two roots under the XDG base directories (https://specifications.freedesktop.org/basedir-spec/):
the cache (what can be made again: threads, results, worktrees, kernel images) and the state
(what is the user's to read: run logs, crash logs, unsent mail). An unset or empty variable
means the spec's default under $HOME."""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """$XDG_CACHE_HOME/reviewer (default ~/.cache/reviewer)."""
    return _base("XDG_CACHE_HOME", ".cache") / "reviewer"


def state_root() -> Path:
    """$XDG_STATE_HOME/reviewer (default ~/.local/state/reviewer)."""
    return _base("XDG_STATE_HOME", ".local/state") / "reviewer"


def _base(variable: str, default: str) -> Path:
    # Read at each call, not at import: the tests (and a long-lived caller) change the environment.
    return Path(os.environ.get(variable) or Path.home() / default)
