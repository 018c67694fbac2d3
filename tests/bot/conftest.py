"""A real list archive for the bot: a public-inbox v2 inbox behind public-inbox-httpd on 127.0.0.1, started
once for the session; each test mirrors it with public-inbox-clone over HTTP, as a lore user would. And the
jobs table's and queue's real servers, PostgreSQL and redis-server (tests/bot/servers.py), and tests/mail's SMTP server."""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench._lore import Httpd, Inbox, make_inbox, start_httpd
from reviewer.bot.jobs import Jobs
from tests.bot.mails import mail
from tests.bot.pwserver import patchwork  # noqa: F401 (fixtures for the tests here)
from tests.bot.servers import pg_db, postgres_url, redis_url  # noqa: F401 (fixtures for the tests here)
from tests.mail.test_send import smtp  # noqa: F401 (a real SMTP server on 127.0.0.1: the outbox's tests)


@pytest.fixture(scope="session")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Inbox:
    tools = ("public-inbox-init", "public-inbox-mda", "public-inbox-httpd", "public-inbox-clone", "public-inbox-fetch")
    missing = [c for c in tools if shutil.which(c) is None]
    if missing:
        pytest.fail(f"public-inbox is not installed (missing {', '.join(missing)}): `./dev test` installs it as root")
    inbox = make_inbox(tmp_path_factory.mktemp("list-archive"))
    inbox.deliver(mail("first@example.org", "the list's first mail", "hello\n"))  # an empty inbox answers 404
    return inbox


@pytest.fixture(scope="session")
def server(archive: Inbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Httpd]:
    httpd = start_httpd(archive, tmp_path_factory.mktemp("list-httpd") / "httpd.log")
    yield httpd
    httpd.stop()


def clone(server: Httpd, dest: Path) -> Path:
    """A mirror of the served inbox, made as `public-inbox-clone URL DIR` makes it."""
    subprocess.run(["public-inbox-clone", "-q", server.url, str(dest)], check=True, capture_output=True, timeout=120)
    return dest


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The jobs table's database, for the jobs and outbox tests: SQLite in a state directory, or a throw-away
    PostgreSQL database (tests/bot/servers.py)."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'state' / 'jobs.db'}"
    return str(request.getfixturevalue("pg_db"))


@pytest.fixture
def jobs(url: str) -> Iterator[Jobs]:
    with Jobs(url) as table:
        yield table
