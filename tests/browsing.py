"""The one browser of a test session (Debian's chromium, headless, driven by Playwright for Python) and where the
screenshots go: fixtures for every browser test (tests/report/test_html_browser.py, tests/bot/test_web_browser.py),
registered once in tests/conftest.py. Playwright's sync API runs one instance per thread: a session fixture
imported into two modules would be two fixtures, and the second would fail to start beside the first."""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"  # Debian's; `playwright install` (a download) is never run
WIDTH = 1280


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    playwright = pytest.importorskip("playwright.sync_api", reason="the test extra installs playwright")
    if not Path(CHROMIUM).is_file():
        pytest.skip("needs Debian's chromium (./dev deps installs it)")
    # Started before the hermetic fixture gives each test its HOME: chromium gets one of its own (it keeps its
    # crash reports under ~/.config/chromium; Playwright gives it a temporary profile for the rest).
    home = tmp_path_factory.mktemp("chromium-home")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache")}
    with playwright.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, env=env)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = Path(os.environ.get("REVIEWER_SCREENSHOTS") or tmp_path_factory.getbasetemp() / "screenshots")
    where.mkdir(parents=True, exist_ok=True)
    return where
