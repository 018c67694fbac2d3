"""A commit message's in-body headers and trailer block, read the way git reads them.

In-body headers (`git mailinfo`): at the very top of a patch mail's body, after any blank
lines, `From:`, `Subject:` and `Date:` lines (and their continuation lines) override the
mail's own headers, up to the first blank line. git send-email writes an in-body `From:` when
the sender is not the author (Documentation/process/submitting-patches.rst, "From line").

The trailer block (`git interpret-trailers`, trailer.c): the last paragraph of the message.
It is a trailer block when every line in it is a trailer, or when it has a trailer git itself
writes (`Signed-off-by:`, `(cherry picked from commit ...)`) and at least a quarter of its
lines are trailers. A trailer is `Token: value` with a token of letters, digits and dashes;
a line starting with white space continues the trailer above it. Lines of the block that are
not trailers (`[ maintainer: fixed a typo ]`) and `# ...` comments after a value are kept as
the trailer's comment, as b4 keeps them.
"""
from __future__ import annotations

import email.utils
import re
from dataclasses import dataclass

from reviewer.model import Person, Trailer

_TOKEN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)$")
_GIT_WRITES = ("signed-off-by:", "(cherry picked from commit ")
_INBODY = re.compile(r"^(From|Subject|Date):[ \t]*(.*)$", re.IGNORECASE)
# git counts a bare URL line as a trailer named "https"; it is one for the block's shape, not a trailer to report.
_NOT_NAMES = ("http", "https")
_COMMENT = re.compile(r"^(.*?\S)\s+(#.*)$")


@dataclass(frozen=True)
class InBody:
    """What the top of a patch mail's body says of its author, subject and date."""

    author: Person | None = None
    subject: str | None = None
    date: str | None = None
    lines: int = 0  # how many lines of the body the in-body headers (and the blank after them) take


def in_body_headers(body: str) -> InBody:
    """The in-body `From:`/`Subject:`/`Date:` block at the top of BODY, as git mailinfo reads it."""
    lines = body.split("\n")
    at = 0
    while at < len(lines) and not lines[at].strip():
        at += 1
    found: dict[str, str] = {}
    last = ""
    while at < len(lines):
        line = lines[at].rstrip("\r")
        m = _INBODY.match(line)
        if m:
            last = m.group(1).lower()
            found[last] = m.group(2).strip()
        elif last and line[:1] in (" ", "\t"):
            found[last] += " " + line.strip()
        else:
            break
        at += 1
    if not found:
        return InBody()
    if at < len(lines) and not lines[at].strip():
        at += 1  # the blank line that ends the block belongs to it
    return InBody(_person(found.get("from")), found.get("subject"), found.get("date"), at)


def _person(value: str | None) -> Person | None:
    if not value:
        return None

    name, addr = email.utils.parseaddr(value)
    if "@" not in addr:
        return None
    return Person(name or addr, addr)


def without_in_body_headers(message: str) -> str:
    """MESSAGE without its in-body header block (it is not part of the commit message)."""
    skip = in_body_headers(message).lines
    return "\n".join(message.split("\n")[skip:]) if skip else message


def trailer_block(message: str) -> tuple[Trailer, ...]:
    """The trailers of MESSAGE's last paragraph, when git would call it a trailer block."""
    paragraph = _last_paragraph(message)
    parsed = _parse(paragraph)
    trailers = sum(1 for kind, _ in parsed if kind == "trailer")
    others = sum(1 for kind, _ in parsed if kind == "other")
    if not trailers:
        return ()
    git_writes = any(text.lower().startswith(_GIT_WRITES) for kind, text in parsed if kind == "trailer")
    if others and not (git_writes and trailers * 3 >= others):
        return ()
    return tuple(_trailers(parsed))


def _last_paragraph(message: str) -> list[str]:
    lines = [ln.rstrip("\r") for ln in message.split("\n")]
    while lines and (not lines[-1].strip() or lines[-1].startswith("#")):
        lines.pop()
    start = len(lines)
    while start > 0 and lines[start - 1].strip():
        start -= 1
    return lines[start:]


def _parse(paragraph: list[str]) -> list[tuple[str, str]]:
    """Each line as ("trailer", text), ("continuation", text) or ("other", text)."""
    out: list[tuple[str, str]] = []
    for line in paragraph:
        if line[:1] in (" ", "\t") and out and out[-1][0] in ("trailer", "continuation"):
            out.append(("continuation", line.strip()))
        elif line.lower().startswith(_GIT_WRITES[1]) or _TOKEN.match(line):
            out.append(("trailer", line))
        elif line.startswith("#"):
            out.append(("comment", line))
        else:
            out.append(("other", line))
    return out


def _trailers(parsed: list[tuple[str, str]]) -> list[Trailer]:
    found: list[Trailer] = []
    for kind, text in parsed:
        if kind == "trailer" and (m := _TOKEN.match(text)) and m.group(1).lower() not in _NOT_NAMES:
            value, comment = _split_comment(m.group(2).strip())
            found.append(Trailer(m.group(1), value, "patch", comment=comment))
        elif kind == "continuation" and found:
            last = found[-1]
            found[-1] = Trailer(last.name, f"{last.value} {text}".strip(), last.source, comment=last.comment)
        elif kind in ("other", "comment") and found and text.strip():
            last = found[-1]
            note = f"{last.comment} {text.strip()}".strip()
            found[-1] = Trailer(last.name, last.value, last.source, comment=note)
    return found


def _split_comment(value: str) -> tuple[str, str]:
    """`stable@vger.kernel.org # 6.1+` -> (`stable@vger.kernel.org`, `# 6.1+`)."""
    m = _COMMENT.match(value)
    if m is None or value.startswith("#"):
        return value, ""
    return m.group(1), m.group(2)
