"""Hermetic tests: a private HOME and XDG dirs, a pinned git identity, no network but loopback."""
from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewer.tree.plainrepo import build_base_repo

pytest_plugins = ["tests.browsing"]  # the session's one browser (tests/browsing.py)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SERIES = FIXTURES / "series"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/report/golden/* from the current output")
    parser.addoption("--update-screenshots", action="store_true",
                     help="copy the HTML page's screenshot to docs/img/review-page.png (tests/report/test_html_browser.py) and the "
                          "dashboard's to docs/img/bot-*.png (tests/bot/test_web_browser.py)")


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    for var, sub in (("HOME", ""), ("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"),
                     ("XDG_STATE_HOME", ".local/state"), ("XDG_DATA_HOME", ".local/share")):
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Runner")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "runner@example.org")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Runner")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "runner@example.org")
    (home / ".gitconfig").write_text("[commit]\n\tgpgsign = false\n[init]\n\tdefaultBranch = master\n")
    monkeypatch.setattr(socket.socket, "connect", _loopback_only(socket.socket.connect))
    yield


def _loopback_only(connect):  # type: ignore[no-untyped-def]
    def guarded(self, address):  # type: ignore[no-untyped-def]
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and not (host.startswith("127.") or host in ("::1", "localhost") or host.startswith("/")):
            raise OSError(f"test tried to reach the network: {address!r}")
        return connect(self, address)

    return guarded


@pytest.fixture(scope="session")
def mini_tree_src() -> Path:
    return FIXTURES / "kernel-mini"


@pytest.fixture
def kernel_repo(tmp_path: Path, mini_tree_src: Path) -> Path:
    """A fresh git repo of the bundled kernel-shaped tree (the demo series' base)."""
    dest = tmp_path / "linux"
    build_base_repo(mini_tree_src, dest)
    return dest


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout
