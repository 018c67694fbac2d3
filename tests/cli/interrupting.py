"""Start `review` in the background, signal it at a chosen moment, and look for what it left behind.

Shared by tests/cli/test_interrupt.py, test_signals.py and tests/realkernel/test_interrupt_real.py.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

VDSO = "tools/testing/selftests/vDSO"
# A selftest that says it runs (a file beside it) and then outlives any SIGTERM: the clean-up must SIGKILL it.
STUBBORN = """// SPDX-License-Identifier: GPL-2.0
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
\tsignal(SIGTERM, SIG_IGN);
\tfclose(fopen("started", "w"));
\tfor (;;)
\t\tpause();
}
"""


@dataclass
class Running:
    proc: subprocess.Popen[bytes]
    tmp: Path
    started: float = field(default_factory=time.monotonic)
    lines: list[tuple[float, str]] = field(default_factory=list)  # (when, stderr line)
    sent: list[float] = field(default_factory=list)

    def send(self, sig: int) -> None:
        self.sent.append(time.monotonic())
        self.proc.send_signal(sig)

    def line(self, prefix: str, timeout: float = 30) -> float:
        """When the first stderr line starting with PREFIX came (waiting up to TIMEOUT for it)."""
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            found = next((t for t, ln in list(self.lines) if ln.startswith(prefix)), None)
            if found is not None:
                return found
            time.sleep(0.005)
        raise AssertionError(f"no stderr line {prefix!r} in {timeout}s: {self.stderr}")

    def finish(self, timeout: float = 120) -> tuple[int, float]:
        """(exit status, seconds from the first signal to the exit)."""
        rc = self.proc.wait(timeout=timeout)
        ended = time.monotonic()
        self._reader.join(timeout=10)
        return rc, ended - (self.sent[0] if self.sent else self.started)

    @property
    def stderr(self) -> str:
        return "".join(ln for _, ln in self.lines)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.lines.append((time.monotonic(), raw.decode(errors="replace")))

    def __post_init__(self) -> None:
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()


_STARTED: list[subprocess.Popen[bytes]] = []


def start(*args: str | Path, tmp: Path, env: dict[str, str] | None = None) -> Running:
    """`review ARGS` with TMPDIR=TMP; stdout is thrown away (a JSON report), stderr read line by line."""
    tmp.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "reviewer", *map(str, args)], env={**os.environ, "TMPDIR": str(tmp), **(env or {})},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _STARTED.append(proc)
    return Running(proc, tmp)


@pytest.fixture(autouse=True)
def reaper() -> Iterator[None]:
    """A test that failed half way must not leave its review running (in a shared tree): SIGTERM it, and wait."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_until(run: Running, ready: Callable[[], bool], timeout: float = 120, what: str = "the moment to signal") -> None:
    until = time.monotonic() + timeout
    while not ready():
        assert run.proc.poll() is None, f"review ended (exit {run.proc.returncode}) before {what}: {run.stderr}"
        assert time.monotonic() < until, f"{what} did not come in {timeout}s: {run.stderr}"
        time.sleep(0.02)


def applying(*roots: Path) -> bool:
    """`git am` is at work in a worktree of a shadow repository below one of ROOTS."""
    return any(_rebasing(r) for r in roots if r.is_dir())


def _rebasing(root: Path) -> bool:
    for top, dirs, _ in os.walk(root, onerror=lambda _: None):
        here = Path(top)
        if "rebase-apply" in dirs and here.parent.name == "worktrees":
            return True
        # not into the worktrees themselves (their files are not git's), nor what is being deleted;
        # a shadow's worktrees/reviewer-wt-* are git's administrative directories: into those
        skip = ("reviewer-trash-",) if here.name == "worktrees" else ("reviewer-trash-", "reviewer-wt-")
        dirs[:] = [d for d in dirs if not d.startswith(skip)]
    return False


def started(tmp: Path) -> bool:
    """STUBBORN has started in a worktree below TMP."""
    # os.walk skips what vanishes as it goes: the run makes and removes directories meanwhile.
    return any("started" in files and top.endswith(VDSO) for top, _, files in os.walk(tmp))


def gone(pids: Callable[[], list[int]], timeout: float = 30) -> list[int]:
    """PIDS() once it is empty, or what is left after TIMEOUT (processes a SIGKILLed review orphaned finish on their own)."""
    until = time.monotonic() + timeout
    while (left := pids()) and time.monotonic() < until:
        time.sleep(0.05)
    return left


SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP}
