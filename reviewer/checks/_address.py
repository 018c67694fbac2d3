"""A `Name (comment) <address> comment` string split the way checkpatch.pl's parse_email()
(6.12, scripts/checkpatch.pl) splits it, so that the author-signoff check decides what
checkpatch decides: names are compared as written (case matters), addresses case-blind only
where checkpatch is case-blind, and a `+tag` sub-address is dropped only where it drops it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_ANGLED = re.compile(r"^(.*)<(\S+@\S+)>(.*)$")
_ANGLED_ONLY = re.compile(r"^\s*<(\S+@\S+)>(.*)$")
_BARE = re.compile(r"(\S+@\S+)(.*)$")
_MUST_QUOTE = re.compile(r"[^\w \-]")
_SUBADDRESS = re.compile(r"(\S+)\+\S+(@.*)")


@dataclass(frozen=True)
class Address:
    name: str  # quoted ("\"Doe, Jane\"") when it holds anything but word characters, spaces and dashes
    name_comment: str  # the parenthesised parts of the name: "Jane (ACME) Doe" -> "(ACME)"
    address: str
    comment: str  # what follows the address: "<j@x> # 6.1" -> "# 6.1"

    def __str__(self) -> str:
        name = f"{self.name}{' ' + self.name_comment if self.name_comment else ''}"
        text = f"{name} <{self.address}>" if name else self.address
        return f"{text} {self.comment}" if self.comment else text


def parse(text: str) -> Address:
    """TEXT split into name, name comment, address and trailing comment."""
    name = address = comment = ""
    if (m := _ANGLED.match(text)) is not None:
        name, address, comment = m[1], m[2], m[3]
    elif (m := _ANGLED_ONLY.match(text)) is not None:
        address, comment = m[1], m[2]
    elif (m := _BARE.search(text)) is not None:
        address, comment = m[1], m[2]
        name = re.sub(r'^"|"$', "", text[: m.start()].strip())
        if name and not re.fullmatch(r"<[^>]+>", address):  # "joe smith joe@smith.com": not an address at all
            return Address("", "", "", "")
    name, name_comment = _name(name)
    return Address(name, name_comment, address.strip().removeprefix("<").removesuffix(">"), comment.strip())


def reformat(text: str) -> Address:
    """How checkpatch.pl holds the From: author: quotes dropped, parsed, written back and parsed
    again (writing back drops trailing dots, commas and quotes from the address)."""
    first = parse(text.replace('"', ""))
    name, address = _quoted(first.name.strip(' "')), re.sub(r'[.,"]+$', "", first.address.strip())
    written = f"{name}{' ' + first.name_comment if first.name_comment else ''} <{address}>" if name else address
    return parse(f"{written} {first.comment}" if first.comment else written)


def without_subaddress(address: str) -> str:
    """`user+tag@host` -> `user@host` (RFC 5233), as checkpatch drops it: the last `+tag` only."""
    m = _SUBADDRESS.search(address)
    return f"{m[1]}{m[2]}" if m else address


def _name(raw: str) -> tuple[str, str]:
    """The name without its quotes and parenthesised comments, and those comments."""
    quoted = ""
    if (m := re.search(r'"(.+)"', raw)) is not None:  # a quoted part keeps its parentheses
        quoted, raw = m[1], raw[: m.start()] + raw[m.end() :]
    comments = ""
    while (span := _parenthesised(raw)) is not None:
        start, end = span
        comments += raw[start:end].strip()
        raw = raw[:start].rstrip() + " " + raw[end:].lstrip()
    return _quoted((quoted + " " + raw.strip(' "')).strip()), comments


def _quoted(name: str) -> str:
    """NAME in quotes (its own quotes escaped) when it holds more than word characters, spaces and dashes."""
    return '"' + re.sub(r'(?<!\\)"', r'\\"', name) + '"' if _MUST_QUOTE.search(name) else name


def _parenthesised(text: str) -> tuple[int, int] | None:
    """The first balanced `( ... )` group in TEXT (nested groups included), as (start, end)."""
    for start, char in enumerate(text):
        if char != "(":
            continue
        depth = 0
        for end in range(start, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                return start, end + 1
    return None
