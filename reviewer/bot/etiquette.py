"""What every mail of the bot must and must not say (BOT-DESIGN.md section 3), and the footer that says it.

A bot gives no review tags: no line of its mail starts with `Reviewed-by:`, `Acked-by:`, `Tested-by:` or any
other `*-by:` trailer (b4 and Patchwork would apply it to the patch). It says it is automated and may err,
how to stop it (`reviewer-bot: stop`, reviewer/bot/commands.py), which base it reviewed on, and the commands
that reproduce its findings; its headers say `Auto-Submitted: auto-generated` (RFC 3834), and it goes to no one but the author (and
the list, when the policy says so).

`footer()` writes that block, `with_footer()` puts it in a reply body built by reviewer/report/email.py
(before the `-- ` signature), `bot_mail()` does both to a whole reply; `problems()` lists what a mail
breaks and `check()` raises EtiquetteError, so that the sender refuses such a mail. Text from a series (a
Message-ID, a base named by its base-commit trailer) is data: escaped by reviewer/report/escape.py and
shell-quoted, it can never become a line of its own.
"""
from __future__ import annotations

import email.utils
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from email.message import EmailMessage

from reviewer.bot.commands import PREFIX
from reviewer.errors import ReviewerError
from reviewer.report import escape

STOP = f"{PREFIX} stop"
STOP_AUTHOR = f"{PREFIX} stop author"
AUTOMATED = "This mail was written by reviewer-bot, an automated review tool, and it may be wrong."
BASE = "Base commit: "  # two words: never read as a trailer, whatever follows
REPRODUCE = "To reproduce the findings:"
_TAG = re.compile(r"^[^\S\n]*((?:[A-Za-z0-9]+-)+by|N?ACK|NAK)[^\S\n]*:", re.IGNORECASE | re.MULTILINE)
_SIGNATURE = "\n-- \n"
_MAX_LINE = 998


class EtiquetteError(ReviewerError):
    """A bot mail that breaks the etiquette: the sender refuses it."""


@dataclass(frozen=True)
class Footer:
    """What the footer states: the base reviewed on and the commands that reproduce the findings."""

    base: str
    reproduce: tuple[str, ...]


def reproduce(msgid: str, base: str, stages: Sequence[str], arches: Sequence[str] = ()) -> tuple[str, ...]:
    """The `review` command lines that rerun STAGES of the series MSGID on BASE (one per stage, as each
    finding comes from one stage)."""
    target = shlex.quote(escape.text(msgid))
    on = f"--tree LINUX --base {shlex.quote(escape.text(base))}"
    arch = f" --arch {shlex.quote(','.join(arches))}" if arches else ""
    commands = {
        "static": f"review {target}",
        "apply": f"review {on} {target}",
        "build": f"review {on} --build{arch} {target}",
        "guest": f"review {on} --run-tests --run-on vm{arch} {target}",
    }
    return tuple(commands[s] for s in stages if s in commands)


def footer(f: Footer) -> str:
    """The block every bot mail ends with (before the signature)."""
    lines = [
        AUTOMATED,
        "It gives no review tags: a maintainer decides what the findings are worth.",
        "To stop its mail about this series, the author or a maintainer of the",
        "files it touches can reply with this line, at the start of a line:",
        "",
        f"  {STOP}",
        "",
        f"or `{STOP_AUTHOR}` for all of your series.",
        "",
        BASE + escape.text(f.base),
        REPRODUCE,
        *(f"  {escape.text(c)}" for c in f.reproduce),
        "(LINUX: a kernel git tree that has the base commit)",
    ]
    return "\n".join(escape.unforgeable(line) for line in lines)


def with_footer(body: str, f: Footer) -> str:
    """BODY (a reply from reviewer/report/email.py) with the footer before its `-- ` signature."""
    head, sep, signature = body.rpartition(_SIGNATURE)
    if not sep:
        return f"{body.rstrip()}\n\n{footer(f)}\n"
    return f"{head.rstrip()}\n\n{footer(f)}{sep}{signature}"


def bot_mail(msg: EmailMessage, f: Footer) -> EmailMessage:
    """MSG (a reply from reviewer/report/email.py) as the bot sends it: footer added, Auto-Submitted set."""
    part = msg.get_body(preferencelist=("plain",))
    text = with_footer(str(part.get_content()) if part is not None else "", f)
    long = any(len(line.encode()) > _MAX_LINE for line in text.splitlines())
    msg.set_content(text, charset="utf-8", cte="quoted-printable" if long else "7bit" if text.isascii() else "8bit")
    del msg["Auto-Submitted"]
    msg["Auto-Submitted"] = "auto-generated"
    return msg


def problems(body: str, headers: Iterable[tuple[str, str]] | None = None, allowed: Iterable[str] | None = None) -> list[str]:
    """What the mail (its plain BODY, and its HEADERS when given) breaks of the etiquette; [] when nothing.
    ALLOWED: the only addresses it may go to (the author, and the list when the policy says so)."""
    found = [f"line {n}: a review tag {m[1]!r}: a bot gives none" for n, line in enumerate(body.splitlines(), 1)
             if (m := _TAG.match(line))]
    if AUTOMATED not in body:
        found.append("it does not say that it is automated")
    if not re.search(rf"^\s*{re.escape(STOP)}\s*$", body, re.MULTILINE):
        found.append(f"it does not say how to stop it ({STOP!r} on a line of its own)")
    if not re.search(rf"^{re.escape(BASE)}\S", body, re.MULTILINE):
        found.append("it does not say which base it used")
    if not re.search(rf"^{re.escape(REPRODUCE)}\n[^\S\n]+\S", body, re.MULTILINE):
        found.append("it does not give the commands that reproduce its findings")
    if headers is not None:
        values = {k.lower(): v for k, v in headers}
        if values.get("auto-submitted", "").strip().lower() != "auto-generated":
            found.append("its headers lack 'Auto-Submitted: auto-generated'")
        found += [f"header {k}: a review tag" for k, v in headers if _TAG.search(str(v))]
        if allowed is not None:
            found += _extra_recipients(headers, allowed)
    return found


def _extra_recipients(headers: Iterable[tuple[str, str]], allowed: Iterable[str]) -> list[str]:
    """A recipient beyond ALLOWED: the bot never adds one (a display name from a series that holds an
    address, `"M <m@evil.example>" <a@example.org>`, must not become one)."""
    ok = {a.strip().lower() for a in allowed}
    sent = [a.lower() for _, a in email.utils.getaddresses([v for k, v in headers if k.lower() in ("to", "cc", "bcc")])]
    return [f"it goes to {a}, who is neither the author nor the list" for a in dict.fromkeys(sent) if a not in ok]


def check(msg: EmailMessage, allowed: Iterable[str] | None = None) -> None:
    """Raise EtiquetteError when MSG breaks the etiquette (the sender refuses it); ALLOWED as in `problems`."""
    part = msg.get_body(preferencelist=("plain",))
    body = str(part.get_content()) if part is not None else ""
    found = problems(body, [(k, str(v)) for k, v in msg.items()], allowed)
    if found:
        raise EtiquetteError(f"the bot's mail {msg['Message-ID']} breaks the etiquette: {'; '.join(found)}",
                             "reviewer/bot/etiquette.py says what a bot mail must say")
