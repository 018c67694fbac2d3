"""Shared by the guest tests: the hostile selftests that leave processes behind, built for this machine."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

LEAVERS = ("hostile_daemon", "hostile_setsid")  # fixtures/hostile/: a double-forked daemon, a child in a session of its own


@pytest.fixture
def leavers(tmp_path: Path) -> Path:
    """A directory holding LEAVERS, compiled as the selftests' Makefile would."""
    out = tmp_path / "hostile"
    out.mkdir()
    for name in LEAVERS:
        subprocess.run(["gcc", "-O2", "-Wall", "-I", str(FIXTURES / "hostile"), "-o", str(out / name),
                        str(FIXTURES / "hostile" / f"{name}.c")],
                       check=True, capture_output=True)
    return out


def alive(pid: int) -> bool:
    """PID runs (a zombie waits for its parent to reap it: it runs no more)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def pid_of(left: str) -> int:
    """The pid of a leftover as a guest names it: `pid 12: ./hostile_daemon`."""
    assert left.startswith("pid "), left
    return int(left.removeprefix("pid ").split(":")[0])
