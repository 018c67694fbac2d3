"""Patch mails as mailers damage them, made into what `git mailinfo` reads, before b4 sees them.

- A diff sent as an attachment (Thunderbird's `text/x-diff` *.diff, `text/x-patch`): b4 reads
  only text/plain and x-patch parts, and on finding a diff in a later part drops the text before
  it (the commit message, the sign-off). git mailinfo reads the parts in order, so does this.
- `format=flowed` text (RFC 3676, Thunderbird's default): a line ending in a space continues on
  the next line (the space dropped too with `delsp=yes`), and a line starting with a space was
  "space-stuffed", so a diff's context line ` x` arrives as `  x`. git mailinfo undoes both.

Each rewrite changes the message in place (its body only), and only when there is something to
undo: a mail that is already plain is left byte for byte as it came (signatures still verify).
"""
from __future__ import annotations

import email.message
import re

Message = email.message.EmailMessage

_DIFF = re.compile(r"^(---.*\n\+\+\+|GIT binary patch|diff --git \S+ \S+)", re.MULTILINE)  # as b4 tells a patch
_DIFF_TYPES = ("text/x-diff", "text/x-patch", "application/x-patch", "application/x-diff")


def normalise(msg: Message) -> None:
    if msg.is_multipart():
        _inline_attached_diffs(msg)
    elif _flowed(msg) and (text := text_of(msg)) is not None:
        _replace(msg, text)


def _replace(msg: Message, text: str) -> None:
    msg.clear_content()
    msg.set_content(text, charset="utf-8", cte="8bit")


def _inline_attached_diffs(msg: Message) -> None:
    parts = [(part, text_of(part)) for part in msg.walk() if not part.is_multipart()]
    inline = [text for part, text in parts if part.get_content_type() == "text/plain" and text is not None
              and part.get_content_disposition() != "attachment"]
    attached = [text for part, text in parts if text is not None and _DIFF.search(text)
                and (part.get_content_type() in _DIFF_TYPES or part.get_content_disposition() == "attachment")]
    if attached and not any(_DIFF.search(text) for text in inline):
        _replace(msg, "\n".join(t.rstrip("\n") + "\n" for t in [*inline[:1], *attached]))


def text_of(part: Message) -> str | None:
    """The decoded text of PART (format=flowed undone), or None when it is not text."""
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes) or not (part.get_content_maintype() == "text" or part.get_content_type() in _DIFF_TYPES):
        return None
    try:
        text = payload.decode(part.get_content_charset() or "utf-8", errors="replace")
    except (LookupError, ValueError):
        text = payload.decode("utf-8", errors="replace")
    return unflow(text, delsp=str(part.get_param("delsp", "")).lower() == "yes") if _flowed(part) else text


def _flowed(part: Message) -> bool:
    return part.get_content_type() == "text/plain" and str(part.get_param("format", "")).lower() == "flowed"


def unflow(text: str, *, delsp: bool = False) -> str:
    """RFC 3676 section 4: unstuff, then join each soft-broken line with the next of the same quote depth."""
    out: list[str] = []
    carry: tuple[int, str] | None = None  # (quote depth, the paragraph so far) of a line that continues
    for raw in text.replace("\r\n", "\n").split("\n"):
        depth = len(raw) - len(raw.lstrip(">"))
        line = raw[depth:]
        line = line[1:] if line.startswith(" ") else line
        if carry is not None and carry[0] == depth:
            line = carry[1] + line
        elif carry is not None:
            out.append(">" * carry[0] + carry[1])
        carry = None
        if line.endswith(" ") and line != "-- ":
            carry = (depth, line[:-1] if delsp else line)
            continue
        out.append(">" * depth + line)
    if carry is not None:
        out.append(">" * carry[0] + carry[1])
    return "\n".join(out)
