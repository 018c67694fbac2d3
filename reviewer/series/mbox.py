"""The one mbox writer (mboxrd) and the one patch-as-mail builder.

mboxrd (https://www.loc.gov/preservation/digital/formats/fdd/fdd000385.shtml): each message
follows a `From ` line and ends with a blank line; a line of a message that starts with
`From `, `>From `, `>>From `... gets one more `>`, so that a reader (git mailsplit --mboxrd,
git am --patch-format=mboxrd, public-inbox, b4/liblore) takes exactly one away again and no line
of a message can start a new one. What a reader gives back is the message and the blank line
that ended it (git mailsplit and liblore keep it).

Readers: a thread from lore or the thread cache is read by liblore (fetch.split_thread: b4's
deduplication); a mail file the user gives is read as git am and `b4 am` read it (fetch.read_mbox).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from reviewer.model import Patch

FROM_LINE = b"From reviewer Thu Jan  1 00:00:00 1970\n"  # the date is the epoch: the output does not change with the clock
_ESCAPED = re.compile(rb"^(>*From )", re.M)
_LINE_END = re.compile(r"\r\n|\r|\n")


def write(mails: Iterable[bytes]) -> bytes:
    """MAILS as one mboxrd mbox; each mail comes back from a reader byte for byte, followed by the blank line."""
    out = []
    for mail in mails:
        body = _ESCAPED.sub(rb">\1", mail)
        out.append(FROM_LINE + body + (b"" if body.endswith(b"\n") else b"\n") + b"\n")
    return b"".join(out)


def lines(text: str) -> list[str]:
    """TEXT's lines as a mail carries them: split at a line end (CR LF, CR or LF) and nowhere else
    (not at a form feed or the other breaks str.splitlines knows: a C file may hold a form feed)."""
    parts = _LINE_END.split(text)
    return parts[:-1] if parts and parts[-1] == "" else parts


def patch_head(patch: Patch, *, dated: bool = True) -> list[str]:
    """The lines of PATCH's mail before its diff, as `git format-patch` writes them: the headers (with
    Date: when DATED and known), a blank line, the commit message and `---`. Headers are UTF-8 as
    they are (8bit), not RFC 2047 words: git mailinfo and checkpatch.pl read them so."""
    date = [f"Date: {patch.date.strftime('%a, %d %b %Y %H:%M:%S %z')}"] if dated and patch.date else []
    return [
        f"From: {patch.author}",
        *date,
        f"Subject: [PATCH {patch.index}/{patch.total}] {patch.subject}",
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=UTF-8",
        "Content-Transfer-Encoding: 8bit",
        "",
        *lines(patch.message),
        "---",
    ]


def patch_mail(patch: Patch, *, dated: bool = True) -> bytes:
    """PATCH as the one mail `git am` gets for it (the apply cache's key hashes exactly this): its Date:
    makes the applied commit's id the same on every run (the boot stage's image cache is keyed by it)."""
    text = "\n".join([*patch_head(patch, dated=dated), *lines(patch.diff)]) + "\n"
    return text.encode("utf-8", errors="surrogateescape")
