"""Every way a run ends is clean: Ctrl-C (SIGINT), SIGTERM and SIGHUP alike.

The first signal prints one line at once, stops every process the run started (SIGTERM, so that
make deletes half-written targets and git its lock files; SIGKILL after GRACE), and raises
Interrupted in the main thread, so that each stage's clean-up runs as on an error: worktrees are
renamed away and deleted, in the background once BUDGET has passed (leftovers.py). The exit
status is 128 + the signal's number (130, 143, 129).

A second signal does at once what is left (the clean-ups registered with on_exit(), the run's
temporary directory: renames, small deletions, a background `rm`) and exits: whatever is still
on disk is named after its owner, and the next run removes it (session() sweeps $TMPDIR first).

The run's temporary directory holds every temporary file of the process and of its children
(tempfile.tempdir and TMPDIR point into it), so nothing made there can be forgotten.
"""
from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from reviewer.run import leftovers

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE = 1.0  # seconds the run's processes get to exit on SIGTERM before SIGKILL
BUDGET = 0.5  # seconds the clean-up after a signal waits for deletions before leaving them to the background


class Interrupted(BaseException):
    """Raised in the main thread by the first signal (a BaseException: no `except Exception` swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class State:
    say: Callable[[str], None] = lambda _: None
    signum: int | None = None
    at: float = 0.0  # time.monotonic() of the first signal
    now: bool = False  # a second signal: wait for nothing any more
    ending: bool = False  # the session's own clean-up runs: a first signal must not interrupt it
    exits: dict[int, Callable[[], None]] = field(default_factory=dict)
    run_dir: Path | None = None

    @property
    def status(self) -> int | None:
        return None if self.signum is None else 128 + self.signum


_STATE = State()


def interrupted() -> int | None:
    """The signal that is ending this run, if one is."""
    return _STATE.signum


def deadline() -> float | None:
    """Until when a clean-up may wait for a deletion (None: as long as it takes; see leftovers.Deadline)."""
    if _STATE.signum is None:
        return None
    return time.monotonic() if _STATE.now else _STATE.at + BUDGET


def on_exit(clean: Callable[[], None]) -> int:
    """Register CLEAN (fast, idempotent) to run if the run ends before forget(); returns its token."""
    token = id(clean)
    _STATE.exits[token] = clean
    return token


def forget(token: int) -> None:
    _STATE.exits.pop(token, None)


def say(text: str) -> None:
    """A line for the user on stderr, when a session (the command line) is listening."""
    _STATE.say(text)


@contextlib.contextmanager
def session(sink: Callable[[str], None]) -> Iterator[State]:
    """The command's whole run: stale leftovers swept first (said through SINK), signals handled, one
    temporary directory for everything, and all of it removed at the end however the run ends."""
    global _STATE
    saved = (_STATE, tempfile.tempdir, os.environ.get("TMPDIR"), {s: signal.getsignal(s) for s in SIGNALS})
    tmp = Path(tempfile.gettempdir())
    _STATE = state = State(say=sink)
    for s in SIGNALS:
        signal.signal(s, _on_signal)
    try:
        with contextlib.suppress(Exception):  # a sweep that fails must not fail the run: the next one tries again
            if removed := leftovers.sweep_tmp(tmp):
                sink(leftovers.describe(removed))
        state.run_dir = leftovers.make("tmp", tmp)
        tempfile.tempdir, os.environ["TMPDIR"] = str(state.run_dir), str(state.run_dir)
        yield state
    finally:
        state.ending = True
        _clean_up(state)
        for s, handler in saved[3].items():
            signal.signal(s, handler)
        _STATE, tempfile.tempdir = saved[0], saved[1]
        if saved[2] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved[2]


def _clean_up(state: State) -> None:
    """What is still registered, then the run's temporary directory; each step on its own (one failing stops none)."""
    # Forgotten only once done: a second signal during one of them runs it again (they are idempotent).
    for token, clean in list(state.exits.items()):
        with contextlib.suppress(Exception):
            clean()
        state.exits.pop(token, None)
    if state.run_dir is not None:
        with contextlib.suppress(Exception):
            leftovers.drop(state.run_dir, deadline)


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    state = _STATE
    if state.signum is None:
        state.signum, state.at = signum, time.monotonic()
        _write(f"review: interrupted{'' if signum == signal.SIGINT else f' ({signal.Signals(signum).name})'}, cleaning up\n")
        stop_children(GRACE)
        if not state.ending:
            raise Interrupted(signum)
        return
    # A second signal: no more waiting. Everything left is renamed, registered or named after us.
    state.now = True
    _write("review: interrupted again: stopping now; the next run removes what is left\n")
    stop_children(0.0)
    _clean_up(state)
    os._exit(state.status or 128 + signum)


def _write(text: str) -> None:
    # os.write, not print: a handler may run while the main thread is inside sys.stderr's own write.
    with contextlib.suppress(OSError):
        os.write(2, text.encode())


def stop_children(grace: float) -> None:
    """SIGTERM to every descendant of this process (other than our background deletions), SIGKILL to
    those still there after GRACE seconds. Descendants, not process groups: the sandboxed tests and
    the VMs have groups of their own, and git's and make's children are in ours.

    They are stopped (SIGSTOP) first, and /proc read again until no new one appears: a process
    that forks just after a reading would leave an orphan the next reading no longer finds below
    us (seen: `git am`'s `git mailsplit` writing on into a worktree being removed)."""
    pids: list[int] = []
    for _ in range(100):  # a fork bomb (limited by the sandbox) could outrun a few readings, not this many
        new = [p for p in _descendants(os.getpid()) if p not in pids and p not in leftovers.DELETERS]
        if not new:
            break
        _signal(new, signal.SIGSTOP)
        pids += new
    _signal(pids, signal.SIGTERM)
    _signal(pids, signal.SIGCONT)  # the pending SIGTERM is delivered as each one resumes
    until = time.monotonic() + grace
    while (left := [p for p in pids if leftovers.start_time(p) is not None]) and time.monotonic() < until:
        time.sleep(0.01)
    _signal(left, signal.SIGKILL)


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def _descendants(root: int) -> list[int]:
    """Every live process below ROOT, from one pass over /proc."""
    children: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = Path(entry.path, "stat").read_text().rpartition(")")[2].split()
                if fields[0] not in ("Z", "X"):
                    children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found
