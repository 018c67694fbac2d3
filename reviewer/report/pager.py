"""The terminal report through a pager when it is taller than the terminal, as git does.

Only when stdout is a terminal (the CLI decides, and --no-pager turns it off). The pager is $PAGER,
run by the shell as git runs it, else `less`; LESS defaults to FRX (quit at the end of one screen,
colour escapes shown as colour, no screen clearing) and LV to -c, as git sets them. PAGER="" or
"cat" is no pager. A pager that cannot be started (the shell's 127) leaves the report printed
as it would be without one.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

from rich.console import Console

NOT_FOUND = 127  # what sh exits with when it cannot find the command


def command() -> str | None:
    pager = os.environ.get("PAGER")
    if pager is None:
        return "less"
    return None if pager.strip() in ("", "cat") else pager


def show(console: Console, render: Callable[[], None], *, enabled: bool) -> None:
    """RENDER's output on CONSOLE, through the pager when ENABLED and it is taller than the terminal."""
    cmd = command() if enabled else None
    if cmd is None:
        render()
        return
    with console.capture() as captured:
        render()
    text = captured.get()
    if text.count("\n") < console.size.height or not page(cmd, text):
        sys.stdout.write(text)


def page(cmd: str, text: str) -> bool:
    """TEXT through CMD; False when CMD could not be started (nothing was shown)."""
    env = {**os.environ, "LESS": os.environ.get("LESS", "FRX"), "LV": os.environ.get("LV", "-c")}
    sys.stdout.flush()
    try:
        # Not reviewer.proc.run: a pager is interactive and ends when the reader quits it, so no timeout.
        proc = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.PIPE, env=env)
    except OSError:
        return False
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode())
        proc.stdin.close()
    except BrokenPipeError:
        pass  # the reader quit before the end, or the pager never started
    _wait(proc)
    return proc.returncode != NOT_FOUND


def _wait(proc: subprocess.Popen[bytes]) -> None:
    """Wait for the pager: Ctrl-C reaches it too (one process group), and less stays open on it."""
    while True:
        try:
            proc.wait()
            return
        except KeyboardInterrupt:
            continue
