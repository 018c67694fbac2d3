"""Issue 30: the terminal report goes through a pager when it is taller than the terminal, as git
does; driven for real in a pseudo-terminal (python's pty), with Debian's less."""
from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time
from dataclasses import dataclass

from tests.conftest import ROOT, SERIES

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
LAST = "Stage"  # the stage table ends the report


@dataclass
class Terminal:
    pid: int
    fd: int
    seen: bytes = b""
    code: int | None = None  # the exit code, once reaped

    def read(self, quiet: float = 1.5, limit: float = 60.0) -> bytes:
        """What the program writes until it has said nothing for QUIET seconds, or has exited."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], quiet)
            if not ready:
                break
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # EIO: the program and all its children closed the terminal
                break
            if not chunk:
                break
            self.seen += chunk
        return self.seen

    def exited(self, timeout: float = 20.0) -> int | None:
        end = time.monotonic() + timeout
        while self.code is None and time.monotonic() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.read(quiet=0.1)
                self.code = os.waitstatus_to_exitcode(status)
            else:
                time.sleep(0.05)
        return self.code


def _start(rows: int, *args: str, pager: str | None = None) -> Terminal:
    env = {k: v for k, v in os.environ.items() if k not in ("PAGER", "LESS", "LV", "COLUMNS", "LINES", "NO_COLOR")}
    env.update(TERM="xterm", **({"PAGER": pager} if pager is not None else {}))
    pid, fd = pty.fork()
    if pid == 0:  # the child: the pty is its controlling terminal, as a user's shell would give it
        try:
            fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 100, 0, 0))
            os.chdir(ROOT)
            os.execve(sys.executable, [sys.executable, "-m", "reviewer", str(DEMO), "--no-tests", *args], env)
        finally:
            os._exit(127)
    return Terminal(pid, fd)


def _stop(term: Terminal) -> None:
    if term.exited(0.1) is None:  # a failed test: end what it started
        os.kill(term.pid, 9)
        os.waitpid(term.pid, 0)
    os.close(term.fd)


def test_a_tall_report_waits_in_less_until_the_reader_quits() -> None:
    term = _start(12)
    try:
        first = term.read()
        assert b"No errors or warnings" in first and LAST.encode() not in first, first[-400:]
        assert term.exited(0.5) is None  # less holds the terminal, waiting for a key
        os.write(term.fd, b"q")
        assert term.exited() == 0
    finally:
        _stop(term)


def test_no_pager_prints_it_all_at_once() -> None:
    term = _start(12, "--no-pager")
    try:
        assert term.exited() == 0
        assert LAST.encode() in term.read()
    finally:
        _stop(term)


def test_pager_is_the_users_and_a_short_report_is_not_paged() -> None:
    tall, short = _start(12, pager="sed 's/^/paged: /'"), _start(200, pager="sed 's/^/paged: /'")
    try:
        assert tall.exited() == 0 and short.exited() == 0
        lines = [ln for ln in tall.read().split(b"\r\n") if ln]
        assert len(lines) > 12 and all(ln.startswith(b"paged: ") for ln in lines) and LAST.encode() in tall.read()
        assert b"paged: " not in short.read() and LAST.encode() in short.read()
    finally:
        _stop(tall)
        _stop(short)


def test_a_pager_that_cannot_start_leaves_the_report_printed() -> None:
    term = _start(12, pager="no-such-pager-here")
    try:
        assert term.exited() == 0
        assert LAST.encode() in term.read()
    finally:
        _stop(term)
