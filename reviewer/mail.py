"""Send the reply: SMTP or a sendmail command, configured in git config as git send-email reads it.

Keys (https://git-scm.com/docs/git-send-email#_configuration): sendemail.from,
sendemail.smtpServer (an absolute path there means a sendmail-like program),
sendemail.smtpServerPort, sendemail.smtpEncryption (ssl | tls | none),
sendemail.smtpUser, sendemail.smtpPass (else `git credential fill`), sendemail.smtpDomain,
sendemail.sendmailCmd, sendemail.envelopeSender. A failure never loses the message: it is
saved first, and the error names the file.
"""
from __future__ import annotations

import datetime as dt
import email.utils
import os
import shlex
import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

from reviewer.errors import CommandError, ConfigError, ExitStatus, ReviewerError
from reviewer.proc import run
from reviewer.report.email import POLICY, as_bytes

TIMEOUT = 60.0


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
    done = run(["git", "config", "--get", key], cwd=cwd, check=False, timeout=10)
    return done.stdout.strip() if done.returncode == 0 else ""


def sender(cwd: Path) -> str:
    """sendemail.from, else `user.name <user.email>`, as git send-email chooses the From: line."""
    configured = git_config(cwd, "sendemail.from")
    if configured:
        return configured
    name, addr = git_config(cwd, "user.name"), git_config(cwd, "user.email")
    if not addr:
        raise ConfigError("no sender address: git config sendemail.from and user.email are both unset",
                          'set one, e.g. git config --global user.email "you@example.org"')
    return email.utils.formataddr((name, addr)) if name.isascii() else f"{name} <{addr}>"


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
        if t.sendmail_cmd:
            _sendmail(msg, t, cwd)
        else:
            _smtp(msg, t, cwd)
    except SendError as exc:
        path = save_unsent(msg)
        raise SendError(f"{exc.message}; the message was not sent and is saved in {path}",
                        f"fix the problem, then send it with `git send-email {path}`") from exc


def _sendmail(msg: EmailMessage, t: Transport, cwd: Path) -> None:
    sender_addr = t.envelope_sender or email.utils.parseaddr(str(msg["From"]))[1]
    args = ["sh", "-c", f'{t.sendmail_cmd} "$@"', "sendmail", "-f", sender_addr, *envelope(msg)]
    try:
        run(args, cwd=cwd, input=as_bytes(msg), timeout=TIMEOUT)
    except CommandError as exc:
        raise SendError(f"sendemail.sendmailCmd {exc.message}") from exc


def _smtp(msg: EmailMessage, t: Transport, cwd: Path) -> None:
    where = t.where()
    try:
        with _connect(t) as smtp:
            if t.user:
                _login(smtp, t, cwd)
            sender_addr = t.envelope_sender or email.utils.parseaddr(str(msg["From"]))[1]
            _transaction(smtp, sender_addr, envelope(msg), msg.as_bytes(policy=POLICY.clone(linesep="\r\n")))  # SMTP wants CRLF
    except smtplib.SMTPRecipientsRefused as exc:
        first, (code, text) = next(iter(exc.recipients.items()))
        raise SendError(f"{where} refused the recipient {first}: {code} {_t(text)}") from exc
    except smtplib.SMTPAuthenticationError as exc:
        raise SendError(f"{where} rejected the login of {t.user}: {exc.smtp_code} {_t(exc.smtp_error)}") from exc
    except smtplib.SMTPSenderRefused as exc:
        raise SendError(f"{where} refused the sender {exc.sender}: {exc.smtp_code} {_t(exc.smtp_error)}") from exc
    except smtplib.SMTPResponseException as exc:
        raise SendError(f"{where} answered {exc.smtp_code} {_t(exc.smtp_error)}") from exc
    except (smtplib.SMTPException, ssl.SSLError) as exc:
        raise SendError(f"{where}: {exc}") from exc
    except TimeoutError as exc:
        raise SendError(f"cannot reach {where}: no answer within {TIMEOUT:g} s") from exc
    except OSError as exc:
        raise SendError(f"cannot reach {where}: {exc.strerror or exc}") from exc


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


def _connect(t: Transport) -> smtplib.SMTP:
    local = t.domain or None
    if t.encryption == "ssl":
        return smtplib.SMTP_SSL(t.server, t.real_port, local_hostname=local, timeout=TIMEOUT, context=ssl.create_default_context())
    smtp = smtplib.SMTP(t.server, t.real_port, local_hostname=local, timeout=TIMEOUT)
    if t.encryption == "tls":
        smtp.starttls(context=ssl.create_default_context())
    return smtp


def _login(smtp: smtplib.SMTP, t: Transport, cwd: Path) -> None:
    if t.password:
        smtp.login(t.user, t.password)
        return
    cred = _credential(cwd, "fill", t, {})
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
    done = run(["git", "credential", action], cwd=cwd, input=text, check=False, timeout=300)
    if action == "fill" and done.returncode != 0:
        raise SendError(f"no password for {t.user} on {t.where()}: git credential fill failed",
                        "set git config sendemail.smtpPass or a credential helper")
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def _t(text: bytes | str) -> str:
    return (text.decode(errors="replace") if isinstance(text, bytes) else text).strip()


def save_unsent(msg: EmailMessage) -> Path:
    """Keep an unsent message under $XDG_STATE_HOME/reviewer/unsent/ and return its path."""
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    folder = state / "reviewer" / "unsent"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        path = folder / f"{stamp}-{n}.eml"
        if not path.exists():
            path.write_bytes(as_bytes(msg))
            return path
    raise SendError(f"cannot save the unsent message in {folder}", "clean up that directory")
