"""Mails written for the bot's tests: cover letters and patches as git format-patch and b4 send them."""
from __future__ import annotations

import datetime as dt
import email.utils

LIST = "test@lists.example.org"
START = dt.datetime(2026, 12, 6, 3, 0, tzinfo=dt.UTC)


def mail(msgid: str, subject: str, body: str, *, sender: str = "Ann Author <ann@example.org>", reply_to: str | None = None,
         minute: int = 0) -> bytes:
    """One mail to the list; REPLY_TO: the msgid it is threaded below (In-Reply-To and References)."""
    date = email.utils.format_datetime(START + dt.timedelta(minutes=minute))
    thread = f"In-Reply-To: <{reply_to}>\nReferences: <{reply_to}>\n" if reply_to else ""
    return (f"From: {sender}\nTo: {LIST}\nSubject: {subject}\nDate: {date}\nMessage-ID: <{msgid}>\n{thread}"
            f"MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\n{body}").encode()


def diff(path: str, old: str, new: str) -> str:
    return (f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1,3 +1,3 @@\n context one\n-{old}\n+{new}\n context two\n")


def series(tag: str, prefix: str, subject: str, n: int, *, sender: str = "Ann Author <ann@example.org>", parts: tuple[int, ...] = (),
           change: str = "", wording: str = "Do it", cover_note: str = "") -> list[bytes]:
    """A cover letter `[PREFIX 0/N] SUBJECT` and patches PARTS (default: all N) threaded below it, msgids TAG.K@example.org.

    Patch K changes file K (its diff differs with CHANGE); WORDING changes only the commit messages."""
    cover = f"{tag}.0@example.org"
    out = [mail(cover, f"[{prefix} 0/{n}] {subject}", f"This series does things.\n\n{cover_note}---\nb4 0.14\n", sender=sender)]
    for k in parts or tuple(range(1, n + 1)):
        body = f"{wording} number {k}.\n\nSigned-off-by: {sender}\n---\n{diff(f'lib/f{k}.c', f'old {k}', f'new {k}{change}')}"
        out.append(mail(f"{tag}.{k}@example.org", f"[{prefix} {k}/{n}] {subject.split(':')[0]}: part {k}", body, sender=sender,
                        reply_to=cover, minute=k))
    return out
