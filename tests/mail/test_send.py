"""`review --send` against a real SMTP server on 127.0.0.1 (aiosmtpd), and a sendmail command."""
from __future__ import annotations

import contextlib
import email
import email.policy
import email.utils
import socket
import subprocess
import threading
import time
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

    async def handle_RCPT(self, _server: Any, _session: Any, envelope: Any, address: str, _options: list[str]) -> str:  # noqa: N802
        if address in self.refuse:
            return f"550 5.1.1 <{address}>: Recipient address rejected"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:  # noqa: N802
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content))
        return "250 Message accepted for delivery"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _deny(_server: Any, _session: Any, _envelope: Any, _mechanism: str, _auth_data: Any) -> AuthResult:
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
    asks.assert_one_line_error(ExitStatus.CONFIG, "--send asks for confirmation")  # before the review (tests/cli/test_preflight.py)
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
        ExitStatus.USAGE, "--trailer and --in-reply-to shape a reply: add --reply FILE")
    review(SERIES_DEMO, "--reply", "-", "--trailer", "nonsense", cwd=repo, tmp=tmp_path / "t2").assert_one_line_error(
        ExitStatus.USAGE, "--trailer 'nonsense'")
    subprocess.run(["git", "-C", str(repo), "config", "--unset", "user.email"], check=True)
    review(SERIES_DEMO, "--reply", "-", cwd=repo, tmp=tmp_path / "t3").assert_one_line_error(ExitStatus.CONFIG, "no sender address")
    subprocess.run(["git", "-C", str(repo), "config", "sendemail.smtpEncryption", "starttls"], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "sendemail.from", "a@example.org"], check=True)
    review(SERIES_DEMO, "--send", "--yes", cwd=repo, tmp=tmp_path / "t4").assert_one_line_error(ExitStatus.CONFIG, "smtpEncryption")


# --- long headers are folded (RFC 5322: lines of 78 preferred, 998 at most) ---------------------

SOLO = SERIES / "single-patch.mbox"
LONG_SUBJECT = "[PATCH] mm/dmapool: " + " ".join(f"word{i:02d}" for i in range(30)) + " and_a_token_" + "x" * 60
MANY_CC = [f"Reviewer Number {i:02d} <reviewer.{i:02d}@lists.example.org>" for i in range(36)] + [
    '"Doe, Jane" <jane.doe@example.org>', "Jörg Müller <joerg@example.org>", "Łukasz Żółw <lukasz@example.org>",
    "nobody-with-a-rather-long-mailbox-name-that-goes-on@subsystem.lists.example.org"]


def _long_headers_mbox(dest: Path) -> Path:
    """single-patch.mbox with a 200-character Subject and 40 Cc addresses (each folded as a mail client would)."""
    text = SOLO.read_text()
    assert len(LONG_SUBJECT) >= 200 and len(MANY_CC) == 40
    cc = "Cc: " + ",\n ".join(MANY_CC)
    subject = "Subject: " + LONG_SUBJECT.replace(" word15 ", "\n word15 ")
    text = text.replace("Cc: Paula Pool <ppool@example.org>", cc)
    text = text.replace("Subject: [PATCH] mm/dmapool: Document the free list head", subject)
    dest.write_text(text)
    return dest


def _header_lines(data: bytes) -> list[bytes]:
    return data.replace(b"\r\n", b"\n").split(b"\n\n", 1)[0].split(b"\n")


def _same_headers(data: bytes, tmp_path: Path) -> None:
    """Every header line is within 78 characters (the Subject's 60-character token allows a little more;
    never 998), and Python's parser and git mailinfo read back exactly the addresses and the subject."""
    lines = _header_lines(data)
    assert max(len(ln) for ln in lines) <= 998
    long = [ln for ln in lines if len(ln) > 78]
    assert all(len(ln.split()) == 1 for ln in long), long  # only a word that no fold can cut (the long mailbox)
    msg = email.message_from_bytes(data, policy=email.policy.default)
    want = [email.utils.parseaddr(a)[1] for a in MANY_CC]
    got = [a.addr_spec for a in msg["Cc"].addresses]
    assert got == ["linux-mm@lists.example.org", *want]
    names = {a.addr_spec: a.display_name for a in msg["Cc"].addresses}
    assert names["joerg@example.org"] == "Jörg Müller" and names["jane.doe@example.org"] == "Doe, Jane"
    assert msg["Subject"] == f"Re: {LONG_SUBJECT}"
    assert msg["In-Reply-To"] == "<20240823182000.3131-1-solo@example.org>"
    info = subprocess.run(["git", "mailinfo", "-k", str(tmp_path / "mi-msg"), str(tmp_path / "mi-patch")], input=data,
                          capture_output=True, check=True, cwd=tmp_path).stdout.decode()
    assert f"Subject: Re: {LONG_SUBJECT}\n" in info and "Email: rev@example.org\n" in info


def test_long_headers_are_folded_in_the_reply_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 1)
    out = tmp_path / "reply.eml"
    result = review(_long_headers_mbox(tmp_path / "long.mbox"), "--reply", out, "--format", "json", cwd=repo, tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    data = out.read_bytes()
    cc = [ln for ln in _header_lines(data) if ln.startswith(b"Cc:")]
    assert cc and len(cc[0]) <= 78  # folded: the first line holds a few addresses, the rest follow
    _same_headers(data, tmp_path)


def test_long_headers_arrive_intact_over_smtp(tmp_path: Path, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    inbox.refuse.clear()
    repo = _repo(tmp_path, port)
    result = review(_long_headers_mbox(tmp_path / "long.mbox"), "--send", "--yes", "--format", "json", cwd=repo, tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    (sender, rcpts, data), = inbox.received
    assert rcpts == ["solo@example.org", "linux-mm@lists.example.org", *(email.utils.parseaddr(a)[1] for a in MANY_CC)]
    assert data.count(b"\n") == data.count(b"\r\n")  # CRLF on the wire, folded lines too
    _same_headers(data, tmp_path)


# --- a reply to a Message-ID the tool made up ---------------------------------------------------

REAL_ID = "20240823182000.3131-1-solo@example.org"


def _no_msgid_mbox(dest: Path) -> Path:
    """The series as plain `git format-patch` writes it: no Message-Id (the tool makes one up)."""
    text = SOLO.read_text()
    assert f"Message-Id: <{REAL_ID}>\n" in text
    dest.write_text(text.replace(f"Message-Id: <{REAL_ID}>\n", ""))
    return dest


def test_a_made_up_parent_is_written_with_a_warning(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 1)
    out = tmp_path / "reply.eml"
    result = review(_no_msgid_mbox(tmp_path / "solo.mbox"), "--reply", out, "--format", "json", cwd=repo, tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    warning = [ln for ln in result.stderr.splitlines() if ln.startswith("review: warning:")]
    assert len(warning) == 1 and "a Message-ID the tool made up" in warning[0] and "--in-reply-to" in warning[0], result.stderr
    msg = email.message_from_bytes(out.read_bytes(), policy=email.policy.default)
    assert msg["In-Reply-To"].endswith("@reviewer.invalid>") and msg["In-Reply-To"] in warning[0]


def test_a_made_up_parent_is_not_sent(tmp_path: Path, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    inbox.refuse.clear()
    repo = _repo(tmp_path, port)
    result = review(_no_msgid_mbox(tmp_path / "solo.mbox"), "--send", "--yes", "--format", "json", cwd=repo, tmp=tmp_path / "tmp")
    err = [ln for ln in result.stderr.splitlines() if ln.startswith("review: error")]
    assert result.rc == ExitStatus.FETCH and len(err) == 1, result.stderr
    assert "@reviewer.invalid>, a Message-ID the tool made up" in err[0] and "not sent" in err[0]
    assert "--in-reply-to" in result.stderr
    assert inbox.received == [] and len(_unsent()) == 1


def test_in_reply_to_gives_the_real_parent(tmp_path: Path, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    inbox.refuse.clear()
    repo = _repo(tmp_path, port)
    result = review(_no_msgid_mbox(tmp_path / "solo.mbox"), "--send", "--yes", "--in-reply-to",
                    f"https://lore.kernel.org/linux-mm/{REAL_ID}/",
                    "--format", "json", cwd=repo, tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    assert "warning" not in result.stderr
    (_, _, data), = inbox.received
    msg = email.message_from_bytes(data, policy=email.policy.default)
    assert msg["In-Reply-To"] == msg["References"] == f"<{REAL_ID}>"
    assert b"reviewer.invalid" not in data


def test_in_reply_to_shapes_one_reply_only(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 1)
    review(SOLO, "--in-reply-to", f"<{REAL_ID}>", cwd=repo, tmp=tmp_path / "t1").assert_one_line_error(
        ExitStatus.USAGE, "--trailer and --in-reply-to shape a reply: add --reply FILE")
    review(SOLO, "--reply", "-", "--per-patch", "--in-reply-to", f"<{REAL_ID}>", cwd=repo, tmp=tmp_path / "t2").assert_one_line_error(
        ExitStatus.USAGE, "--in-reply-to names one message")
    review(SOLO, "--reply", "-", "--in-reply-to", "20240823182000.3131-1-solo", cwd=repo, tmp=tmp_path / "t3").assert_one_line_error(
        ExitStatus.USAGE, "not a Message-ID")


# --- the SMTP conversation has a deadline -----------------------------------------------------------


@pytest.fixture
def dribbling_smtp() -> Iterator[int]:
    """An SMTP server that sends its greeting one byte a second: no read ever times out."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                for byte in b"220 slow.example.org ESMTP at a byte a second\r\n":
                    conn.sendall(bytes([byte]))
                    if stop.wait(1):
                        return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    listener.close()


def test_a_byte_a_second_smtp_server_hits_the_deadline(tmp_path: Path, dribbling_smtp: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_SMTP_DEADLINE", "2")
    repo = _repo(tmp_path, dribbling_smtp)
    start = time.monotonic()
    result = review(SOLO, "--send", "--yes", "--format", "json", cwd=repo, tmp=tmp_path / "tmp")
    took = time.monotonic() - start
    err = [ln for ln in result.stderr.splitlines() if ln.startswith("review: error")]
    assert result.rc == ExitStatus.FETCH and len(err) == 1, result.stderr
    assert f"127.0.0.1:{dribbling_smtp}: the SMTP conversation did not end within the 2 s deadline (REVIEWER_SMTP_DEADLINE)" in err[0]
    assert took < 2 + 3, took  # the deadline, and the command's own start-up and review
    assert len(_unsent()) == 1
