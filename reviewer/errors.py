"""The error tree library code raises, and the exit statuses only the CLI maps them to."""
from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    OK = 0
    FINDINGS = 1
    USAGE = 2
    CONFIG = 3
    FETCH = 4
    APPLY = 5
    SELFTESTS = 6
    INTERNAL = 70
    INTERRUPTED = 130


class ReviewerError(Exception):
    """A problem the user can act on: one line of message, one line of hint."""

    status: ExitStatus = ExitStatus.INTERNAL

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(ReviewerError):
    status = ExitStatus.USAGE


class ConfigError(ReviewerError):
    status = ExitStatus.CONFIG


class InputError(ReviewerError):
    """The series could not be obtained or read: a missing file, an mbox with no patch, a bad range."""

    status = ExitStatus.FETCH


class FetchError(InputError):
    pass


class ApplyError(ReviewerError):
    status = ExitStatus.APPLY


class SelftestError(ReviewerError):
    status = ExitStatus.SELFTESTS


class CommandError(ReviewerError):
    """A subprocess failed or timed out; carries everything needed to show why. The code that runs the
    command turns an expected failure into the user's error (InputError, ApplyError, ...); one that reaches
    the CLI as it is was not expected: a bug, reported with a crash log (exit 70)."""

    status = ExitStatus.INTERNAL

    def __init__(
        self,
        args: tuple[str, ...],
        returncode: int | None,
        stdout: str,
        stderr: str,
        timeout: float | None,
    ) -> None:
        self.args_ = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.timeout = timeout
        cmd = " ".join(args)
        if timeout is not None:
            what = f"timed out after {timeout:g}s"
        elif returncode is None:
            what = "could not be started"
        else:
            what = f"exited {returncode}"
        last = (stderr.strip() or stdout.strip()).splitlines()
        tail = f": {last[-1]}" if last else ""
        super().__init__(f"`{cmd}` {what}{tail}")
