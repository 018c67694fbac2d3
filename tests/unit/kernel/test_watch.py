"""proc.watch, which reads a VM's console: it stops at a line, kills a hang with its children, keeps a log."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from reviewer.errors import CommandError
from reviewer.kernel import qemu
from reviewer.proc import watch


def _alive(pid: int) -> bool:
    """Still running after a grace second (SIGKILL is delivered, not waited for)."""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return False
        except FileNotFoundError:
            return False
        time.sleep(0.05)
    return True


def test_stops_at_the_line_and_kills_the_rest(tmp_path: Path) -> None:
    script = f"sleep 60 & echo $! > {tmp_path}/pid; echo one; echo END; sleep 60"
    start = time.monotonic()
    done = watch(["sh", "-c", script], stop=lambda ln: ln == "END", timeout=30, log=tmp_path / "log")
    assert done.stopped_at == "END" and not done.timed_out and done.returncode is None
    assert time.monotonic() - start < 10
    assert (tmp_path / "log").read_text().startswith("one\nEND\n")
    assert not _alive(int((tmp_path / "pid").read_text()))


def test_a_hang_is_killed_at_the_timeout(tmp_path: Path) -> None:
    script = f"sleep 60 & echo $! > {tmp_path}/pid; echo booting; sleep 60"
    done = watch(["sh", "-c", script], stop=lambda _ln: False, timeout=1.5)
    assert done.timed_out and done.returncode is None and "booting" in done.output
    assert 1.5 <= done.seconds < 10
    assert not _alive(int((tmp_path / "pid").read_text()))


def test_a_program_that_ends_on_its_own() -> None:
    done = watch(["sh", "-c", "echo a; exit 3"], stop=lambda _ln: False, timeout=10)
    assert (done.returncode, done.output, done.timed_out, done.stopped_at) == (3, "a\n", False, None)


def test_a_missing_program() -> None:
    with pytest.raises(CommandError, match="command not found"):
        watch(["no-such-qemu"], stop=lambda _ln: False, timeout=1)


def test_qemu_command_line() -> None:
    tcg = qemu.command(Path("bzImage"), "tcg")
    assert tcg[:3] == ["qemu-system-x86_64", "-accel", "tcg"] and "-enable-kvm" not in tcg
    assert tcg[-2:] == ["-append", "console=ttyS0 panic=-1"] and "-no-reboot" in tcg
    assert "-enable-kvm" in qemu.command(Path("bzImage"), "kvm")
