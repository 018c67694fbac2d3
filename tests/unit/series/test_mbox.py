"""The one mboxrd writer and the one patch-as-mail builder, read back by git itself: `git mailsplit
--mboxrd` gives each mail back byte for byte, and `git am --patch-format=mboxrd` commits the
message and the change that went in, `From ` and `>From ` lines included."""
from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

from reviewer.kernelscripts.mails import Where, render
from reviewer.model import Patch, Person
from reviewer.series import fetch, mbox
from reviewer.series.patchparse import parse_diff
from tests.conftest import git

TRICKY = b"".join((b"From: A <a@example.org>\nSubject: tricky\n\n", b"From the start of a line\n", b">From once quoted\n",
                   b">>From twice\n", b" From indented\n", b"From\n", b"last line, no blank after\n"))


def _split(tmp_path: Path, data: bytes) -> list[bytes]:
    (tmp_path / "box").write_bytes(data)
    out = tmp_path / "split"
    out.mkdir()
    subprocess.run(["git", "mailsplit", "--mboxrd", "-o" + str(out), str(tmp_path / "box")], check=True, capture_output=True)
    return [f.read_bytes() for f in sorted(out.iterdir())]


def test_git_mailsplit_mboxrd_reads_each_mail_back_byte_for_byte(tmp_path: Path) -> None:
    mails = [TRICKY, b"Subject: two\n\nbody\n\n\n", b"Subject: three\n\nno final newline"]
    data = mbox.write(mails)
    assert b"\n>From the start" in data and b"\n>>From once" in data and b"\n>>>From twice" in data
    back = _split(tmp_path, data)
    # git keeps the `From ` line and the blank line that ends a message; a mail without a final newline gets one
    assert back == [mbox.FROM_LINE + m for m in (TRICKY + b"\n", b"Subject: two\n\nbody\n\n\n\n",
                                                 b"Subject: three\n\nno final newline\n\n")]


def test_liblore_reads_the_thread_cache_back_unchanged() -> None:
    body = TRICKY.split(b"\n\n", 1)[1]
    msg = fetch.parse_bytes(b"Message-Id: <a@b>\nFrom: A <a@example.org>\nSubject: s\n\n" + body)
    data = fetch.to_mbox([msg])
    (back,) = fetch.split_thread(data)
    payload = back.get_payload(decode=True)
    assert isinstance(payload, bytes) and payload.rstrip(b"\n") == body.rstrip(b"\n")  # liblore keeps the ending blank line
    assert fetch.to_mbox([back]) == data


DIFF = """diff --git a/f.c b/f.c
index 0000000..1111111 100644
--- a/f.c
+++ b/f.c
@@ -1,2 +1,3 @@
 int a;
+int b;\f/* a form feed: not a line end */
 int c;
"""


def _patch(diff: str = DIFF) -> Patch:
    message = ("f: add b\n\nFrom a quoted mail:\n>From the list, quoted\nFrom here on, all is well.\n\n"
               "Signed-off-by: Ünïcode Äuthor <u@example.org>\n")
    return Patch(1, 1, "f: add b", "m@x", Person("Ünïcode Äuthor", "u@example.org"),
                 dt.datetime(2024, 8, 11, 12, 0, tzinfo=dt.UTC), message, diff, files=parse_diff(diff))


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f.c").write_text("int a;\nint c;\n")
    git(repo, "add", "f.c")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def test_git_am_mboxrd_commits_the_message_and_the_change_as_they_went_in(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    patch = _patch()
    (tmp_path / "series.mbox").write_bytes(mbox.write([mbox.patch_mail(patch)]))
    subprocess.run(["git", "-C", str(repo), "am", "-q", "--patch-format=mboxrd", str(tmp_path / "series.mbox")], check=True)
    assert git(repo, "log", "-1", "--format=%B") == f"{patch.subject}\n\n{patch.message}\n"
    assert git(repo, "log", "-1", "--format=%an <%ae>|%aI") == "Ünïcode Äuthor <u@example.org>|2024-08-11T12:00:00+00:00\n"
    assert (repo / "f.c").read_text() == "int a;\nint b;\f/* a form feed: not a line end */\nint c;\n"


def test_checkpatch_mail_is_the_same_mail_without_its_date() -> None:
    patch = _patch()
    mail = render(patch)
    assert mail.text.encode() == mbox.patch_mail(patch, dated=False)
    assert mbox.patch_mail(patch).replace(b"Date: Sun, 11 Aug 2024 12:00:00 +0000\n", b"") == mail.text.encode()
    lines = mail.text.split("\n")
    added = lines.index("+int b;\f/* a form feed: not a line end */") + 1
    assert mail.where(added) == Where("f.c", 2, "int b;\f/* a form feed: not a line end */")
    assert mail.where(added + 1) == Where("f.c", 3)
