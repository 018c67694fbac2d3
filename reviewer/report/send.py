"""Send the reply: SMTP or a sendmail command, configured in git config as git send-email reads it.

Keys (https://git-scm.com/docs/git-send-email#_configuration): sendemail.from,
sendemail.smtpServer (an absolute path there means a sendmail-like program),
sendemail.smtpServerPort, sendemail.smtpEncryption (ssl | tls | none),
sendemail.smtpUser, sendemail.smtpPass (else `git credential fill`), sendemail.smtpDomain,
sendemail.sendmailCmd, sendemail.envelopeSender. A failure never loses the message: it is
saved first, and the error names the file.

The SMTP conversation as a whole has a deadline, REVIEWER_SMTP_DEADLINE (seconds, default 120;
a server that answers a byte a second never trips the per-read timeout), and a sendmail command
is killed at it. A reply that answers a Message-ID the tool made up (reviewer/report/email.py)
is never sent.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import email.utils
import shlex
import smtplib
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from reviewer import config, private
from reviewer.errors import CommandError, ConfigError, ExitStatus, ReviewerError
from reviewer.model import address
from reviewer.proc import run
from reviewer.report.message import POLICY, as_bytes, invented_parent
from reviewer.run import deadline
from reviewer.store import dirs
from reviewer.tree import git as tree_git

TIMEOUT = 60.0  # per SMTP command; the whole conversation has REVIEWER_SMTP_DEADLINE


class SendError(ReviewerError):
    """The message could not be delivered (exit 4, like a failed fetch: the network said no)."""

    status = ExitStatus.FETCH


@dataclass(frozen=True)
class Transport:
    server: str = "localhost"
    port: int | None = None
    encryption: str = ""  # "" | ssl | tls
    user: str = ""
    password: str = ""
    domain: str = ""  # the EHLO name
    sendmail_cmd: str = ""  # a shell command; used instead of SMTP when set
    envelope_sender: str = ""

    def where(self) -> str:
        return f"`{self.sendmail_cmd}`" if self.sendmail_cmd else f"{self.server}:{self.real_port}"

    @property
    def real_port(self) -> int:
        return self.port or (465 if self.encryption == "ssl" else 25)


def git_config(cwd: Path, key: str) -> str:
    return tree_git.config_value(cwd, key)


def sender(cwd: Path) -> str:
    """sendemail.from, else `user.name <user.email>`, as git send-email chooses the From: line."""
    configured = git_config(cwd, "sendemail.from")
    if configured:
        return configured
    name, addr = git_config(cwd, "user.name"), git_config(cwd, "user.email")
    if not addr:
        raise ConfigError("no sender address: git config sendemail.from and user.email are both unset",
                          'set one, e.g. git config --global user.email "you@example.org"')
    return address(name, addr)


def transport(cwd: Path) -> Transport:
    server = git_config(cwd, "sendemail.smtpServer")
    cmd = git_config(cwd, "sendemail.sendmailCmd")
    if server.startswith("/"):  # git send-email: an absolute path is a sendmail program
        cmd, server = cmd or f"{shlex.quote(server)} -i", ""
    port_text = git_config(cwd, "sendemail.smtpServerPort")
    enc = git_config(cwd, "sendemail.smtpEncryption").lower()
    if enc not in ("", "ssl", "tls", "none"):
        raise ConfigError(f"git config sendemail.smtpEncryption: {enc!r} is not ssl, tls or none", "set it to ssl, tls or none")
    if port_text and not port_text.isdigit():
        raise ConfigError(f"git config sendemail.smtpServerPort: {port_text!r} is not a port number", "set it to a number, e.g. 587")
    return Transport(
        server=server or "localhost", port=int(port_text) if port_text else None, encryption="" if enc == "none" else enc,
        user=git_config(cwd, "sendemail.smtpUser"), password=git_config(cwd, "sendemail.smtpPass"),
        domain=git_config(cwd, "sendemail.smtpDomain"), sendmail_cmd=cmd,
        envelope_sender=git_config(cwd, "sendemail.envelopeSender"),
    )


def envelope(msg: EmailMessage) -> list[str]:
    return [a for _, a in email.utils.getaddresses([str(v) for h in ("To", "Cc", "Bcc") for v in msg.get_all(h, [])]) if a]


def send(msg: EmailMessage, t: Transport, cwd: Path) -> None:
    """Deliver MSG; on any failure save it and raise SendError naming the saved file."""
    try:
        deliver(msg, t, cwd)
    except SendError as exc:
        path = save_unsent(msg)
        raise SendError(f"{exc.message}; the message was not sent and is saved in {path}",
                        f"{exc.hint} {path} and send it with `git send-email`" if exc.hint
                        else f"fix the problem, then send it with `git send-email {path}`") from exc


def deliver(msg: EmailMessage, t: Transport, cwd: Path, recipients: Sequence[str] = ()) -> None:
    """Deliver MSG to RECIPIENTS (default: its To, Cc and Bcc) or raise SendError; nothing is saved (the bot's
    outbox keeps its own copy and tries again)."""
    invented = invented_parent(msg)
    if invented is not None:
        raise SendError(f"the reply answers {invented}, a Message-ID the tool made up (the mail it answers has none)",
                        "review again with --in-reply-to MSGID (the real id, e.g. from lore), or fix In-Reply-To: in")
    rcpts = list(recipients) or envelope(msg)
    if t.sendmail_cmd:
        _sendmail(msg, t, cwd, rcpts)
    else:
        _smtp(msg, t, cwd, rcpts)


def _sendmail(msg: EmailMessage, t: Transport, cwd: Path, rcpts: list[str]) -> None:
    sender_addr = t.envelope_sender or email.utils.parseaddr(str(msg["From"]))[1]
    args = ["sh", "-c", f'{t.sendmail_cmd} "$@"', "sendmail", "-f", sender_addr, *rcpts]
    try:
        run(args, cwd=cwd, input=as_bytes(msg), timeout=config.env_number("REVIEWER_SMTP_DEADLINE"))
    except CommandError as exc:
        raise SendError(f"sendemail.sendmailCmd {exc.message}") from exc


def _smtp(msg: EmailMessage, t: Transport, cwd: Path, rcpts: list[str]) -> None:
    seconds = config.env_number("REVIEWER_SMTP_DEADLINE")
    # A credential helper may prompt for the password: asked before the clock starts.
    cred = _credential(cwd, "fill", t, {}) if t.user and not t.password else None
    try:
        with deadline.watching(deadline.Watch(seconds)) as watch, _connect(t, min(TIMEOUT, seconds)) as smtp:
            if t.user:
                _login(smtp, t, cwd, cred)
            sender_addr = t.envelope_sender or email.utils.parseaddr(str(msg["From"]))[1]
            _transaction(smtp, sender_addr, rcpts, msg.as_bytes(policy=POLICY.clone(linesep="\r\n")))  # SMTP wants CRLF
    except (smtplib.SMTPException, ssl.SSLError, OSError) as exc:
        if watch.fired:  # the watch cut the socket: whatever smtplib says, the time was up
            raise SendError(f"{t.where()}: the SMTP conversation did not end within the {seconds:g} s deadline "
                            "(REVIEWER_SMTP_DEADLINE)") from exc
        raise _smtp_error(exc, t) from exc


def _smtp_error(exc: Exception, t: Transport) -> SendError:
    """One line for what went wrong, naming the server (and the recipient, sender or user it refused)."""
    where = t.where()
    match exc:
        case smtplib.SMTPRecipientsRefused():
            first, (code, text) = next(iter(exc.recipients.items()))
            return SendError(f"{where} refused the recipient {first}: {code} {_t(text)}")
        case smtplib.SMTPAuthenticationError():
            return SendError(f"{where} rejected the login of {t.user}: {exc.smtp_code} {_t(exc.smtp_error)}")
        case smtplib.SMTPSenderRefused():
            return SendError(f"{where} refused the sender {exc.sender}: {exc.smtp_code} {_t(exc.smtp_error)}")
        case smtplib.SMTPResponseException():
            return SendError(f"{where} answered {exc.smtp_code} {_t(exc.smtp_error)}")
        case smtplib.SMTPException() | ssl.SSLError():
            return SendError(f"{where}: {exc}")
        case TimeoutError():
            return SendError(f"cannot reach {where}: no answer within {TIMEOUT:g} s")
        case OSError():
            return SendError(f"cannot reach {where}: {exc.strerror or exc}")
    return SendError(f"{where}: {exc}")


def _transaction(smtp: smtplib.SMTP, sender_addr: str, rcpts: list[str], data: bytes) -> None:
    """MAIL, every RCPT, then DATA only if all were accepted: never a partial delivery
    (smtplib.sendmail sends as soon as one recipient is accepted)."""
    smtp.ehlo_or_helo_if_needed()
    code, text = smtp.mail(sender_addr)
    if code != 250:
        raise smtplib.SMTPSenderRefused(code, text, sender_addr)
    for rcpt in rcpts:
        code, text = smtp.rcpt(rcpt)
        if code not in (250, 251):
            smtp.rset()
            raise smtplib.SMTPRecipientsRefused({rcpt: (code, text)})
    code, text = smtp.data(data)
    if code != 250:
        raise smtplib.SMTPDataError(code, text)


class _Watched(smtplib.SMTP):
    """smtplib that gives its socket to the thread's deadline watch (reviewer/run/deadline.py), and
    again after STARTTLS (the TLS socket replaces the plain one)."""

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        sock: socket.socket = super()._get_socket(host, port, timeout)  # type: ignore[misc]
        _watch(sock)
        return sock

    def starttls(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        reply: tuple[int, bytes] = super().starttls(*args, **kwargs)
        _watch(self.sock)
        return reply


class _WatchedSSL(_Watched, smtplib.SMTP_SSL):
    pass


def _watch(sock: socket.socket | None) -> None:
    watch = deadline.current()
    if watch is not None and sock is not None:
        watch.add(sock)


def _connect(t: Transport, timeout: float) -> smtplib.SMTP:
    local = t.domain or None
    if t.encryption == "ssl":
        return _WatchedSSL(t.server, t.real_port, local_hostname=local, timeout=timeout, context=ssl.create_default_context())
    smtp = _Watched(t.server, t.real_port, local_hostname=local, timeout=timeout)
    if t.encryption == "tls":
        smtp.starttls(context=ssl.create_default_context())
    return smtp


def _login(smtp: smtplib.SMTP, t: Transport, cwd: Path, cred: dict[str, str] | None) -> None:
    if cred is None:
        smtp.login(t.user, t.password)
        return
    try:
        smtp.login(cred.get("username", t.user), cred.get("password", ""))
    except smtplib.SMTPAuthenticationError:
        _credential(cwd, "reject", t, cred)
        raise
    _credential(cwd, "approve", t, cred)


def _credential(cwd: Path, action: str, t: Transport, known: dict[str, str]) -> dict[str, str]:
    """`git credential fill|approve|reject` for smtp://server:port, as git send-email asks it."""
    fields = {"protocol": "smtp", "host": f"{t.server}:{t.real_port}", "username": t.user, **known}
    text = "".join(f"{k}={v}\n" for k, v in fields.items()) + "\n"
    done = tree_git.call(cwd, "credential", action, input=text, timeout=300, prompt=True)  # it may ask for the password
    if action == "fill" and done.returncode != 0:
        raise SendError(f"no password for {t.user} on {t.where()}: git credential fill failed",
                        "set git config sendemail.smtpPass or a credential helper")
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def _t(text: bytes | str) -> str:
    return (text.decode(errors="replace") if isinstance(text, bytes) else text).strip()


def save_unsent(msg: EmailMessage) -> Path:
    """Keep an unsent message under $XDG_STATE_HOME/reviewer/unsent/ and return its path."""
    folder = private.make_dir(dirs.state_root() / "unsent")  # a review of unpublished work: the user's eyes only
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        path = folder / f"{stamp}-{n}.eml"
        with contextlib.suppress(FileExistsError):
            private.write_private(path, as_bytes(msg), exclusive=True)
            return path
    raise SendError(f"cannot save the unsent message in {folder}", "clean up that directory")
