"""A real local lore: a public-inbox v2 inbox of our fixture threads behind public-inbox-httpd.

Nothing here leaves 127.0.0.1. Every test also gets `git config reviewer.loreUrl` pointing at a
closed loopback port, so a `review` call that forgot --lore-url fails fast instead of asking
the real lore, and fast retry settings so fault tests take a second, not a minute.
"""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from bench._lore import ADDRESS, INBOX, Httpd, Inbox, make_inbox, start_httpd
from tests.conftest import FIXTURES, SERIES

THREADS = [
    SERIES / "dmapool-v1-v2.mbox",
    SERIES / "loongarch-vdso-getrandom-v4.mbox",
    FIXTURES / "lore" / "partial-reroll.mbox",
    FIXTURES / "lore" / "shared-prefix.mbox",
]
CLOSED_URL = "http://127.0.0.1:9/nowhere/"  # the discard port: nothing listens there
__all__ = ["ADDRESS", "CLOSED_URL", "INBOX", "THREADS", "Httpd", "Inbox", "start_httpd"]


@pytest.fixture(scope="session")
def inbox(tmp_path_factory: pytest.TempPathFactory) -> Inbox:
    missing = [c for c in ("public-inbox-init", "public-inbox-mda", "public-inbox-httpd") if shutil.which(c) is None]
    if missing:
        pytest.fail(f"public-inbox is not installed (missing {', '.join(missing)}): `./dev test` installs it as root")
    return make_inbox(tmp_path_factory.mktemp("public-inbox"), THREADS)


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
