"""reviewer.progress: what a long stage shows on a terminal (a fake one: rich on a StringIO), and that the
default shows nothing."""
from __future__ import annotations

import io
import re
import time

import pytest
from rich.console import Console

from reviewer import progress
from reviewer.progress import QUIET, Display

_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def fake_terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=160, color_system=None), out


def frames(out: io.StringIO) -> list[str]:
    """What the display drew, one entry per redraw, without the cursor codes and the spinner."""
    text = _CONTROL.sub("\n", out.getvalue().replace("\r", "\n"))
    return [line.strip().lstrip("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ ") for line in text.splitlines() if line.strip()]


def test_each_run_is_named_with_how_many_are_done_and_left() -> None:
    console, out = fake_terminal()
    display = Display(console)
    with display.stage("selftests"):
        display.expect(2)
        display.advance("build vDSO on base")
        display.advance("build vDSO on patched")
        display.expect(2)  # learnt once the trees are built
        display.advance("vDSO:vdso_test_getrandom on base (plain)")
        display.advance("vDSO:vdso_test_getrandom on patched (plain)")
    drawn = frames(out)
    for line in ("selftests [1/2, 1 left]: build vDSO on base", "selftests [2/2, 0 left]: build vDSO on patched",
                 "selftests [3/4, 1 left]: vDSO:vdso_test_getrandom on base (plain)",
                 "selftests [4/4, 0 left]: vDSO:vdso_test_getrandom on patched (plain)"):
        assert any(f.startswith(line) for f in drawn), (line, drawn)


def test_a_quick_stage_shows_nothing_and_a_slow_one_a_spinner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "SPINNER_AFTER", 0.2)  # a second, in the tool
    console, out = fake_terminal()
    display = Display(console)
    with display.stage("load"):
        pass
    assert out.getvalue() == ""
    with display.stage("check"):
        time.sleep(progress.SPINNER_AFTER + 0.3)
    assert any(f.startswith("check...") for f in frames(out)), frames(out)


def test_the_display_is_gone_after_the_stage() -> None:
    console, out = fake_terminal()
    display = Display(console)
    with display.stage("boot"):
        display.expect(1)
        display.advance("build the base kernel (plain)")
    console.print("the report")
    assert out.getvalue().endswith("the report\n")  # transient: the bar is erased, the report follows it
    assert "build the base kernel" in out.getvalue()


def test_quiet_shows_nothing(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "SPINNER_AFTER", 0.1)
    with QUIET.stage("selftests"):
        QUIET.expect(3)
        QUIET.advance("build vDSO on base")
        time.sleep(progress.SPINNER_AFTER + 0.1)  # no spinner either
    assert capsys.readouterr() == ("", "")
