"""The fuzz tier's counts by exit code, at the end of the run: what the tier did, not only that it passed."""
from __future__ import annotations

import sys

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    fuzz = sys.modules.get("tests.fuzz.test_mail_fuzz")  # only when its tests ran
    if fuzz is not None and (COUNTS := fuzz.COUNTS):
        by_code = ", ".join(f"exit {code}: {n}" if code != "hang" else f"hangs: {n}" for code, n in sorted(COUNTS.items()))
        terminalreporter.write_line(f"mail fuzz: {sum(COUNTS.values())} mails reviewed in-process ({by_code})")
