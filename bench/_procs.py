"""What a run left behind, read from /proc and git: the interrupt benchmark's probes; and stopping what a bench started.

The interrupt tests import them from here too (bench/ does not import tests/)."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
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


def our_worktrees(repo: Path, tmp: Path) -> list[str]:
    """The review's worktrees below TMP, and any registered in REPO (there should be none: the
    worktrees belong to the review's shadow repository, see reviewer/apply/worktree.py)."""
    listing = git(repo, "worktree", "list", "--porcelain")
    registered = [ln.removeprefix("worktree ") for ln in listing.splitlines() if ln.startswith("worktree ")]
    made = [str(p) for p in named_below(tmp, "reviewer-wt-") if (p / ".git").is_file()]
    return sorted({*made, *(p for p in registered if p.startswith(str(tmp)))})


def named_below(root: Path, prefix: str) -> list[Path]:
    """The directories below ROOT whose name starts with PREFIX, not looking inside them or inside
    what a run is deleting in the background (reviewer-trash-*: its files vanish as we walk)."""
    found = []
    for top, dirs, _ in os.walk(root, onerror=lambda _: None):
        keep = []
        for d in dirs:
            if d.startswith(prefix):
                found.append(Path(top) / d)
            elif not d.startswith("reviewer-trash-"):
                keep.append(d)
        dirs[:] = keep
    return found


def stop_groups(procs: Sequence[subprocess.Popen[bytes]], sig: int, grace: float) -> None:
    """Stop PROCS, each the leader of a process group of its own (start_new_session): SIG to every group, SIGKILL to a
    group whose leader has not ended GRACE seconds later, and SIGKILL to whatever of each group is still there."""
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, sig)
    for p in procs:
        try:
            p.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
