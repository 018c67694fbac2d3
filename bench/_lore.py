"""A local lore: a public-inbox with one inbox, served by public-inbox-httpd on a loopback port.

The fetch tests (tests/fetch/conftest.py) and bench/cache_second_review.py start theirs with these
(bench/ does not import tests/); the bot's benches mirror it for the bot with bot_site()."""
from __future__ import annotations

import json
import mailbox
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import requests

INBOX = "test"
ADDRESS = "test@lists.example.org"


@dataclass
class Inbox:
    """A public-inbox config with one inbox, and the environment its commands need."""

    root: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "HOME": str(self.root / "home"), "PI_CONFIG": str(self.root / "config")}

    def deliver(self, message: bytes) -> None:
        """MESSAGE into the inbox, as the list's mail server would hand it over."""
        subprocess.run(["public-inbox-mda", "--no-precheck"], input=message, env={**self.env, "ORIGINAL_RECIPIENT": ADDRESS},
                       check=True, capture_output=True, timeout=60)


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


def make_inbox(root: Path, threads: Iterable[Path] = ()) -> Inbox:
    """A new inbox under ROOT holding every message of the mboxes THREADS."""
    inbox = Inbox(root)
    (root / "home").mkdir(parents=True)
    env = inbox.env
    subprocess.run(["public-inbox-init", "-V2", "-L", "full", INBOX, str(root / INBOX), f"http://127.0.0.1/{INBOX}", ADDRESS],
                   env=env, check=True, capture_output=True, timeout=60)
    subprocess.run(["git", "config", "-f", env["PI_CONFIG"], "publicinboxmda.spamcheck", "none"], env=env, check=True, timeout=30)
    for path in threads:
        for msg in mailbox.mbox(str(path)):
            inbox.deliver(msg.as_bytes(unixfrom=False))
    return inbox


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_httpd(inbox: Inbox, log: Path) -> Httpd:
    """Start public-inbox-httpd on a free loopback port and wait until it answers."""
    for _ in range(5):  # the port may be taken between choosing and binding it
        port = free_port()
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


def bot_site(work: Path, url: str, lists: Callable[[str], str], git_config: Mapping[str, str] | None = None) -> Path:
    """The bot's side of a bench: the archive at URL mirrored with public-inbox-clone into WORK/mirror, and the bot's
    configuration file in a git repository (WORK/bot: its From: address and GIT_CONFIG's keys); LISTS(the mirror's path,
    as a TOML string) gives its [lists.*] tables. The configuration file's path."""
    mirror = work / "mirror"
    subprocess.run(["public-inbox-clone", "-q", url, str(mirror)], check=True, capture_output=True, timeout=600)
    conf = work / "bot"
    conf.mkdir()
    subprocess.run(["git", "init", "-q", str(conf)], check=True)
    for key, value in {"user.name": "reviewer-bot", "user.email": "bot@example.org", **(git_config or {})}.items():
        subprocess.run(["git", "-C", str(conf), "config", key, value], check=True)
    config = conf / "bot.toml"
    config.write_text('[bot]\nhome = "state"\n\n' + lists(json.dumps(str(mirror))))
    return config
