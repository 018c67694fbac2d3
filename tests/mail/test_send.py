"""`review --send` against a real SMTP server on 127.0.0.1 (aiosmtpd), and a sendmail command."""
from __future__ import annotations

import email
import email.policy
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from reviewer.errors import ExitStatus
from tests.conftest import SERIES
from tests.helpers import review
from tests.report.test_reply import no_select_mbox

REFUSED = "jrandom@example.org"
SERIES_DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
CC = ["loongarch@lists.example.org", "chenhuai@example.org", "wangxue@example.org", "jrandom@example.org",
      "linux-kselftest@vger.example.org"]


@dataclass
class Inbox:
    refuse: set[str] = field(default_factory=set)
    received: list[tuple[str, list[str], bytes]] = field(default_factory=list)

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: list[str]) -> str:  # noqa: N802
        if address in self.refuse:
            return f"550 5.1.1 <{address}>: Recipient address rejected"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content))
        return "250 Message accepted for delivery"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _deny(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
    return AuthResult(success=False, handled=False)


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox(refuse={REFUSED})
    port = _free_port()
    ctl = Controller(inbox, hostname="127.0.0.1", port=port)
    ctl.start()
    yield inbox, port
    ctl.stop()


@pytest.fixture
def smtp_auth() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    port = _free_port()
    ctl = Controller(inbox, hostname="127.0.0.1", port=port, authenticator=_deny, auth_require_tls=False)
    ctl.start()
    yield inbox, port
    ctl.stop()


def _repo(tmp_path: Path, port: int, **extra: str) -> Path:
    repo = tmp_path / "me"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    settings = {"user.name": "Rev Iewer", "user.email": "rev@example.org", "sendemail.smtpServer": "127.0.0.1",
                "sendemail.smtpServerPort": str(port), **extra}
    for key, value in settings.items():
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    return repo


def _unsent() -> list[Path]:
    import os

    folder = Path(os.environ["XDG_STATE_HOME"]) / "reviewer" / "unsent"
    return sorted(folder.glob("*.eml")) if folder.is_dir() else []


def test_send_delivers_threaded_wrapped_reply(tmp_path: Path, kernel_repo: Path, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    inbox.refuse.clear()
    repo = _repo(tmp_path, port)
    mbox = no_select_mbox(tmp_path / "no-select.mbox")
    result = review(mbox, "--tree", kernel_repo, "--no-tests", "--send", "--yes", cwd=repo, tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.FINDINGS, result.stderr  # the error finding still sets the exit code
    assert "review: sent <" in result.stderr and f"127.0.0.1:{port}" in result.stderr
    assert len(inbox.received) == 1
    sender, rcpts, data = inbox.received[0]
    assert sender == "rev@example.org"
    assert rcpts == ["xry111@example.org", *CC]
    msg = email.message_from_bytes(data, policy=email.policy.default)
    assert msg["From"] == "Rev Iewer <rev@example.org>"
    assert msg["To"] == "Xi Ruo <xry111@example.org>"
    assert msg["In-Reply-To"] == "<20240816110717.10249-1-xry111@example.org>"
    assert msg["References"] == "<20240816110717.10249-1-xry111@example.org>"
    assert msg["Subject"] == "Re: [PATCH v4 0/4] LoongArch: vDSO: Wire up getrandom() vDSO implementation"
    assert msg["Message-ID"].endswith("@example.org>") and msg["Date"]
    text = data.decode().replace("\r\n", "\n")
    assert "\n> diff --git a/arch/loongarch/Kconfig b/arch/loongarch/Kconfig\n> @@ -23,6 +23,7 @@ config LOONGARCH\n" in text
    assert "\n> +\t# select VDSO_GETRANDOM\n" in text
    body = text.split("\n\n", 1)[1]
    assert all(len(ln) <= 72 for ln in body.splitlines() if not ln.startswith((">", "  ")))
    assert "\n-- \n" in body and "Reviewed-by" not in body
    assert "\n  apply: 4 of 4 patches applied to 6bbeb48ebf41" in body
    result.assert_nothing_left()


def test_refused_recipient_saves_the_message(tmp_path: Path, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    repo = _repo(tmp_path, port)
    mbox = no_select_mbox(tmp_path / "no-select.mbox")
    result = review(mbox, "--send", "--yes", "--format", "json", cwd=repo, tmp=tmp_path / "tmp")
    lines = result.stderr.splitlines()
    result = type(result)(result.rc, result.stdout, "\n".join(ln for ln in lines if ln.startswith(("review: error", "hint"))), result.tmp)
    result.assert_one_line_error(ExitStatus.FETCH, f"127.0.0.1:{port} refused the recipient {REFUSED}: 550")
    assert inbox.received == []
    saved = _unsent()
    assert len(saved) == 1 and str(saved[0]) in result.stderr
    assert b"In-Reply-To: <20240816110717.10249-1-xry111@example.org>" in saved[0].read_bytes()


def test_failed_login_saves_the_message(tmp_path: Path, smtp_auth: tuple[Inbox, int]) -> None:
    inbox, port = smtp_auth
    repo = _repo(tmp_path, port, **{"sendemail.smtpUser": "rev", "sendemail.smtpPass": "wrong"})
    result = review(SERIES_DEMO, "--send", "--yes", "--reply", tmp_path / "reply.eml", cwd=repo, tmp=tmp_path / "tmp")
    err = [ln for ln in result.stderr.splitlines() if ln.startswith("review: error")]
    assert result.rc == ExitStatus.FETCH and len(err) == 1, result.stderr
    assert f"127.0.0.1:{port} rejected the login of rev: 535" in err[0]
    assert "Traceback" not in result.stderr
    assert inbox.received == [] and len(_unsent()) == 1
    assert (tmp_path / "reply.eml").read_bytes() == _unsent()[0].read_bytes()


def test_unreachable_server(tmp_path: Path) -> None:
    repo = _repo(tmp_path, _free_port())
    result = review(SERIES_DEMO, "--send", "--yes", "--reply", "-", cwd=repo, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "cannot reach 127.0.0.1:")
    assert "Connection refused" in result.stderr and len(_unsent()) == 1
    assert result.stdout.startswith("From: Rev Iewer <rev@example.org>\n")  # --reply - : the mail is the output


def test_confirmation_and_dry_run(tmp_path: Path, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    repo = _repo(tmp_path, port)
    asks = review(SERIES_DEMO, "--send", cwd=repo, stdin=b"", tmp=tmp_path / "tmp")
    asks.assert_one_line_error(ExitStatus.USAGE, "--send asks for confirmation")
    dry = review(SERIES_DEMO, "--dry-run", cwd=repo, tmp=tmp_path / "tmp")
    assert dry.rc == ExitStatus.OK, dry.stderr
    assert "\nSubject: Re: [PATCH v4 0/4]" in dry.stdout and "Series" in dry.stdout
    assert inbox.received == []


def test_sendmail_cmd(tmp_path: Path) -> None:
    fake = tmp_path / "fake-sendmail"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/args\ncat > {tmp_path}/msg\n')
    fake.chmod(0o755)
    repo = _repo(tmp_path, 1, **{"sendemail.sendmailCmd": str(fake), "sendemail.from": "Other Me <other@example.org>"})
    result = review(SERIES_DEMO, "--send", "--yes", "--reply-policy", "author", cwd=repo, tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    assert (tmp_path / "args").read_text().split() == ["-f", "other@example.org", "xry111@example.org"]
    assert b"From: Other Me <other@example.org>\n" in (tmp_path / "msg").read_bytes()


def test_bad_reply_options(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 1)
    review(SERIES_DEMO, "--trailer", "Tested-by: X <x@example.org>", cwd=repo, tmp=tmp_path / "t1").assert_one_line_error(
        ExitStatus.USAGE, "--per-patch and --trailer shape a reply")
    review(SERIES_DEMO, "--reply", "-", "--trailer", "nonsense", cwd=repo, tmp=tmp_path / "t2").assert_one_line_error(
        ExitStatus.USAGE, "--trailer 'nonsense'")
    subprocess.run(["git", "-C", str(repo), "config", "--unset", "user.email"], check=True)
    review(SERIES_DEMO, "--reply", "-", cwd=repo, tmp=tmp_path / "t3").assert_one_line_error(ExitStatus.CONFIG, "no sender address")
    subprocess.run(["git", "-C", str(repo), "config", "sendemail.smtpEncryption", "starttls"], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "sendemail.from", "a@example.org"], check=True)
    review(SERIES_DEMO, "--send", "--yes", cwd=repo, tmp=tmp_path / "t4").assert_one_line_error(ExitStatus.CONFIG, "smtpEncryption")





