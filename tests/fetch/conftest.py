"""A real local lore: a public-inbox v2 inbox of our fixture threads behind public-inbox-httpd.

Nothing here leaves 127.0.0.1. Every test also gets `git config reviewer.loreUrl` pointing at a
closed loopback port, so a `review` call that forgot --lore-url fails fast instead of asking
the real lore, and fast retry settings so fault tests take a second, not a minute.
"""
from __future__ import annotations

import mailbox
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.conftest import FIXTURES, SERIES

INBOX = "test"
ADDRESS = "test@lists.example.org"
THREADS = [
    SERIES / "dmapool-v1-v2.mbox",
    SERIES / "loongarch-vdso-getrandom-v4.mbox",
    FIXTURES / "lore" / "partial-reroll.mbox",
    FIXTURES / "lore" / "shared-prefix.mbox",
]
CLOSED_URL = "http://127.0.0.1:9/nowhere/"  # the discard port: nothing listens there


@dataclass
class Inbox:
    """A public-inbox config with one inbox, and the environment its commands need."""

    root: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "HOME": str(self.root / "home"), "PI_CONFIG": str(self.root / "config")}


@dataclass
class Httpd:
    proc: subprocess.Popen[bytes]
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def url(self) -> str:
        return f"{self.base}{INBOX}/"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _make_inbox(root: Path) -> Inbox:
    inbox = Inbox(root)
    (root / "home").mkdir(parents=True)
    env = inbox.env
    subprocess.run(["public-inbox-init", "-V2", "-L", "full", INBOX, str(root / INBOX), f"http://127.0.0.1/{INBOX}", ADDRESS],
                   env=env, check=True, capture_output=True, timeout=60)
    subprocess.run(["git", "config", "-f", env["PI_CONFIG"], "publicinboxmda.spamcheck", "none"], env=env, check=True, timeout=30)
    for path in THREADS:
        for msg in mailbox.mbox(str(path)):
            subprocess.run(["public-inbox-mda", "--no-precheck"], input=msg.as_bytes(unixfrom=False),
                           env={**env, "ORIGINAL_RECIPIENT": ADDRESS}, check=True, capture_output=True, timeout=60)
    return inbox


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_httpd(inbox: Inbox, log: Path) -> Httpd:
    """Start public-inbox-httpd on a free loopback port and wait until it answers."""
    for _ in range(5):  # the port may be taken between choosing and binding it
        port = _free_port()
        with log.open("ab") as out:
            proc = subprocess.Popen(["public-inbox-httpd", "-W0", "-l", f"http://127.0.0.1:{port}"],
                                    env=inbox.env, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        httpd = Httpd(proc, port)
        if _wait_until_up(httpd):
            return httpd
        httpd.stop()
    raise RuntimeError(f"public-inbox-httpd did not come up; see {log}")


def _wait_until_up(httpd: Httpd, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and httpd.proc.poll() is None:
        try:
            if requests.get(httpd.url, timeout=2).status_code == 200:
                return True
        except requests.ConnectionError:
            pass
        time.sleep(0.05)
    return False


@pytest.fixture(scope="session")
def inbox(tmp_path_factory: pytest.TempPathFactory) -> Inbox:
    missing = [c for c in ("public-inbox-init", "public-inbox-mda", "public-inbox-httpd") if shutil.which(c) is None]
    if missing:
        pytest.fail(f"public-inbox is not installed (missing {', '.join(missing)}): `./dev test` installs it as root")
    return _make_inbox(tmp_path_factory.mktemp("public-inbox"))


@pytest.fixture(scope="session")
def lore(inbox: Inbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Httpd]:
    """The suite's local lore, shared by every test that does not stop it."""
    httpd = start_httpd(inbox, tmp_path_factory.mktemp("httpd") / "httpd.log")
    yield httpd
    httpd.stop()


@pytest.fixture(autouse=True)
def fast_and_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_LORE_RETRIES", "2")
    monkeypatch.setenv("REVIEWER_LORE_BACKOFF", "0.05")
    monkeypatch.setenv("REVIEWER_LORE_TIMEOUT", "1")
    subprocess.run(["git", "config", "--global", "reviewer.loreUrl", CLOSED_URL], check=True)
