from __future__ import annotations

from pathlib import Path

import pytest

from tests.realkernel.kernel import ensure_repo, git


@pytest.fixture(scope="session")
def linux() -> Path:
    """Debian's 6.12 tree as a git repository (cached across runs; built in ~1 min)."""
    return ensure_repo()


@pytest.fixture(scope="session")
def linux_head(linux: Path) -> str:
    return git(linux, "rev-parse", "HEAD").strip()
