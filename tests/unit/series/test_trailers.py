"""reviewer/series/trailers.py against git itself: `git interpret-trailers --parse` for the trailer
block, `git mailinfo` for in-body headers."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reviewer.model import Person
from reviewer.series import fetch, trailers
from tests.conftest import FIXTURES

MAIL = FIXTURES / "mail" / "series"

MESSAGES = {
    "block": "Explain.\n\nSigned-off-by: A U Thor <a@example.org>\nReviewed-by: R <r@example.org>\n",
    "prose colon lines": ("Readers have to look for\nthemselves: the lock is taken.\n\nNote: a spinlock, so no sleeping.\n\n"
                          "Signed-off-by: A <a@example.org>\n"),
    "note in the block": "Body.\n\nNote: prose in the last paragraph\nSigned-off-by: A <a@example.org>\n",
    "bracket and hash comments": ("Body.\n\nCc: stable@vger.example.org # 6.1+\nSigned-off-by: A <a@example.org>\n"
                                  "[ m: fixed a typo ]\nSigned-off-by: M <m@example.org>\n"),
    "continuation": "Body.\n\nSigned-off-by: A Long\n  Name <a@example.org>\nAcked-by: B <b@example.org>\n",
    "mostly prose, no git trailer": "Body.\n\nThis paragraph is prose\nand more prose\nand Foo: bar here\n",
    "too much prose for the sign-off": ("Body.\n\none\ntwo\nthree\nfour\nSigned-off-by: A <a@example.org>\n"),
    "malformed fixes": ("Body.\n\nFixes: commit 1234567890ab\nFixes: ?\nFixes: https://bugs.example.org/1\n"
                        "Fixes: 1234567890AB (\"x: y\")\nSigned-off-by: A <a@example.org>\n"),
    "no trailers": "Just a body.\n\nWith two paragraphs.\n",
    "trailing comment lines": "Body.\n\nSigned-off-by: A <a@example.org>\n# a comment git strips\n\n",
    "bare url line": "Body.\n\nLink: https://lore.example.org/r/x@y\nhttps://example.org/more\nSigned-off-by: A <a@example.org>\n",
    "cherry-pick": "Body.\n\n(cherry picked from commit 0123456789abcdef0123456789abcdef01234567)\nSigned-off-by: A <a@example.org>\n",
}


def git_trailers(message: str) -> list[tuple[str, str]]:
    out = subprocess.run(["git", "interpret-trailers", "--parse"], input=message, capture_output=True, text=True, check=True).stdout
    pairs = [tuple(s.strip() for s in line.split(":", 1)) for line in out.splitlines() if ":" in line]
    return [(n, v) for n, v in pairs if n.lower() not in ("http", "https")]  # type: ignore[misc]


@pytest.mark.parametrize("name", MESSAGES)
def test_trailer_block_is_gits(name: str) -> None:
    message = MESSAGES[name]
    ours = [(t.name, f"{t.value} {t.comment}".strip() if t.comment.startswith("#") else t.value)
            for t in trailers.trailer_block(message)]
    assert ours == git_trailers(message)


def test_every_fixes_line_is_seen() -> None:
    fixes = [t.value for t in trailers.trailer_block(MESSAGES["malformed fixes"]) if t.name == "Fixes"]
    assert fixes == ["commit 1234567890ab", "?", "https://bugs.example.org/1", '1234567890AB ("x: y")']


def test_comments_are_kept() -> None:
    found = trailers.trailer_block(MESSAGES["bracket and hash comments"])
    assert [(t.name, t.value, t.comment) for t in found] == [
        ("Cc", "stable@vger.example.org", "# 6.1+"),
        ("Signed-off-by", "A <a@example.org>", "[ m: fixed a typo ]"),
        ("Signed-off-by", "M <m@example.org>", ""),
    ]


def mailinfo(path: Path, tmp: Path) -> dict[str, str]:
    out = subprocess.run(["git", "mailinfo", str(tmp / "msg"), str(tmp / "patch")], stdin=path.open("rb"),
                         capture_output=True, text=True, check=True).stdout
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def test_in_body_from_is_the_author_as_git_mailinfo_says(tmp_path: Path) -> None:
    path = MAIL / "on-behalf.mbox"
    info = mailinfo(path, tmp_path)
    series = fetch.build_series(fetch.read_mbox(path), str(path))
    patch = series.patches[0]
    assert patch.author == Person(info["Author"], info["Email"]) == Person("Ana Author", "ana@example.org")
    assert patch.sender == Person("Sam Sender", "sam@example.org")
    assert patch.message == (tmp_path / "msg").read_text()  # the in-body From: is not part of the commit message
    assert "From" not in [t.name for t in patch.trailers]
    assert series.author == patch.author


def test_in_body_headers_continue_and_stop_at_the_blank_line() -> None:
    body = "\nFrom: Ana\n Author <ana@example.org>\nSubject: [PATCH] x: y\n\nFrom: not a header now\n"
    got = trailers.in_body_headers(body)
    assert got.author == Person("Ana Author", "ana@example.org") and got.subject == "[PATCH] x: y" and got.lines == 5
    assert trailers.in_body_headers("Body text\nFrom: late <l@example.org>\n").author is None
