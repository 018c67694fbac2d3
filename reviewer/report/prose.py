"""Prose for the reply, wrapped at 72 columns as kernel mail is.

A code span (`select VDSO_GETRANDOM if FOO`) stays on one line. A word or code span that cannot
fit a line (a command line, a long path) gets a line of its own, indented as tool output is,
rather than a line over 72. No line starts with a word that would make it read as a trailer
(`Reviewed-by: ...`): such a word stays with the word before it, and where it opens the paragraph
escape.unforgeable puts it in backticks.
"""
from __future__ import annotations

import re

from reviewer.report import escape

WIDTH = 72
VERBATIM = "    "  # tool output and words too long for a line: indented, never wrapped
_CODE = re.compile(r"`[^`]*`")
_GLUE = "\0"  # joins what must not be broken apart
_NAME = re.compile(r"^\w\S*:$")  # a word that, opening a line, makes it read as `Name: value` (escape._TRAILER)


def wrap(text: str, width: int = WIDTH, indent: str = "") -> str:
    """TEXT as lines of at most WIDTH columns, later lines starting with INDENT."""
    words = _words(text)
    lines = _fill(words, width, indent)
    if lines and escape.trailer_like(lines[0]):  # a paragraph that opens like a trailer: its first word in backticks
        lines = _fill([f"`{words[0]}`", *words[1:]], width, indent)
    return "\n".join(escape.unforgeable(ln) for ln in lines)


def _fill(words: list[str], width: int, indent: str) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in words:
        shown = word.replace(_GLUE, " ")
        if len(shown) > width - len(indent):
            lines += [line] if line else []
            lines.append(VERBATIM + shown.strip("`") if shown.startswith("`") else VERBATIM + shown)
            line = ""
        elif line and len(line) + 1 + len(shown) > width:
            lines.append(line)
            line = indent + shown
        else:
            line = f"{line} {shown}" if line else (indent if lines else "") + shown
    return [*lines, line] if line else lines


def _words(text: str) -> list[str]:
    """TEXT's words, code spans as one word, and a `Name:` word joined to the word before it."""
    protected = _CODE.sub(lambda m: m.group(0).replace(" ", _GLUE), text)
    words: list[str] = []
    for word in protected.split():
        if words and _NAME.match(word):
            words[-1] += _GLUE + word
        else:
            words.append(word)
    return words


def hang(line: str, width: int = WIDTH) -> str:
    """An indented line of figures (the summary), wrapped with its later lines two columns further in."""
    if len(line) <= width:
        return escape.unforgeable(line)
    lead = line[: len(line) - len(line.lstrip())]
    return lead + wrap(line.strip(), width - len(lead), " " * 2).replace("\n", "\n" + lead)
