"""The reply to a review, built and delivered: written to a file or stdout, shown, and sent only when asked.

What the reply options ask (Outgoing: --reply, --reply-policy, --trailer, --per-patch, --send, --yes,
--dry-run, --in-reply-to, --reply-infos) is checked before anything is fetched; prepare() builds the
messages from the review (email.py), deliver() writes, shows and sends them (send.py). Nothing is
sent unless Outgoing.send says so, and then only after CONFIRM agrees (or Outgoing.yes). Notes go to
stderr through SAY; the messages themselves to stdout or the reply file.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import TYPE_CHECKING

from reviewer.errors import ConfigError, UsageError
from reviewer.model import Review
from reviewer.report import email as reply_mail
from reviewer.report import send as mail
from reviewer.series import msgid

if TYPE_CHECKING:
    from reviewer.report import send as mail


def _stderr(text: str) -> None:
    print(text, file=sys.stderr)


Say = Callable[[str], None]


@dataclass(frozen=True)
class Outgoing:
    reply: str | None = None  # --reply FILE, "-" for stdout
    policy: reply_mail.ReplyPolicy = reply_mail.ReplyPolicy.ALL
    trailers: tuple[str, ...] = ()
    per_patch: bool = False
    send: bool = False
    yes: bool = False
    dry_run: bool = False
    in_reply_to: str | None = None  # --in-reply-to, without <>
    infos: bool = False  # --reply-infos

    @property
    def wanted(self) -> bool:
        return self.reply is not None or self.send or self.dry_run

    def validate(self, fmt: str, *, reads_message: bool) -> None:
        """The options agree with each other and with the output format FMT (READS_MESSAGE: b4's check protocols)."""
        if (self.per_patch or self.trailers or self.in_reply_to or self.infos) and not self.wanted:
            raise UsageError("--per-patch, --reply-infos, --trailer and --in-reply-to shape a reply: add --reply FILE, --send or --dry-run")
        if self.in_reply_to and self.per_patch:
            raise UsageError("--in-reply-to names one message, and --per-patch answers each patch", "drop one of them")
        if self.wanted and reads_message:
            raise UsageError(f"--format {fmt} is for b4's checks; it does not write replies",
                             "drop --reply/--send, or use --format terminal")
        if self.send and self.dry_run:
            raise UsageError("--send and --dry-run contradict each other", "--dry-run shows the message; --send sends it")


@dataclass(frozen=True)
class Mailer:
    """Who the reply is from (git config, as git send-email reads it) and how it is sent (None: it is not)."""

    sender: str
    transport: mail.Transport | None = None


def mailer(out: Outgoing, cwd: Path) -> Mailer:
    """The sender and, with --send, the transport, read from CWD's git config before the review runs."""

    return Mailer(mail.sender(cwd), mail.transport(cwd) if out.send else None)


_TRAILER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*-by: \S.*$")


def trailers(items: Iterable[str]) -> tuple[str, ...]:
    """--trailer values, each `Tested-by: Name <address>`-shaped."""
    items = list(items)
    bad = [i for i in items if not _TRAILER.match(i.strip())]
    if bad:
        raise UsageError(f"--trailer {bad[0]!r}: expected 'Tested-by: Name <address>'",
                         "for example --trailer 'Tested-by: Ada Lovelace <ada@example.org>'")
    return tuple(i.strip() for i in items)


def in_reply_to(text: str | None) -> str | None:
    """--in-reply-to in any form a Message-ID is pasted in (`<id>`, `id`, a lore link), without <>."""
    if text is None:
        return None

    ref = msgid.parse(text)
    if ref is None or ref.truncated:
        raise UsageError(f"--in-reply-to {text!r}: not a Message-ID",
                         "give the whole id, e.g. --in-reply-to '<20240816110717.10249-1-xry111@example.org>'")
    return ref.msgid


def writable(path: Path, option: str = "--reply") -> None:
    """OPTION's FILE (--reply, --html) can be written, tried rather than guessed (root passes every access() test): an
    existing file is opened for appending and nothing written; a new one is made and removed again."""
    hint = "give a file in a writable directory" + (", or --reply - for standard output" if option == "--reply" else "")
    if path.is_dir():
        raise ConfigError(f"{option} {path}: is a directory", hint)
    try:
        if path.exists():
            with path.open("ab"):
                pass
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            path.unlink()
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot write it: {exc.strerror or exc}", hint) from exc


def prepare(review: Review, out: Outgoing, sender: str, say: Say = _stderr) -> list[EmailMessage]:
    """The reply (or, with per_patch, one per patch with findings) to REVIEW; a reply to a Message-ID the
    tool made up is warned about through SAY unless it is to be sent (which then fails)."""
    opts = reply_mail.ReplyOptions(sender, out.policy, out.trailers, in_reply_to=out.in_reply_to, infos=out.infos)
    msgs = reply_mail.per_patch(review, opts) if out.per_patch else [reply_mail.reply(review, opts)]
    made_up = [p for m in msgs if (p := reply_mail.invented_parent(m)) is not None]
    if made_up and not out.send:
        say(f"review: warning: the reply answers {made_up[0]}" + (f" (and {len(made_up) - 1} more)" if len(made_up) > 1 else "")
            + ", a Message-ID the tool made up (the series' mail has none): --send will not send it; "
            "give the real one with --in-reply-to MSGID")
    return msgs


def deliver(msgs: list[EmailMessage], out: Outgoing, cwd: Path, transport: mail.Transport | None = None,
            confirm: Callable[[str], bool] | None = None, say: Say = _stderr) -> None:
    """MSGS written to the reply file (or stdout), shown with dry_run or send, and sent with send once
    CONFIRM says yes to the question (out.yes: not asked; no CONFIRM: nobody to ask, nothing sent)."""
    if not msgs:
        say("review: no patch has findings: no reply written")
        return
    data = reply_mail.as_mbox(msgs) if len(msgs) > 1 else reply_mail.as_bytes(msgs[0])
    if out.reply == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
    elif out.reply is not None:
        Path(out.reply).write_bytes(data)
        say(f"review: reply written to {out.reply} ({len(msgs)} message{'s' if len(msgs) > 1 else ''})")
    if (out.dry_run or out.send) and out.reply != "-":
        for msg in msgs:
            sys.stdout.write("\n" + reply_mail.as_bytes(msg).decode("utf-8", errors="replace"))
        sys.stdout.flush()
    if out.send:
        assert transport is not None, "--send reads its transport before the review (mailer())"
        _send(msgs, transport, cwd, confirm=None if out.yes else confirm or (lambda _question: False), say=say)


def _send(msgs: list[EmailMessage], transport: mail.Transport, cwd: Path, *, confirm: Callable[[str], bool] | None, say: Say) -> None:
    if confirm is not None and not confirm(f"Send {len(msgs)} message(s) via {transport.where()}?"):
        say("review: nothing sent")
        return

    for msg in msgs:
        mail.send(msg, transport, cwd)
        say(f"review: sent {msg['Message-ID']} to {', '.join(mail.envelope(msg))} via {transport.where()}")
