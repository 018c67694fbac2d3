"""The one helper every subprocess goes through: a timeout, and errors that show everything."""
from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

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
    proc = _spawn(argv, cwd, {**os.environ, **env} if env is not None else None, input.encode() if isinstance(input, str) else input, timeout)
    done = Completed(argv, proc.returncode, _text(proc.stdout), _text(proc.stderr))
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, done.stdout, done.stderr, None)
    return done


def output_bytes(args: Sequence[str | Path], *, input: bytes, timeout: float = DEFAULT_TIMEOUT) -> bytes:
    """Run a command for its standard output as bytes (`git cat-file --batch`: sizes count bytes)."""
    argv = tuple(str(a) for a in args)
    proc = _spawn(argv, None, None, input, timeout)
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


def run_group(
    args: Sequence[str | Path], *, cwd: Path, env: Mapping[str, str], timeout: float
) -> Sandboxed:
    """Run ARGS in its own process group with exactly ENV; kill the whole group at TIMEOUT or Ctrl-C."""
    import signal
    import time

    start = time.monotonic()
    proc = subprocess.Popen(
        [str(a) for a in args], cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return Sandboxed(proc.returncode, _text(out), time.monotonic() - start, False)
    except subprocess.TimeoutExpired:
        _kill_group(proc, signal.SIGKILL)
        out, _ = proc.communicate()
        return Sandboxed(None, _text(out), time.monotonic() - start, True)
    except BaseException:
        _kill_group(proc, signal.SIGKILL)
        proc.wait()
        raise


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
    import selectors
    import signal
    import time

    start = time.monotonic()
    argv = tuple(str(a) for a in args)
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except FileNotFoundError as exc:
        raise CommandError(argv, None, "", f"{argv[0]}: command not found", None) from exc
    assert proc.stdout is not None
    sink = open(log, "wb") if log is not None else None  # noqa: SIM115 (closed in finally)
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
