"""Mutations that give a fixture mail the shapes of real mail from lists and mail clients.

corpus.py damages headers and bytes; these rebuild a message the way real senders shape one, and
then break that shape where senders do: MIME (multipart with 8-bit text in every part and in part
headers, a multipart whose first boundary never comes, parts nested hundreds deep), RFC 2047
encoded words in every header that may hold them, Message-Id fields written without a space
(`Message-Id:@`), thousands of header fields, and diffs whose file names hold a NUL, a newline,
an escape or `..`, or whose hunk and mode lines are absurd. Three were exit 70 before (issue #30):
the unsplit multipart without a Message-Id, `Message-Id:@`, a NUL in a diff path reviewed with --tree.
"""
from __future__ import annotations

import base64
import quopri
import random
import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.fuzz.corpus import Mail

    Thread = list[Mail]

_GIT_HEADER = re.compile(rb"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)
# Text as people write it: accents, other scripts, a symbol outside the BMP.
WORDS = ["J\u00f6rg M\u00fcller", "Fran\u00e7ois", "\u0141ukasz Ma\u0142ek", "\u0410\u043b\u0435\u043a\u0441\u0435\u0439",
         "\u5f20\u4f1f", "caf\u00e9 na\u00efve", "\U0001f600 ok", "Zo\u00eb \u00c5str\u00f6m"]
CHARSETS = ["utf-8", "iso-8859-1", "windows-1252", "koi8-r", "iso-8859-2", "gb2312", "shift_jis"]


def _on(thread: Thread, i: int, mail: Mail) -> Thread:
    return [mail if j == i else m for j, m in enumerate(thread)]


def _encodable(rng: random.Random, charset: str) -> tuple[str, bytes]:
    """A word of WORDS that CHARSET can hold (else plain ASCII), and its bytes in it."""
    for word in rng.sample(WORDS, len(WORDS)):
        try:
            return word, word.encode(charset)
        except UnicodeEncodeError:
            continue
    return "plain", b"plain"


def msgid_raw(rng: random.Random, thread: Thread, i: int) -> Thread:
    """The Message-Id field as broken mailers write it: no space after the colon, a bare `@`, nothing."""
    field = rng.choice([b"Message-Id:@", b"Message-Id:<@>", b"Message-ID:@example.org", b"Message-Id:\t@", b"Message-Id: @@",
                        b"Message-Id:<>", b"Message-Id: <a@b>@", b"Message-Id:@\n @", b"Message-ID:", b"Message-Id: a@",
                        b"Message-Id: @b", b"Message-Id:<@@>", b"Message-Id: <a@b> <@>", b"MESSAGE-ID:@"])
    fields = [f for f in thread[i].fields if f.split(b":", 1)[0].strip().lower() != b"message-id"]
    fields.insert(rng.randrange(len(fields) + 1), field)
    return _on(thread, i, replace(thread[i], fields=tuple(fields)))


def multipart_unsplit(rng: random.Random, thread: Thread, i: int) -> Thread:
    """Declared multipart, first boundary never there, 8-bit text in it, mostly no Message-Id (a made-up id is a
    hash of the mail's bytes): the shape of two of Patchwork's own test mails."""
    _, junk = _encodable(rng, rng.choice(CHARSETS))
    junk = rng.choice([junk, b"\xff\xfe\x80", b"\x0b---", junk + b"\x8e"])
    body = rng.choice([junk + b"\n" + thread[i].body, thread[i].body.replace(b"\n", b" " + junk + b"\n", 4),
                       b"\x0b--wrong-boundary\n" + junk + b"\n" + thread[i].body + b"\n--wrong-boundary--\n"])
    kind = rng.choice([b"mixed", b"alternative", b"signed", b"related"])
    mail = replace(thread[i], body=body).set(b"Content-Type",
                                             b"multipart/" + kind + b'; boundary="=-=b' + str(rng.randrange(99)).encode() + b'"')
    mail = mail.set(b"MIME-Version", b"1.0").set(b"Content-Transfer-Encoding", None)
    return _on(thread, i, mail.set(b"Message-Id", None) if rng.random() < 0.7 else mail)


def _part(rng: random.Random, text: bytes, ctype: bytes) -> bytes:
    """One MIME part of TEXT (the mail's body plus a line in another script), in a charset and encoding drawn."""
    charset = rng.choice(CHARSETS)
    word, encoded = _encodable(rng, charset)
    data = encoded + b"\n\n" + text
    cte = rng.choice([b"8bit", b"base64", b"quoted-printable"])
    payload = base64.encodebytes(data) if cte == b"base64" else quopri.encodestring(data) if cte == b"quoted-printable" else data
    name = rng.choice([b"", b'; name="' + word.encode() + b'.diff"',
                       b"; name*=utf-8''" + "".join(f"%{c:02X}" for c in word.encode()).encode()])
    head = b"Content-Type: " + ctype + b"; charset=" + charset.encode() + name + b"\nContent-Transfer-Encoding: " + cte + b"\n"
    if rng.random() < 0.3:
        head += b"Content-Disposition: " + rng.choice([b"inline", b"attachment"]) + b'; filename="' + word.encode() + b'.patch"\n'
    return head + b"\n" + payload


def multipart_8bit(rng: random.Random, thread: Thread, i: int) -> Thread:
    """A well-formed multipart: the message and the patch inline or as an attachment, an HTML alternative, a
    signature part; non-ASCII text in every part, in several charsets and transfer encodings, and raw
    UTF-8 in part headers (file names)."""
    mail, boundary = thread[i], b"=_b" + str(rng.randrange(10_000)).encode()
    message, sep, diff = mail.body.partition(b"\n---\n")
    parts = [_part(rng, mail.body, b"text/plain")] if not sep or rng.random() < 0.5 else \
        [_part(rng, message, b"text/plain"), _part(rng, b"---\n" + diff, rng.choice([b"text/x-diff", b"text/x-patch", b"text/plain"]))]
    if rng.random() < 0.4:
        parts.append(_part(rng, b"<p>" + message[:200] + b"</p>", b"text/html"))
    if rng.random() < 0.2:
        parts.append(b"Content-Type: application/pgp-signature\n\n-----BEGIN PGP SIGNATURE-----\nnot one\n-----END PGP SIGNATURE-----\n")
    body = b"This is a MIME message.\n" + b"".join(b"--" + boundary + b"\n" + p + b"\n" for p in parts) + b"--" + boundary + b"--\n"
    kind = rng.choice([b"mixed", b"alternative", b"signed; protocol=\"application/pgp-signature\""])
    mail = replace(mail, body=body).set(b"Content-Type", b"multipart/" + kind + b'; boundary="' + boundary + b'"')
    return _on(thread, i, mail.set(b"MIME-Version", b"1.0").set(b"Content-Transfer-Encoding", None))


def mime_deep(rng: random.Random, thread: Thread, i: int) -> Thread:
    """Multiparts nested inside multiparts, a few to over a thousand deep (the email package recurses per level)."""
    depth = rng.choice([3, 12, 63, 64, 65, 200, 1200])
    opens = b"".join(b'--d%d\nContent-Type: multipart/mixed; boundary="d%d"\n\n' % (n, n + 1) for n in range(depth))
    closes = b"".join(b"--d%d--\n" % n for n in range(depth, -1, -1))
    body = opens + b"--d%d\nContent-Type: text/plain; charset=utf-8\n\n" % depth + thread[i].body + b"\n" + closes
    mail = replace(thread[i], body=body).set(b"Content-Type", b'multipart/mixed; boundary="d0"').set(b"MIME-Version", b"1.0")
    return _on(thread, i, mail.set(b"Content-Transfer-Encoding", None))


def _word(rng: random.Random) -> bytes:
    """One RFC 2047 encoded word, well-formed or not quite."""
    charset = rng.choice([*CHARSETS, "utf-8*de", "UTF-8", "x-unknown", "us-ascii"])
    text, data = _encodable(rng, charset.partition("*")[0] if charset != "x-unknown" else "utf-8")
    if rng.random() < 0.5:
        return b"=?" + charset.encode() + b"?B?" + base64.b64encode(data) + b"?="
    q = b"".join(bytes([c]) if chr(c).isalnum() else b"=%02X" % c for c in data).replace(b"=20", b"_")
    return rng.choice([b"=?" + charset.encode() + b"?Q?" + q + b"?=", b"=?" + charset.encode() + b"?q?" + q + b"?= ?",
                       b'"=?' + charset.encode() + b"?Q?" + q + b'?="', b"=?" + charset.encode() + b"?Q?" + q[: len(q) // 2] + b"?="])


def encoded_words(rng: random.Random, thread: Thread, i: int) -> Thread:
    """Encoded words in From, Subject, To or Cc: adjacent (their space dropped), folded between, inside quotes,
    mixed with raw UTF-8, in charsets Python has and one it has not."""
    words = [_word(rng) for _ in range(rng.randint(1, 4))]
    joined = rng.choice([b" ", b"\n ", b"\n\t", b""]).join(words)
    mail = thread[i]
    header = rng.choice([b"From", b"Subject", b"To", b"Cc"])
    if header == b"Subject":
        value = b"[PATCH] " + joined + b" " + (mail.get(b"Subject") or b"x")
    else:
        value = joined + b" <" + rng.choice([b"jorg", "j\u00f6rg".encode(), b"a.b"]) + b"@example.org>"
        value = value + b", " + _word(rng) + b" <second@example.org>" if header != b"From" and rng.random() < 0.5 else value
    return _on(thread, i, mail.set(header, value))


def header_many(rng: random.Random, thread: Thread, i: int) -> Thread:
    """Thousands of header fields: Received lines of a long relay chain, one Cc field per address, X- noise."""
    n = rng.choice([500, 2000, 5000])
    name = rng.choice([b"Received", b"Cc", b"X-Noise", b"References", b"To"])
    made = tuple(name + b": " + (b"from h%d.example.org by relay; Sun, 1 Sep 2024 09:00:00 +0000" % k if name == b"Received"
                                 else b"<r%d@example.org>" % k if name == b"References" else b"user%d@example.org" % k) for k in range(n))
    fields = list(thread[i].fields)
    at = rng.randrange(len(fields) + 1)
    return _on(thread, i, replace(thread[i], fields=(*fields[:at], *made, *fields[at:])))


def _with_diff(thread: Thread, i: int) -> int:
    """A mail of THREAD that holds a git diff (I's first), or I itself when none does."""
    order = [i, *(j for j in range(len(thread)) if j != i)]
    return next((j for j in order if _GIT_HEADER.search(thread[j].body)), i)


def _rename(body: bytes, path: bytes, new: Callable[[bytes], bytes]) -> bytes:
    """BODY with every header line naming PATH (git header, ---/+++, rename/copy lines) naming NEW(PATH) instead."""
    out = []
    for line in body.split(b"\n"):
        if line.startswith((b"diff --git ", b"--- ", b"+++ ", b"rename from ", b"rename to ", b"copy from ", b"copy to ")):
            line = line.replace(path, new(path))
        out.append(line)
    return b"\n".join(out)


def _nul(rng: random.Random, path: bytes) -> bytes:
    at = rng.randrange(1, len(path))
    return path[:at] + b"\x00" + path[at:]


_NAMES: list[Callable[[random.Random, bytes], bytes]] = [
    _nul,  # a raw NUL
    lambda _rng, p: b'"' + p.replace(b"/", b"/\\000", 1) + b'"',  # a NUL as git quotes it
    lambda _rng, p: b'"' + p + b'\\nReviewed-by: Forged <f@example.org>"',  # a newline as git quotes it
    lambda _rng, p: b'"' + p + b'\\033[2J"',  # an escape sequence
    lambda _rng, p: p + b"\x1b[2J",  # the same, raw
    lambda _rng, p: b'"' + p + b'\\377\\376"',  # not UTF-8
    lambda _rng, p: b"../../" + p,  # out of the tree
    lambda _rng, p: b"/etc/" + p.rsplit(b"/", 1)[-1],  # absolute
    lambda _rng, p: b".git/hooks/" + p.rsplit(b"/", 1)[-1],  # into git's own directory
    lambda _rng, p: p + b"/" + b"x" * 4200,  # longer than PATH_MAX
    lambda _rng, p: p.replace(b"/", b"//"),  # doubled separators
    lambda _rng, p: p + b"\t",  # a trailing tab (diff -u's date separator)
]


def diff_path(rng: random.Random, thread: Thread, i: int) -> Thread:
    """A file name in the diff no file system or git tree has: a NUL (raw or quoted), a newline or an escape
    (quoted or raw), bytes that are not UTF-8, `..`, an absolute path, .git/, over PATH_MAX. In the git header,
    the ---/+++ lines, or only one of them."""
    j = _with_diff(thread, i)
    found = _GIT_HEADER.findall(thread[j].body)
    if not found:
        return _on(thread, j, replace(thread[j], body=thread[j].body + b"\n" + _SMALL_DIFF.replace(b"mm/x.c", b"mm/\x00x.c")))
    path = rng.choice(found)[1]
    make = rng.choice(_NAMES)
    body = _rename(thread[j].body, path, lambda p: make(rng, p))
    if rng.random() < 0.3:  # only the new name is odd
        body = thread[j].body.replace(b"+++ b/" + path, b"+++ b/" + make(rng, path), 1)
    return _on(thread, j, replace(thread[j], body=body))


_SMALL_DIFF = (b"---\ndiff --git a/mm/x.c b/mm/x.c\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n+++ b/mm/x.c\n"
               b"@@ -0,0 +1 @@\n+int x;\n")
_ODD_LINES = [
    (rb"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@", [b"@@ -1,99999999999999999999 +1,1 @@", b"@@ -0,0 +0,0 @@", b"@@ -4294967296,1 +1,1 @@",
                                            b"@@ -1,-1 +1,1 @@", b"@@ -1 +1 @@@@"]),
    (rb"^index [0-9a-f]+\.\.[0-9a-f]+( \d+)?$", [b"index zzzz..yyyy 100644", b"index " + b"f" * 200 + b".." + b"0" * 200,
                                                b"index 0000000..0000000 999999", b"index ..", b"index 1234567..89abcde 100644 extra"]),
    (rb"^diff --git .*$", [b"diff --git a/x", b"diff --git", b"diff --git a/ b/", b"diff --git \"a/unterminated b/x"]),
]


def diff_lines(rng: random.Random, thread: Thread, i: int) -> Thread:
    """A diff header line git would refuse or read oddly: absurd hunk numbers, an index of the wrong width or mode,
    a broken git header, a new-file mode of seven digits, a rename without its target, a binary patch of garbage."""
    j = _with_diff(thread, i)
    body = thread[j].body
    pattern, choices = rng.choice(_ODD_LINES)
    if rng.random() < 0.35:
        extra = rng.choice([b"new file mode 1234567\n", b"rename from mm/dmapool.c\n", b"similarity index 999%\n",
                            b"GIT binary patch\nliteral 99999999999\nzcmZ?wbhEHb\n\nliteral 0\nHcmV?d00001\n\n", b"deleted file mode\n"])
        body = re.sub(rb"^(diff --git [^\n]*\n)", lambda m: m.group(1) + extra, body, count=1, flags=re.MULTILINE)
    else:
        body = re.sub(pattern, lambda _m: rng.choice(choices), body, count=1, flags=re.MULTILINE)
    return _on(thread, j, replace(thread[j], body=body if body != thread[j].body else body + b"\n" + _SMALL_DIFF))


SHAPES: dict[str, Callable[[random.Random, Thread, int], Thread]] = {
    "msgid-raw": msgid_raw,
    "multipart-unsplit": multipart_unsplit,
    "multipart-8bit": multipart_8bit,
    "mime-deep": mime_deep,
    "encoded-words": encoded_words,
    "header-many": header_many,
    "diff-path": diff_path,
    "diff-lines": diff_lines,
}
FAMILIES = {"real-mime": ["multipart-unsplit", "multipart-8bit", "mime-deep"],
            "real-headers": ["msgid-raw", "encoded-words", "header-many"],
            "diff-names": ["diff-path", "diff-lines"]}
