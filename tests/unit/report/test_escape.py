"""Issue 30, item 3: text from a series is data in every medium (reviewer/report/escape.py).

git itself is the oracle for names: escape.text(name=True) quotes a path exactly as
`git -c core.quotePath=false ls-files` prints it."""
from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest
from rich.console import Console
from rich.errors import MarkupError
from rich.table import Table
from rich.text import Text

from reviewer.report import escape

NAMES = ["plain.c", "a\nReviewed-by: Rev Iewer <rev@example.org>", "e\x1b[2Jf.c", 'say "hi".c', "back\\slash.c", "tab\there.c",
         "bell\a.c", "cr\r.c", "del\x7f.c", "Jörg Müller.c", "space name.c"]


def test_names_are_quoted_as_git_quotes_paths(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name in NAMES:
        (tmp_path / name).write_text("x\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    listed = subprocess.run(["git", "-C", str(tmp_path), "-c", "core.quotePath=false", "ls-files"], check=True,
                            capture_output=True, text=True).stdout.splitlines()
    assert sorted(listed) == sorted(escape.text(n, name=True) for n in NAMES)
    assert escape.text("a\nb", name=True) == '"a\\nb"' and escape.text("plain.c", name=True) == "plain.c"


def test_what_git_leaves_alone_is_escaped_too() -> None:
    """C1 controls (CSI is ESC [ in one byte), bidi overrides (Trojan Source), line separators."""
    assert escape.text("a\u009b2Jb") == "a\\302\\2332Jb"
    assert escape.text("x\u202ey") == "x\\342\\200\\256y"
    assert escape.text("x\u2028y", name=True) == '"x\\342\\200\\250y"'
    assert escape.text("tab\tkept", keep="\t") == "tab\tkept" and escape.text("tab\t") == "tab\\t"
    assert escape.text("ünïcode, and a \\ unquoted") == "ünïcode, and a \\ unquoted"


def _printed(*parts: object) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=100)
    for part in parts:
        console.print(part)
    return out.getvalue()


def test_rich_alone_would_let_escapes_through_and_read_markup() -> None:
    """Why the terminal needs escape.terminal: rich prints a raw ESC in a Text, and reads a str cell as markup."""
    assert "\x1b[2J" in _printed(Text("e\x1b[2Jf.c"))
    table = Table()
    table.add_column("Subject")
    table.add_row("x86: fix [/bold] parsing")
    with pytest.raises(MarkupError):
        _printed(table)


def test_the_terminal_gets_no_escape_sequence_and_no_markup() -> None:
    table = Table()
    table.add_column("Subject")
    table.add_row(escape.terminal("x86: fix [/bold] \x1b[2J parsing"))
    out = _printed(escape.terminal("e\x1b[2Jf.c", "bold"), table)
    assert "\x1b[2J" not in out and "e\\033[2Jf.c" in out and "[/bold]" in out
    assert "\x1b" not in out.replace("\x1b[1m", "").replace("\x1b[0m", "")  # only rich's own styles


def test_json_keeps_the_exact_text_with_every_control_as_an_escape() -> None:
    doc = {"path": "e\x1b[2Jf.c", "c1": "a\u009bb", "ls": "a\u2028b", "del": "a\x7fb", "name": "a\nReviewed-by: x"}
    out = escape.json(doc)
    assert "\\u001b" in out and "\\u009b" in out and "\\u2028" in out and "\\u007f" in out
    assert not any(c in out for c in "\x1b\u009b\u2028\x7f") and out.count("\n") == len(doc) + 2  # no raw newline from a value
    assert json.loads(out) == doc


@pytest.mark.parametrize("line", ["Reviewed-by: Rev Iewer <rev@example.org>", "    Acked-by: someone", "Fixes: 0123456789ab (\"x\")",
                                  "  Link: https://example.org/x", "Signed-off-by: a@example.org"])
def test_a_line_that_would_read_as_a_trailer_is_defused(line: str) -> None:
    assert escape.trailer_like(line)
    defused = escape.unforgeable(line)
    assert not escape.trailer_like(defused) and defused.replace("`", "") == line


@pytest.mark.parametrize("line", ["Hi Xi,", "  apply: 4 of 4 patches applied to 6bbeb48ebf41 (base from trailer)",
                                  "> Reviewed-by: Rev Iewer <rev@example.org>", "What the tool ran:", "FILE: arch/x86/Kconfig:12:"])
def test_other_lines_are_left_alone(line: str) -> None:
    assert escape.unforgeable(line) == line
