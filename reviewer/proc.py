"""The one helper every subprocess goes through: a timeout, and errors that show everything."""
from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reviewer import private
from reviewer.errors import CommandError

DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True)
class Completed:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run(
    args: Sequence[str | Path],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
) -> Completed:
    """Run a command, capture its output as text; raise CommandError on failure or timeout."""
    argv = tuple(str(a) for a in args)
    proc = _spawn(argv, cwd, {**os.environ, **env} if env is not None else None, input.encode() if isinstance(input, str) else input,
                  timeout)
    done = Completed(argv, proc.returncode, _text(proc.stdout), _text(proc.stderr))
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, done.stdout, done.stderr, None)
    return done


def output_bytes(args: Sequence[str | Path], *, input: bytes, timeout: float = DEFAULT_TIMEOUT,
                 env: Mapping[str, str] | None = None) -> bytes:
    """Run a command for its standard output as bytes (`git cat-file --batch`: sizes count bytes); ENV is
    added to the environment, as run()'s."""
    argv = tuple(str(a) for a in args)
    proc = _spawn(argv, None, {**os.environ, **env} if env is not None else None, input, timeout)
    if proc.returncode != 0:
        raise CommandError(argv, proc.returncode, "", _text(proc.stderr), None)
    return proc.stdout


def _spawn(argv: tuple[str, ...], cwd: Path | str | None, env: Mapping[str, str] | None, data: bytes | None,
           timeout: float) -> subprocess.CompletedProcess[bytes]:
    """subprocess.run with both outputs captured; a timeout or a missing program is a CommandError."""
    try:
        return subprocess.run(argv, cwd=cwd, env=env, input=data, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise CommandError(argv, None, _text(exc.stdout), _text(exc.stderr), timeout) from exc
    except FileNotFoundError as exc:
        raise CommandError(argv, None, "", f"{argv[0]}: command not found", None) from exc


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, str):
        return data
    return data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Sandboxed:
    returncode: int | None  # None: killed at the timeout
    output: str  # stdout and stderr, interleaved as the program wrote them
    seconds: float
    timed_out: bool
    left: tuple[str, ...] = ()  # processes still running when the program exited (the sandbox killed them)
    wrote: tuple[str, ...] = ()  # what it created outside its tree, in the sandbox's throw-away file systems
    lost: bool = False  # the sandbox's guard never reported the end: what was left is unknown


MAX_OUTPUT = 8 * 1024 * 1024  # bytes of output kept from one run: a test can print forever
DRAIN = 5.0  # seconds the pipes may stay open once the program is killed or has ended


@dataclass
class SidePipes:
    """Pipes beside the output: the child inherits CHILD_FDS (closed here once it has started); each
    of READERS (their other ends, the caller's to close) is read as data comes, and every chunk is
    handed to its callback (b"" once, at its end)."""

    child_fds: tuple[int, ...] = ()
    readers: dict[int, Callable[[bytes], None]] = field(default_factory=dict)


def run_group(
    args: Sequence[str | Path], *, cwd: Path, env: Mapping[str, str], timeout: float, side: SidePipes | None = None,
    owner: int | None = None,
) -> Sandboxed:
    """Run ARGS in its own process group with exactly ENV; kill the whole group at TIMEOUT or Ctrl-C.

    The output is read until every copy of the pipe is closed, but never past the deadline: once the
    group is killed, DRAIN seconds more at most (a process outside the group, e.g. after setsid(),
    may hold the pipe; the sandbox's PID namespace is what kills those). OWNER: the uid the pipe is
    given to (a program run as another user opens it again as /dev/stdout, as kselftest's runner.sh does)."""

    start = time.monotonic()
    argv = [str(a) for a in args]
    side = side or SidePipes()
    out, write = os.pipe()
    try:
        if owner is not None:
            os.fchown(write, owner, -1)
        proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdout=write, stderr=write, stdin=subprocess.DEVNULL,
                                start_new_session=True, pass_fds=side.child_fds)
    except FileNotFoundError as exc:
        os.close(out)
        raise CommandError(tuple(argv), None, "", f"{argv[0]}: command not found", None) from exc
    except BaseException:
        os.close(out)
        raise
    finally:
        os.close(write)
        for fd in side.child_fds:
            os.close(fd)
    kept = _Kept(MAX_OUTPUT)
    try:
        timed_out = not _pump({out: kept.add, **side.readers}, start + timeout)
        if timed_out:
            _kill_group(proc, signal.SIGKILL)
            _pump({out: kept.add}, time.monotonic() + DRAIN)
        _reap(proc)
    except BaseException:
        _kill_group(proc, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        os.close(out)
    return Sandboxed(None if timed_out else proc.returncode, kept.text(), time.monotonic() - start, timed_out)


def _pump(readers: Mapping[int, Callable[[bytes], None]], deadline: float) -> bool:
    """Read READERS until each is at its end (True) or DEADLINE passes (False)."""

    with selectors.DefaultSelector() as sel:
        for fd in readers:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            for key, _ in sel.select(min(left, 1.0)):
                chunk = os.read(key.fd, 65536)
                readers[key.fd](chunk)
                if not chunk:
                    sel.unregister(key.fd)
    return True


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """The pipe is closed: the program is ending. One that lingers without it is killed."""

    try:
        proc.wait(DRAIN)
    except subprocess.TimeoutExpired:
        _kill_group(proc, signal.SIGKILL)
        proc.wait()


class _Kept:
    """The first LIMIT bytes of an output; the rest is read (so that the writer never blocks) and counted."""

    def __init__(self, limit: int) -> None:
        self.data = bytearray()
        self.limit = limit
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        more = f"\n[reviewer: {self.dropped} more bytes of output were not kept]\n" if self.dropped else ""
        return _text(bytes(self.data)) + more


def _kill_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


@dataclass(frozen=True)
class Watched:
    returncode: int | None  # None: killed (stopped early or at the timeout)
    output: str  # stdout and stderr, interleaved
    seconds: float
    timed_out: bool
    stopped_at: str | None  # the line that made STOP say enough


def watch(
    args: Sequence[str | Path], *, stop: Callable[[str], bool], timeout: float, log: Path | None = None,
    cwd: Path | None = None,
) -> Watched:
    """Run ARGS in its own process group, reading its output line by line (copied to LOG as it comes);
    kill the whole group as soon as STOP(line) is true, at TIMEOUT, or on Ctrl-C. For a VM's console."""

    start = time.monotonic()
    argv = tuple(str(a) for a in args)
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except FileNotFoundError as exc:
        raise CommandError(argv, None, "", f"{argv[0]}: command not found", None) from exc
    assert proc.stdout is not None
    sink = private.open_private(log) if log is not None else None  # a console log: only the user may read it
    buf, stopped_at, timed_out = b"", None, False
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while stopped_at is None:
                left = start + timeout - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                if not sel.select(min(left, 1.0)):
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                if sink is not None:
                    sink.write(chunk)
                    sink.flush()
                done = buf.rfind(b"\n") + 1  # only whole lines are shown to STOP
                buf += chunk
                lines = _text(buf[done : buf.rfind(b"\n") + 1]).splitlines()
                stopped_at = next((ln for ln in lines if stop(ln)), None)
    finally:
        _kill_group(proc, signal.SIGKILL)  # also when the leader is gone: its children may not be
        proc.wait()
        proc.stdout.close()
        if sink is not None:
            sink.close()
    code = None if (timed_out or stopped_at is not None) and proc.returncode < 0 else proc.returncode
    return Watched(code, _text(buf), time.monotonic() - start, timed_out, stopped_at)
