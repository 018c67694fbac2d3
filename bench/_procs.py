"""What a run left behind, read from /proc and git: the interrupt benchmark's probes.

The interrupt tests import them from here too (bench/ does not import tests/)."""
from __future__ import annotations

import os
from pathlib import Path

from bench._kernel import git


def registrations_of(repo: Path, pid: int) -> list[str]:
    """Administrative directories in REPO named after process PID (leftovers.py's marker)."""
    admin = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()) / "worktrees"
    return sorted(p.name for p in admin.glob(f"reviewer-wt-{pid}-*")) if admin.is_dir() else []


def processes_in(root: Path) -> list[int]:
    """Processes whose working directory is below ROOT."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if os.readlink(proc / "cwd").startswith(str(root)):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def making(tmp: Path) -> bool:
    """A `make` runs in a worktree below TMP."""
    for pid in processes_in(tmp):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "make":
                return True
        except OSError:
            continue
    return False
