"""Text from a series is data: one function per medium renders it.

File names, subjects, author names, trailers, Message-IDs, test output and compiler lines come
from the series' author, or from code the series changed. Each medium gets them through one
function here, so that no name can draw on the reader's terminal, forge a line of a reply, or
open rich markup:

- `text()`: plain text (the reply mail, b4's check outputs). A control character (a newline, an
  ESC, a C1 control, a bidi override, a line separator) is shown as git quotes paths
  (`core.quotePath=false`: `\\n`, `\\033`); a name that holds one, a `"` or a `\\` is put in
  double quotes as git does: `"a\\nb"`.
- `terminal()`: the same text in a rich Text, which rich prints as is (a plain str in a rich
  table is read as markup, and rich lets ESC through: tests/unit/report/test_escape.py).
- `json()`: the exact text; json escapes U+0000-U+001F itself (ESC is \\u001b), and DEL, the C1
  controls and U+2028/U+2029 are given as \\u escapes as well, so that no raw control byte reaches
  whoever reads the document on a terminal.
- `unforgeable()`: a line of a reply that b4 or Patchwork would take for a trailer (a follow-up's
  `Reviewed-by: ...` is applied to the patch) gets its first word in backticks.
"""
from __future__ import annotations

import json as _json
import re
import unicodedata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.text import Text

_NAMED = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r"}
# Categories shown escaped: controls (Cc: C0, DEL, C1), format characters (Cf: bidi overrides, zero-width
# marks), line and paragraph separators (Zl, Zp). Everything else printable, UTF-8 included, stays as is.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029]")


def _hidden(ch: str) -> bool:
    return unicodedata.category(ch) in _HIDDEN


def _escaped(ch: str) -> str:
    return _NAMED.get(ch) or "".join(f"\\{b:03o}" for b in ch.encode())


def text(value: str, *, name: bool = False, keep: str = "") -> str:
    """VALUE for plain text: control characters escaped (but those in KEEP, e.g. a quoted hunk's tabs).
    NAME: a file name, subject or person, quoted as a whole as git quotes a path when it needs to be."""
    if name:
        if not any(_hidden(ch) or ch in '"\\' for ch in value):
            return value
        return '"' + "".join(_escaped(ch) if _hidden(ch) else "\\" + ch if ch in '"\\' else ch for ch in value) + '"'
    if not any(_hidden(ch) and ch not in keep for ch in value):
        return value
    return "".join(_escaped(ch) if _hidden(ch) and ch not in keep else ch for ch in value)


def terminal(value: str, style: str = "", *, name: bool = False, keep: str = "") -> Text:
    """VALUE for rich: escaped as text() does (KEEP: a table cell's own line breaks), and never read as markup."""
    from rich.text import Text  # rich only for the terminal report (docs/design.md, "Imports kept lazy")

    return Text(text(value, name=name, keep=keep), style=style)


def json(document: Any) -> str:
    """DOCUMENT as JSON: the exact strings, with every control character as a \\u escape."""
    out = _json.dumps(document, indent=2, ensure_ascii=False)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", out) + "\n"


# What b4 (b4/__init__.py, LoreMessage.find_trailers) takes for a trailer in a reply: `Name: value` with
# any indentation; it keeps a person's trailer (an address in the value) and a few others (Fixes: with a
# hash, links, ...). Patchwork takes `*-by:` lines. Such a line only ever comes from a series' text.
_TRAILER = re.compile(r"^(?P<indent>\s*)(?P<name>\w\S*?):(?P<rest>\s+\S.*)$")
_ADDRESS = re.compile(r"\S+@\S+\.\S+")
_NOT_PERSON = frozenset({"fixes", "link", "buglink", "closes", "subject", "date", "obsoleted-by", "change-id", "base-commit"})


def trailer_like(line: str) -> bool:
    m = _TRAILER.match(line)
    if m is None:
        return False
    name = m["name"].lower()
    return bool(_ADDRESS.search(m["rest"])) or name in _NOT_PERSON or name.endswith("-by")


def unforgeable(line: str) -> str:
    """LINE, or LINE with its first word in backticks when a tool reading the reply would take it for a trailer."""
    m = _TRAILER.match(line)
    if m is None or not trailer_like(line):
        return line
    return f"{m['indent']}`{m['name']}:`{m['rest']}"
