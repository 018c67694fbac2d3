"""First use, as a new user meets the tool: `./dev demo` installs only what the demo needs, `review --help`
is whole when piped and names the other commands, log paths are printed whole, a selftest run says
what runs and how many are left."""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from rich.console import Console

from reviewer.cli.commands import sub_app
from reviewer.cli.review import review_app
from reviewer.model import Review, StageResult, StageStatus
from reviewer.progress import Display
from reviewer.report import terminal
from reviewer.selftests import stage as selftest_stage
from reviewer.selftests.choose import Chosen, TestRef
from tests.conftest import ROOT

# --- ./dev -------------------------------------------------------------------------------------

FAKE_DPKG = "#!/bin/sh\nexit 1\n"  # dpkg-query -W: nothing is installed
FAKE_APT = '#!/bin/sh\necho "$@" >> "$APT_LOG"\n'


def _dev(tmp_path: Path, *args: str) -> list[str]:
    """Run ./dev as root (a fake `id` says so) on a machine where no Debian package is installed (dpkg-query and apt-get are
    fakes that record what they are asked), with a ready venv whose `review` and `python` are fakes too;
    return the packages apt-get was asked to install."""
    bin_dir, venv = tmp_path / "bin", tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    bin_dir.mkdir()
    for path, text in ((bin_dir / "dpkg-query", FAKE_DPKG), (bin_dir / "apt-get", FAKE_APT), (bin_dir / "id", "#!/bin/sh\necho 0\n"),
                       (venv / "bin" / "python", "#!/bin/sh\nexit 0\n"), (venv / "bin" / "review", "#!/bin/sh\nexit 0\n")):
        path.write_text(text)
        path.chmod(0o755)
    (venv / ".reviewer-installed").touch()
    os.utime(venv / ".reviewer-installed", (2**31, 2**31))  # newer than pyproject.toml: no pip install
    log = tmp_path / "apt.log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "REVIEWER_VENV": str(venv), "APT_LOG": str(log)}
    done = subprocess.run([str(ROOT / "dev"), *args], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    installs = [line.split() for line in log.read_text().splitlines() if " install " in f" {line} "]
    assert len(installs) == 1, log.read_text()
    return [word for word in installs[0] if not word.startswith("-") and word != "install"]


def test_dev_demo_installs_only_what_the_demo_needs(tmp_path: Path) -> None:
    demo = _dev(tmp_path / "demo", "demo")
    assert sorted(demo) == ["bubblewrap", "gcc", "git", "libc6-dev", "make", "python3-venv"]
    everything = _dev(tmp_path / "deps", "deps")
    assert set(demo) < set(everything)
    assert {"qemu-system-x86", "public-inbox", "linux-source-6.12", "codespell", "perl", "flex", "bison"} <= set(everything)
    assert sorted(_dev(tmp_path / "test", "test", "--version")) == sorted(everything)


# --- review --help -----------------------------------------------------------------------------

def _help(*args: str, columns: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TERMINAL_WIDTH")}
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run([sys.executable, "-m", "reviewer", *args, "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _option_names(app: typer.Typer, name: str | None = None) -> list[str]:
    command = typer.main.get_command(app)
    if name is not None:
        command = typer.main.get_group(app).commands[name]
    return [opt for p in command.params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("--")]


@pytest.mark.parametrize("columns", [None, "80"])
def test_help_shows_every_option_whole_and_names_the_other_commands(columns: str | None) -> None:
    """Piped (rich's 80 columns by default) or on an 80-column terminal, no option name is cut (piped,
    nothing at all is: at 80 columns a long word of a help text, a URL, still is)."""
    text = _help(columns=columns)
    assert not re.search(r"-[\w-]*…", text)
    assert columns is not None or "…" not in text
    words = set(re.findall(r"--[a-z][a-z-]*", text))
    names = _option_names(review_app)
    assert len(names) > 30 and [n for n in names if n not in words] == []
    for command in ("demo", "rules", "install-hook", "uninstall-hook"):
        assert re.search(rf"review {command}\s+\S", text), (command, text)
    assert "review pre-push" not in text  # the hook's own command stays hidden


def test_piped_help_is_as_wide_as_the_report() -> None:
    lines = _help().splitlines()
    assert max(len(line) for line in lines) == 120
    assert any("--checkpatch-strict" in line and "Run checkpatch.pl --strict (its CHECK reports, as info)." in line for line in lines)


@pytest.mark.parametrize("name", ["rules", "demo", "install-hook", "uninstall-hook"])
def test_the_other_commands_help_still_works(name: str) -> None:
    text = _help(name)
    assert f"Usage: review {name} [OPTIONS]" in text and "…" not in text
    words = set(re.findall(r"--[a-z][a-z-]*", text))
    assert [n for n in _option_names(sub_app, name) if n not in words] == []


# --- the terminal report's log paths -----------------------------------------------------------

def test_a_log_path_is_printed_whole_at_80_columns(tmp_path: Path) -> None:
    logs = tmp_path / "a-rather-long-state-directory" / "reviewer" / "logs" / "20261201T164500Z-123456" / "selftests"
    review = Review(None, stages=(StageResult("selftests", StageStatus.OK, 12.84,
                                              f"vDSO: 12 runs, 6 benchmark figures; output in {logs}"),))
    out = io.StringIO()
    terminal.render(review, Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    assert f"Logs  {logs} (the selftests' output)\n" in text  # one line, whole, however long
    assert "…" not in text and text.count(str(logs)) == 1 and "output in" not in text  # the table points at it


# --- progress during a real selftest run ---------------------------------------------------------

def test_a_selftest_run_shows_each_build_and_test_and_how_many_are_left(kernel_repo: Path, tmp_path: Path) -> None:
    out = io.StringIO()
    display = Display(Console(file=out, force_terminal=True, width=200, color_system=None))
    plan = selftest_stage.Plan((Chosen(TestRef("vDSO", "vdso_test_gettimeofday"), ("asked",)),), envs=("plain", "timens"))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with display.stage("selftests"):
        outcome = selftest_stage.run(plan, {"base": kernel_repo, "patched": kernel_repo}, scratch, display)
    assert [(r.tree, r.env, str(r.result)) for r in outcome.runs] == [
        ("base", "plain", "pass"), ("patched", "plain", "pass"), ("base", "timens", "pass"), ("patched", "timens", "pass")]
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "\n", out.getvalue().replace("\r", "\n"))
    for line in ("selftests [1/2, 1 left]: build vDSO on base", "selftests [2/2, 0 left]: build vDSO on patched",
                 "selftests [3/6, 3 left]: vDSO:vdso_test_gettimeofday on base (plain)",
                 "selftests [4/6, 2 left]: vDSO:vdso_test_gettimeofday on patched (plain)",
                 "selftests [5/6, 1 left]: vDSO:vdso_test_gettimeofday on base (timens)",
                 "selftests [6/6, 0 left]: vDSO:vdso_test_gettimeofday on patched (timens)"):
        assert line in drawn, (line, drawn)
