"""One named mail for every class of internal error the mail fuzz found (tests/fuzz/test_mail_fuzz.py).

Each was an exit 70 (or a report that is not UTF-8, or a hang) before reviewer/series/fetch.py mended
headers at the border: now the mail is read as git mailinfo and b4 read it (a made-up id, no
date, UTF-8 for a charset nobody knows, a space for a control character), or refused in one line.
"""
from __future__ import annotations

import datetime as dt
import email.parser
import email.policy
import mailbox
import random
from pathlib import Path

import pytest

from reviewer.errors import ExitStatus, InputError, ReviewerError
from reviewer.model import Review
from reviewer.pipeline import review
from reviewer.report import json as json_report
from reviewer.request import ReviewRequest, SourceOptions
from reviewer.series import fetch, mailmend
from tests.conftest import FIXTURES, git
from tests.fuzz import harness
from tests.helpers import review as review_command

SIGNED = FIXTURES / "rules" / "attestation" / "bad" / "unknown-key.mbox"
MSGID = "20240901090000.4242-1-ada@example.org"
DIFF = b"""---
 mm/dmapool.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/mm/dmapool.c b/mm/dmapool.c
index 9d78463..17ce5f9 100644
--- a/mm/dmapool.c
+++ b/mm/dmapool.c
@@ -1,4 +1,5 @@
 // SPDX-License-Identifier: GPL-2.0-only
+
 /*
  * DMA pool allocator (kernel-mini sketch).
  *
--
2.46.0
"""


def mail(**headers: bytes | None) -> bytes:
    """One patch mail; HEADERS (Message_Id= for Message-Id) replace its headers, None drops one."""
    fields = {"From": b"Ada Author <ada@example.org>", "To": b"linux-mm@lists.example.org",
              "Subject": b"[PATCH] mm/dmapool: Add a blank line", "Date": b"Sun, 1 Sep 2024 09:00:00 +0000",
              "Message-Id": f"<{MSGID}>".encode()}
    fields |= {k.replace("_", "-"): v for k, v in headers.items()}
    head = b"".join(k.encode() + b": " + v + b"\n" for k, v in fields.items() if v is not None)
    body = b"Keep the licence line apart, as the rest of mm/ does.\n\nSigned-off-by: Ada Author <ada@example.org>\n"
    return b"From ada@example.org Sun Sep  1 09:00:00 2024\n" + head + b"\n" + body + DIFF + b"\n"


def reviewed(tmp_path: Path, data: bytes) -> Review:
    """DATA as an mbox, reviewed in-process: read without error, every report built."""
    path = tmp_path / "thread.mbox"
    path.write_bytes(data)
    result, error = review(ReviewRequest(SourceOptions(target=str(path), cwd=tmp_path)))
    assert error is None, error.message
    assert result.series is not None
    harness.reports(result)
    return result


def refused(tmp_path: Path, data: bytes) -> ReviewerError:
    path = tmp_path / "thread.mbox"
    path.write_bytes(data)
    _, error = review(ReviewRequest(SourceOptions(target=str(path), cwd=tmp_path)))
    assert error is not None and error.status == ExitStatus.FETCH and isinstance(error, InputError)
    assert error.message.startswith(f"{path}: ") and "\n" not in error.message and error.hint
    return error


# --- Message-IDs --------------------------------------------------------------------------

@pytest.mark.parametrize("value", [b"<>", b"<", b"<@>", b"< >"])
def test_a_message_id_the_email_package_cannot_parse_is_made_up(value: bytes, tmp_path: Path) -> None:
    # Was: IndexError in email's get_obs_local_part (liblore falls back to the parsed value).
    result = reviewed(tmp_path, mail(Message_Id=value))
    assert result.series is not None and result.series.msgid.endswith("@reviewer.invalid")


def test_a_message_id_without_brackets_is_that_id(tmp_path: Path) -> None:
    """As public-inbox reads it: the id is kept, and a reply naming it the same way threads to it."""
    reply = (b"From rev@example.org Sun Sep  1 10:00:00 2024\nFrom: Rev One <rev1@example.org>\n"
             b"Subject: Re: [PATCH] mm/dmapool: Add a blank line\nDate: Sun, 1 Sep 2024 10:00:00 +0000\n"
             b"Message-Id: <reply-1@example.org>\nIn-Reply-To: " + MSGID.encode() + b"\n\n"
             b"> Keep the licence line apart\n\nReviewed-by: Rev One <rev1@example.org>\n\n")
    result = reviewed(tmp_path, mail(Message_Id=MSGID.encode()) + reply)
    assert result.series is not None and result.series.msgid == MSGID
    followups = [(t.name, t.msgid) for t in result.series.patches[0].trailers if t.source == "followup"]
    assert followups == [("Reviewed-by", "reply-1@example.org")]


def test_undeclared_8bit_bytes_in_a_message_id_reach_the_report_as_utf8(tmp_path: Path) -> None:
    # Was: the id's raw bytes passed through b4 as surrogates; the JSON report could not be encoded as UTF-8.
    result = reviewed(tmp_path, mail(Message_Id=b"<caf\xe9-1@example.org>"))
    assert result.series is not None and result.series.msgid == "caf\ufffd-1@example.org"
    json_report.dumps(result).encode("utf-8")


# --- charsets -----------------------------------------------------------------------------

@pytest.mark.parametrize("content_type", [b'text/plain; charset="utf\x00-8"', b"text/plain; charset*=utf\x00-8''utf-8"])
def test_a_charset_name_with_nul_bytes_is_read_as_utf8(content_type: bytes, tmp_path: Path) -> None:
    # Was: ValueError (embedded null character) from b4's get_payload, or from the email parser itself (RFC 2231).
    data = mail(Content_Type=content_type, MIME_Version=b"1.0")
    result = reviewed(tmp_path, data.replace(b"as the rest of mm/ does", "as J\u00f6rg's mm/ does".encode()))
    assert result.series is not None and "J\u00f6rg's" in result.series.patches[0].message
    assert result.series.patches[0].files and result.series.patches[0].files[0].path == "mm/dmapool.c"


def test_an_encoded_word_in_a_charset_with_a_nul_byte_is_read_as_utf8(tmp_path: Path) -> None:
    # Was: ValueError (embedded null character) from b4's clean_header.
    result = reviewed(tmp_path, mail(Subject=b"[PATCH] mm/dmapool: =?utf-8\x00?q?Caf=C3=A9?= blank line"))
    assert result.series is not None and result.series.patches[0].subject == "mm/dmapool: Caf\u00e9 blank line"


# --- dates --------------------------------------------------------------------------------

@pytest.mark.parametrize("date", [b"Fri, 1 Jan 99999 00:00:00 +0000", b"Sat, 20 Aug 99999999999999999999 09:00:00 +0000",
                                  b"Thu, 31 Feb 2024 10:00:00 +0000",
                                  b"Tue, 20 Aug 99999 09:00:00 +9999"])
def test_a_date_out_of_range_is_read_as_no_date(date: bytes, tmp_path: Path) -> None:
    # Was: ValueError (year out of range, day out of range), OverflowError from b4's date parsing.
    before = dt.datetime.now(dt.UTC)
    result = reviewed(tmp_path, mail(Date=date))
    assert result.series is not None and result.series.date >= before - dt.timedelta(seconds=1)  # b4's "no Date:": now


# --- control characters -------------------------------------------------------------------

@pytest.mark.parametrize("header,value,read", [
    ("Cc", b'"Rev\x0bOne" <rev@example.org>', "Rev One <rev@example.org>"),
    ("Cc", b"=?utf-8?q?Rev=E2=80=A8One?= <rev@example.org>", "Rev One <rev@example.org>"),
    ("To", b"Rev\x0cOne <rev@example.org>", "Rev One <rev@example.org>"),
    ("Subject", b"[PATCH net,v2] mm/dmapool:\x0bAdd a blank line", "[PATCH net,v2] mm/dmapool: Add a blank line"),
    ("Subject", b"[PATCH net,v2] mm/dmapool:=?iso-8859-1?q?=85?=Add a blank line", "[PATCH net,v2] mm/dmapool: Add a blank line"),
    ("Subject", b"[PATCH net,v2] mm/dmapool:=?utf-8?q?=0D?=Add a blank line", "[PATCH net,v2] mm/dmapool: Add a blank line"),
])
def test_a_line_break_inside_a_header_is_a_space(header: str, value: bytes, read: str, tmp_path: Path) -> None:
    """What str.splitlines() takes for a line break (a vertical tab, a form feed, U+2028, U+0085, a CR
    from an encoded word) cannot be set in a header again. Was: ValueError (Header values may not
    contain linefeed...) from the reply mail's To/Cc, and from the subject rewrite for `[PATCH net,v2]`."""
    result = reviewed(tmp_path, mail(**{header: value}))
    assert result.series is not None
    patch = result.series.patches[0]
    assert (patch.mail_subject if header == "Subject" else {"Cc": patch.cc, "To": patch.to}[header][0]) == read


def test_a_commit_with_an_absurd_subject_is_refused_by_name(kernel_repo: Path) -> None:
    """The git range path: format-patch output goes through the same border."""
    (kernel_repo / "mm" / "dmapool.c").write_text((kernel_repo / "mm" / "dmapool.c").read_text() + "\n")
    git(kernel_repo, "commit", "-qam", "mm/dmapool: " + "word " * 25_000)
    _, error = review(ReviewRequest(SourceOptions(target="HEAD~1..HEAD", cwd=kernel_repo)))
    assert isinstance(error, InputError) and error.message.startswith("commit 1 of the range: its Subject header is 1")


# --- addresses and signatures -------------------------------------------------------------

@pytest.mark.parametrize("sender", [b".:1+*:.<[n.:<ef", b" .61'O<\",'\"%)"])
def test_a_from_the_email_package_cannot_parse_is_dropped(sender: bytes, tmp_path: Path) -> None:
    # Was: AttributeError, IndexError or TypeError from email's address parser (via b4).
    result = reviewed(tmp_path, mail(From=sender))
    assert result.series is not None and result.series.patches[0].author.email == ""


def test_a_signed_mail_with_undeclared_8bit_in_from_is_read(tmp_path: Path) -> None:
    # Was: RuntimeError (Error parsing headers) from patatt, which decodes From: as UTF-8.
    data = SIGNED.read_bytes().replace(b"From: Rule Author", b"From: R\xfcle Author")
    result = reviewed(tmp_path, data)
    assert result.series is not None and result.series.patches[0].author.name == "R\ufffdle Author"
    assert result.series.patches[0].attestation and result.series.patches[0].attestation[0].startswith(("badsig", "nokey"))


def test_a_non_ascii_address_is_kept_for_the_reply(tmp_path: Path) -> None:
    """An internationalised address (RFC 6532, raw UTF-8) in Cc: is one the reply goes to.
    Was: UnicodeEncodeError from email.utils.formataddr in reviewer/series/fetch.py _addresses."""
    result = reviewed(tmp_path, mail(Cc="Jorg <j\u00f6rg@example.org>, Ana <ana@b\u00fccher.example>".encode()))
    assert result.series is not None and result.series.patches[0].cc == ("Jorg <j\u00f6rg@example.org>", "Ana <ana@b\u00fccher.example>")


# --- size ---------------------------------------------------------------------------------

def test_a_header_longer_than_any_mail_server_passes_is_refused(tmp_path: Path) -> None:
    # Was: read, quadratically: 20,000 Cc addresses took Python's address parser minutes.
    cc = b",\n ".join(b"user%d@example.org" % n for n in range(8_000))
    error = refused(tmp_path, mail(Cc=cc))
    assert f"message 1 <{MSGID}>: its Cc header is {len(cc):,} bytes long (mail servers pass at most 102,400)" in error.message


def test_the_one_line_error_of_the_real_command(tmp_path: Path) -> None:
    path = tmp_path / "thread.mbox"
    path.write_bytes(mail(References=b"<r@example.org> " * 10_000))
    result = review_command(path, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, f"{path}: message 1 <{MSGID}>: its References header is 160,000 bytes long")
    assert result.stdout == ""


# --- the shapes read without parsing ------------------------------------------------------

def _shaped(rng: random.Random, name: str) -> str:
    """A value of NAME in one of the plain shapes mailers write, drawn at random."""
    atom = "".join(rng.choice("abcXYZ019!#$%&'*+/=^_`{|}~-") for _ in range(rng.randint(1, 6)))  # no "=?": an encoded word
    addr = f"{atom}.{atom[::-1]}@{rng.choice(['example.org', 'a-b.example', 'x'])}"
    display = rng.choice(["", "Ada ", "Ada B. O'Neil-Smith ", '"Last, First" ', '"" ', '"(x) <y>" '])
    mailbox_ = rng.choice([addr, f"{display}<{addr}>"])
    ctype, charset = rng.choice(["text/plain", "text/x-diff"]), rng.choice(["utf-8", '"us-ascii"'])
    values = {
        "from": ", ".join([mailbox_] * rng.randint(1, 3)),
        "message-id": f"<{atom}.{atom}@example.org>",
        "content-type": f"{ctype}; charset={charset}",
        "content-disposition": f'inline; filename="{atom}.diff"',
        "content-transfer-encoding": rng.choice(["8bit", "base64"]),
        "in-reply-to": f"<{atom}@x> (Ada's message)",
        "subject": f'[PATCH {atom}] a: b (c) <d> "e"',
        "date": rng.choice(["Sun, 1 Sep 2024 09:00:00 +0200", "1 Sep 2024 09:00 -0000", "Sun, 01 Sep 2024 09:00:00 GMT"]),
    }
    return values[name]


@pytest.mark.parametrize("name", ["from", "message-id", "content-type", "content-disposition", "content-transfer-encoding",
                                  "in-reply-to", "subject", "date"])
def test_values_taken_as_they_are_are_ones_the_email_package_reads(name: str) -> None:
    """fetch skips the trial parse for values of a few plain shapes: these must never make the
    email package raise, which it does for printable ASCII of other shapes (`From: <x`, `Message-Id: <`)."""
    rng = random.Random(name)
    policy = email.policy.EmailPolicy(utf8=True, linesep="\n")
    for _ in range(300):
        value = _shaped(rng, name)
        assert mailmend._plainly_fine(name, value), value
        str(policy.header_fetch_parse(name, value))
    assert not mailmend._plainly_fine("message-id", "<") and not mailmend._plainly_fine("from", "<x")


def test_mended_mail_is_unchanged_when_nothing_needs_mending() -> None:
    """Every fixture mail is read byte for byte as the email package reads it (patatt signs headers)."""
    parser = email.parser.BytesParser(policy=email.policy.EmailPolicy(utf8=True, linesep="\n"))
    mails = [box.get_bytes(key) for path in sorted(FIXTURES.glob("**/*.mbox")) for box in [mailbox.mbox(path)] for key in box.iterkeys()]
    assert len(mails) > 150
    for raw in mails:
        assert fetch.parse_bytes(raw).as_bytes() == parser.parsebytes(raw).as_bytes(), raw[:300]
