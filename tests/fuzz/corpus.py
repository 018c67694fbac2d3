"""Mutated mail made from the fixtures, deterministically (seeded), in memory.

Each case is one input as a user would give it: a seed thread (an mbox of fixtures/) with one
of its messages damaged in one way, written as an mbox, a single .eml, a format-patch
directory or standard input. The damage is what mail in the wild has: truncated headers,
Message-IDs without brackets or of absurd length, reference cycles, broken RFC 2047 words,
impossible dates, charset names with NUL bytes, broken MIME, cut base64, CR line ends, byte
flips, an unescaped mbox `From ` line, undeclared 8-bit bytes.
"""
from __future__ import annotations

import base64
import quopri
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from tests.fuzz import shapes

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CASES_PER_KIND = 25
# A 100 kB header takes Python's email parser about a second per mail (and 5,000 header fields half a
# second): fewer of those keep the run short.
FEWER = {"subject-huge": 6, "header-huge": 6, "header-many": 8, "mime-deep": 12, "refs-garbage": 16}
# Kinds also reviewed with --tree (the base guessed from the diff's blobs, the series applied: the paths
# reach git's command line), each on a seed of fixtures/series/ (those apply to kernel-mini).
TREE_KINDS = ("diff-path", "diff-lines", "msgid-raw", "multipart-unsplit", "multipart-8bit", "encoded-words", "flip-body",
              "base64-broken", "header-truncate", "undeclared-8bit")
TREE_PER_KIND = 7
_FROM_LINE = re.compile(rb"^From ", re.MULTILINE)


def seeds() -> list[Path]:
    """Every series and mail fixture with a message, and every seventh rule fixture."""
    mine = sorted([*FIXTURES.glob("series/**/*.mbox"), *FIXTURES.glob("mail/**/*.mbox")])
    rules = sorted(FIXTURES.glob("rules/*/*/*.mbox"))[::7]
    return [p for p in [*mine, *rules] if _FROM_LINE.search(p.read_bytes())]


@dataclass(frozen=True)
class Mail:
    """One message as bytes: its mbox `From ` line, its header fields (continuation lines kept), its body."""

    from_line: bytes
    fields: tuple[bytes, ...]
    body: bytes

    def get(self, name: bytes) -> bytes | None:
        for f in self.fields:
            if _name(f) == name.lower():
                return f.split(b":", 1)[1].strip()
        return None

    def set(self, name: bytes, value: bytes | None, *, add: bool = False) -> Mail:
        """Replace the first NAME field by VALUE (None: drop every NAME; ADD: keep the old ones too)."""
        new = name + b": " + value if value is not None else None
        out, done = [], False
        for f in self.fields:
            if _name(f) == name.lower() and not add:
                if new is not None and not done:
                    out.append(new)
                done = True
            else:
                out.append(f)
        if new is not None and (add or not done):
            out.append(new)
        return replace(self, fields=tuple(out))

    def header_bytes(self) -> bytes:
        return b"".join(f + b"\n" for f in self.fields)

    def raw(self) -> bytes:
        return self.header_bytes() + b"\n" + self.body


def _name(field: bytes) -> bytes:
    return field.split(b":", 1)[0].strip().lower()


def split_mbox(data: bytes) -> list[Mail]:
    starts = [m.start() for m in _FROM_LINE.finditer(data)]
    return [_mail(data[a:b]) for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]


def _mail(chunk: bytes) -> Mail:
    chunk = chunk.replace(b"\r\n", b"\n")
    from_line, _, rest = chunk.partition(b"\n")
    head, _, body = rest.partition(b"\n\n")
    fields: list[bytes] = []
    for line in head.split(b"\n"):
        if line[:1] in (b" ", b"\t") and fields:
            fields[-1] += b"\n" + line
        elif line:
            fields.append(line)
    return Mail(from_line, tuple(fields), body)


def join_mbox(mails: list[Mail]) -> bytes:
    return b"".join(m.from_line + b"\n" + m.raw().rstrip(b"\n") + b"\n\n" for m in mails)


# --- the mutations: (rng, thread, index of the mail to damage) -> thread -------------------

Thread = list[Mail]
Mutation = Callable[[random.Random, Thread, int], Thread]


def _on(thread: Thread, i: int, mail: Mail) -> Thread:
    return [mail if j == i else m for j, m in enumerate(thread)]


def _msgid(mail: Mail) -> bytes:
    return (mail.get(b"Message-Id") or b"<x@example.org>").strip(b"<>")


def _set(name: bytes, *values: bytes | None, add: bool = False) -> Mutation:
    """Set header NAME of the mail to one of VALUES (None: drop it)."""
    def mutate(rng: random.Random, thread: Thread, i: int) -> Thread:
        return _on(thread, i, thread[i].set(name, rng.choice(values), add=add))
    return mutate


def header_truncate(rng: random.Random, thread: Thread, i: int) -> Thread:
    """The message cut at a random point of its header block (mid-line too); the body is gone."""
    head = thread[i].header_bytes()
    cut = head[: rng.randrange(len(head) + 1)]
    fields = tuple(f for f in cut.split(b"\n") if f)
    return _on(thread, i, Mail(thread[i].from_line, fields, b""))


def header_noise(rng: random.Random, thread: Thread, i: int) -> Thread:
    """Lines that are not header fields, among them: no colon, a space before the colon, an empty name."""
    fields = list(thread[i].fields)
    for line in rng.sample([b"not a header at all", b"Subject : spaced", b": no name", b" continuation first",
                            b"X-\xff\xfe: binary name", b"Content-Type", b"=?utf-8?q?x?=: encoded name"], 3):
        fields.insert(rng.randrange(len(fields) + 1), line)
    return _on(thread, i, replace(thread[i], fields=tuple(fields)))


def msgid_duplicate(rng: random.Random, thread: Thread, i: int) -> Thread:
    """Two Message-IDs in one mail, or another mail's id."""
    other = _msgid(thread[rng.randrange(len(thread))])
    if rng.random() < 0.5:
        return _on(thread, i, thread[i].set(b"Message-Id", b"<second-" + other + b">", add=True))
    return _on(thread, i, thread[i].set(b"Message-Id", b"<" + other + b">"))


def msgid_huge(rng: random.Random, thread: Thread, i: int) -> Thread:
    body = bytes(rng.choice(b"abcdefghij0123456789.-") for _ in range(10_000))
    return _on(thread, i, thread[i].set(b"Message-Id", b"<" + body + b"@example.org>"))


def refs_self(rng: random.Random, thread: Thread, i: int) -> Thread:
    own = b"<" + _msgid(thread[i]) + b">"
    mail = thread[i].set(b"In-Reply-To", own)
    return _on(thread, i, mail.set(b"References", own if rng.random() < 0.5 else own + b" " + own))


def refs_cycle(rng: random.Random, thread: Thread, i: int) -> Thread:
    """Mail I and another answer each other (a two-cycle, or a longer one through the whole thread)."""
    if len(thread) == 1:
        return refs_self(rng, thread, i)
    ids = [b"<" + _msgid(m) + b">" for m in thread]
    if rng.random() < 0.5:
        j = rng.choice([k for k in range(len(thread)) if k != i])
        out = _on(thread, i, thread[i].set(b"In-Reply-To", ids[j]).set(b"References", ids[j]))
        return _on(out, j, out[j].set(b"In-Reply-To", ids[i]).set(b"References", ids[i]))
    return [m.set(b"In-Reply-To", ids[k - 1]).set(b"References", b" ".join(ids[k - 1 :: -1])) for k, m in enumerate(thread)]


def refs_garbage(rng: random.Random, thread: Thread, i: int) -> Thread:
    value = rng.choice([b"no-brackets@example.org", b"<>", b"<<<", b"<a@b> garbage <c",
                        b" ".join(b"<r%d@example.org>" % n for n in range(2000))])
    return _on(thread, i, thread[i].set(rng.choice([b"References", b"In-Reply-To"]), value))


def subject_huge(rng: random.Random, thread: Thread, i: int) -> Thread:
    word = rng.choice([b"x", b"word ", b"[PATCH] ", b"=?utf-8?q?=C3=A9?= "])
    subject = (thread[i].get(b"Subject") or b"") + b" " + word * (100_000 // len(word))
    return _on(thread, i, thread[i].set(b"Subject", subject))


def subject_control(rng: random.Random, thread: Thread, i: int) -> Thread:
    subject = bytearray(thread[i].get(b"Subject") or b"[PATCH] x")
    for _ in range(rng.randint(1, 5)):
        subject.insert(rng.randrange(len(subject) + 1), rng.choice([0, 1, 7, 8, 11, 12, 13, 27, 127]))
    return _on(thread, i, thread[i].set(b"Subject", bytes(subject)))


def header_huge(rng: random.Random, thread: Thread, i: int) -> Thread:
    """A header of absurd length, unfoldable (no spaces) or folded a thousand times."""
    name = rng.choice([b"X-Junk", b"To", b"Cc", b"Subject", b"Received", b"References", b"X-" + b"N" * 5000])
    value = b"a" * 150_000 if rng.random() < 0.5 else b"\n ".join([b"folded,"] * 3_000)
    return _on(thread, i, thread[i].set(name, value, add=name.startswith(b"X-")))


def _damage(rng: random.Random, data: bytes, count: int) -> bytes:
    out = bytearray(data)
    for _ in range(count):
        if out:
            out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def flip_headers(rng: random.Random, thread: Thread, i: int) -> Thread:
    head = _damage(rng, thread[i].header_bytes(), rng.randint(1, 20))
    fields = tuple(f for f in head.split(b"\n") if f)
    return _on(thread, i, replace(thread[i], fields=fields))


def flip_body(rng: random.Random, thread: Thread, i: int) -> Thread:
    return _on(thread, i, replace(thread[i], body=_damage(rng, thread[i].body, rng.randint(1, 40))))


def from_line_in_body(rng: random.Random, thread: Thread, i: int) -> Thread:
    """An unescaped mbox `From ` line in the body: readers split the message there."""
    lines = thread[i].body.split(b"\n")
    at = rng.randrange(len(lines) + 1)
    lines.insert(at, rng.choice([b"From here on it is different", b"From someone@example.org Mon Sep 17 00:00:00 2001",
                                 b"From "]))
    return _on(thread, i, replace(thread[i], body=b"\n".join(lines)))


def undeclared_8bit(rng: random.Random, thread: Thread, i: int) -> Thread:
    """Latin-1 and invalid UTF-8 bytes in body and headers, with no charset declared."""
    mail = thread[i].set(b"Content-Type", None).set(b"Content-Transfer-Encoding", None)
    junk = rng.choice([b"caf\xe9", b"\xff\xfe\xfd", b"\xc3", b"\xe2\x82", b"na\xefve \x80\x81"])
    body = mail.body.replace(b"\n", b" " + junk + b"\n", 3)
    mail = replace(mail, body=body).set(b"Subject", (mail.get(b"Subject") or b"") + b" " + junk)
    return _on(thread, i, mail.set(b"From", b"J\xf6rg " + junk + b" <jorg@example.org>") if rng.random() < 0.5 else mail)


def content_type_bad(rng: random.Random, thread: Thread, i: int) -> Thread:
    """A Content-Type or Content-Disposition that does not parse, or whose RFC 2231 parameters name no charset."""
    name, value = rng.choice([(b"Content-Type", b"garbage"), (b"Content-Type", b"text/"), (b"Content-Type", b"L;}*"),
                              (b"Content-Type", b"multipart/mixed"),
                              (b"Content-Type", b"text/plain; charset*=utf\x00-8''utf-8"), (b"Content-Type", b"text/plain; charset*=''"),
                              (b"Content-Type", b"text/x-diff; name*=x-bad\x00''p.diff"), (b"Content-Type", b"text/plain; charset=\"utf-8"),
                              (b"Content-Disposition", b"attachment; filename*=x-bad\x00''p.diff"),
                              (b"Content-Disposition", b"attachment; filename*0*=utf-8''a; filename*1*=%FF%00")])
    return _on(thread, i, thread[i].set(name, value))


def charset_bad(rng: random.Random, thread: Thread, i: int) -> Thread:
    charset = rng.choice([b"utf\x00-8", b"\x00", b"x-no-such-charset", b"\"\"", b"utf-8'en'", b"iso-8859-1\x00\x00",
                          b"unicode-1-1-utf-7", b"utf-32", b"..", b"\xff\xfe"])
    mail = thread[i].set(b"Content-Type", b"text/plain; charset=" + charset)
    return _on(thread, i, mail.set(b"Content-Transfer-Encoding", rng.choice([b"8bit", b"quoted-printable", b"base64"]))
               if rng.random() < 0.3 else mail)


def _wrap_multipart(body: bytes, boundary: bytes, *, end: bool, extra: bytes = b"") -> bytes:
    part = b"Content-Type: text/plain; charset=utf-8\n\n" + body
    return b"preamble\n--" + boundary + b"\n" + part + b"\n" + extra + (b"--" + boundary + b"--\n" if end else b"")


def multipart_broken(rng: random.Random, thread: Thread, i: int) -> Thread:
    """The body as a MIME part whose boundaries are missing, wrong, nested or inside the text."""
    mail, boundary = thread[i], b"=-=b" + str(rng.randrange(1000)).encode()
    kind = rng.choice(["no-end", "undeclared", "no-boundary-param", "nested", "boundary-in-body", "empty", "no-parts"])
    declared = b"multipart/mixed; boundary=\"" + boundary + b"\""
    if kind == "no-end":
        body = _wrap_multipart(mail.body, boundary, end=False)
    elif kind == "undeclared":
        body = _wrap_multipart(mail.body, b"other", end=True)
    elif kind == "no-boundary-param":
        body, declared = _wrap_multipart(mail.body, boundary, end=True), b"multipart/mixed"
    elif kind == "nested":
        inner = b"Content-Type: multipart/alternative; boundary=\"" + boundary + b"\"\n\n" + _wrap_multipart(mail.body, boundary, end=False)
        body = b"--" + boundary + b"\n" + inner + b"\n--" + boundary + b"--\n"
    elif kind == "boundary-in-body":
        lines = mail.body.split(b"\n")
        lines.insert(rng.randrange(len(lines) + 1), b"--" + boundary)
        body = _wrap_multipart(b"\n".join(lines), boundary, end=True)
    elif kind == "empty":
        body = b""
    else:
        body = mail.body
    mail = replace(mail, body=body).set(b"Content-Type", declared).set(b"Content-Transfer-Encoding", None)
    return _on(thread, i, mail.set(b"MIME-Version", b"1.0"))


def base64_broken(rng: random.Random, thread: Thread, i: int) -> Thread:
    encoded = base64.encodebytes(thread[i].body)
    kind = rng.choice(["cut", "invalid", "padding", "cut-mid-line"])
    if kind == "cut":
        encoded = encoded[: rng.randrange(len(encoded) + 1)]
    elif kind == "cut-mid-line":
        encoded = encoded[: rng.randrange(len(encoded) + 1)].rstrip(b"\n")[:-1]
    elif kind == "invalid":
        encoded = _damage(rng, encoded, 10).replace(b"\x00", b"!")
    else:
        encoded = encoded.replace(b"=", b"") + b"===="
    mail = thread[i].set(b"Content-Type", b"text/plain; charset=utf-8").set(b"Content-Transfer-Encoding", b"base64")
    return _on(thread, i, replace(mail, body=encoded))


def qp_broken(rng: random.Random, thread: Thread, i: int) -> Thread:
    encoded = quopri.encodestring(thread[i].body)
    encoded = rng.choice([encoded[: rng.randrange(len(encoded) + 1)] + b"=", encoded.replace(b"=", b"=Z", 5) + b"=G\n",
                          encoded + b"=\n=\n"])
    mail = thread[i].set(b"Content-Type", b"text/plain; charset=utf-8").set(b"Content-Transfer-Encoding", b"quoted-printable")
    return _on(thread, i, replace(mail, body=encoded))


def line_ends(_rng: random.Random, thread: Thread, _i: int) -> Thread:
    """Handled by as_files (the whole file's line ends change); the thread is unchanged here."""
    return thread


MUTATIONS: dict[str, Mutation] = {
    "header-truncate": header_truncate,
    "header-noise": header_noise,
    "header-huge": header_huge,
    "msgid-bare": lambda _rng, t, i: _on(t, i, t[i].set(b"Message-Id", _msgid(t[i]))),
    "msgid-empty": _set(b"Message-Id", b"", b"<>", b"< >", b"<@>", b"\x00", b"<", b"<<>>"),
    "msgid-spaces": lambda rng, t, i: _on(t, i, t[i].set(b"Message-Id", rng.choice([
        b"<a b c@example.org>", b"< " + _msgid(t[i]) + b" >", b"<" + _msgid(t[i]) + b"> trailing words", b"two <a@b> <c@d>"]))),
    "msgid-huge": msgid_huge,
    "msgid-duplicate": msgid_duplicate,
    "msgid-missing": _set(b"Message-Id", None),
    "refs-self": refs_self,
    "refs-cycle": refs_cycle,
    "refs-garbage": refs_garbage,
    "subject-huge": subject_huge,
    "subject-control": subject_control,
    "subject-encoded-broken": _set(b"Subject", b"=?utf-8?B?!!!not base64?=", b"=?utf-8?Q?unterminated", b"=?utf-8?X?abc?=",
                                   b"[PATCH] =?utf-8?B?w6k?= half", b"=?utf-8?q?=C3?= [PATCH 1/2] x", b"=??Q?x?=", b"=?utf-8??x?="),
    "subject-unknown-charset": _set(b"Subject", b"=?x-klingon?Q?abc?= [PATCH] x", b"=?utf-8\x00?Q?x?= y", b"=?utf-8*xx?Q?x?=",
                                    b"=?\xff?B?YWJj?=", b"[PATCH] =?unicode-1-1-utf-7?Q?+AGE-?="),
    "date-out-of-range": _set(b"Date", b"Mon, 1 Jan 0 00:00:00 +0000", b"Fri, 1 Jan 99999 00:00:00 +0000", b"1 Smarch 2024 00:00 +0000",
                              b"Tue, 13 13 2024 10:00:00 +0000", b"Tue, 20 Aug 2024 09:00:00 +9999", b"Tue, 32 Aug 2024 25:61:61 -9999",
                              b"Tue, 20 Aug 2024 09:00:00", b"yesterday", b"", b"Tue, 20 Aug 9999999999999999999 09:00:00 +0000",
                              b"Tue, 20 Aug -1 09:00:00 +0000",
                              b"Mon, 1 Jan 0001 00:00:00 +0100", b"Fri, 31 Dec 9999 23:59:59 -1200", b"Sat, 1 Jan 10000 00:00:00 +0000"),
    "date-missing": _set(b"Date", None),
    # The last three: printable ASCII on which Python's address parser raises (AttributeError, IndexError, TypeError).
    "from-no-address": _set(b"From", b"Just A Name", b"<>", b"", b"@", b"\"unterminated <a@b>", b"name <no-at-sign>",
                            b".:1+*:.<[n.:<ef", b'\\"[*N"\\p=S:b];&z=>%){< ?, = <', b" .61'O<\",'\"%)"),
    "from-several": _set(b"From", b"One <one@example.org>, Two <two@example.org>", b"a@example.org b@example.org",
                         b"group: a@example.org, b@example.org;", b"<a@b>, , ,"),
    "from-encoded": _set(b"From", b"=?utf-8?B?!!!?= <a@example.org>", b"=?bogus?Q?x?= <a@example.org>", b"Na\x00me <a@example.org>",
                         b"=?utf-8?Q?=FF=FE?= <a@example.org>", b"=?utf-8?q?a@example.org?="),
    "from-missing": _set(b"From", None),
    "content-type-bad": content_type_bad,
    "charset-bad": charset_bad,
    "multipart-broken": multipart_broken,
    "base64-broken": base64_broken,
    "qp-broken": qp_broken,
    "cte-unknown": _set(b"Content-Transfer-Encoding", b"x-unknown", b"base64", b"quoted-printable", b"\x00", b"7bit; junk", b"uuencode"),
    "line-ends": line_ends,
    "flip-headers": flip_headers,
    "flip-body": flip_body,
    "from-line-in-body": from_line_in_body,
    "undeclared-8bit": undeclared_8bit,
    **shapes.SHAPES,
}

# What each kind exercises, for picking a sample that covers them all.
FAMILIES = {
    "truncation": ["header-truncate"], "header-shape": ["header-noise", "header-huge"],
    "message-id": ["msgid-bare", "msgid-empty", "msgid-spaces", "msgid-huge", "msgid-duplicate", "msgid-missing"],
    "references": ["refs-self", "refs-cycle", "refs-garbage"],
    "subject": ["subject-huge", "subject-control", "subject-encoded-broken", "subject-unknown-charset"],
    "date": ["date-out-of-range", "date-missing"], "from": ["from-no-address", "from-several", "from-encoded", "from-missing"],
    "content-type": ["content-type-bad", "charset-bad"], "mime": ["multipart-broken"],
    "transfer-encoding": ["base64-broken", "qp-broken", "cte-unknown"], "line-ends": ["line-ends"],
    "byte-flips": ["flip-headers", "flip-body"], "mbox": ["from-line-in-body"], "8bit": ["undeclared-8bit"],
    **shapes.FAMILIES,
}
assert sorted(k for ks in FAMILIES.values() for k in ks) == sorted(MUTATIONS)


@dataclass(frozen=True)
class Case:
    """One damaged input: the files to write (relative path -> bytes) and the target to review."""

    name: str
    kind: str
    seed: str
    files: dict[str, bytes]
    target: str  # a path relative to the directory the files are written to, or "-" (STDIN holds the mail)
    stdin: bytes | None = None
    tree: bool = False  # reviewed with --tree (the bundled kernel-mini tree, the series fixtures' base)

    def write(self, root: Path) -> Path:
        for rel, data in self.files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        return root / self.target


def _line_ends(rng: random.Random, data: bytes) -> bytes:
    crlf = data.replace(b"\n", b"\r\n")
    return rng.choice([crlf, data.replace(b"\n", b"\r"), data.replace(b"\n", b"\r\n", data.count(b"\n") // 2),
                       crlf.replace(b"\r\n\r\n", b"\n\n", 1)])


def as_files(rng: random.Random, kind: str, name: str, thread: Thread, i: int) -> tuple[dict[str, bytes], str, bytes | None]:
    """The thread as one of the inputs a user gives: an mbox (most), a single .eml, stdin, a format-patch directory."""
    fix = (lambda b: _line_ends(rng, b)) if kind == "line-ends" else (lambda b: b)
    container = rng.choice(["mbox"] * 5 + ["eml", "stdin", "patchdir"])
    if container == "patchdir":
        return {f"{name}/{n:04d}-mail.patch": fix(m.from_line + b"\n" + m.raw()) for n, m in enumerate(thread)}, name, None
    if container in ("eml", "stdin"):
        mail = fix(thread[i].raw())  # the damaged message alone, without a `From ` line: what a mail client saves
        return ({f"{name}.eml": mail}, f"{name}.eml", None) if container == "eml" else ({}, "-", mail)
    return {f"{name}.mbox": fix(join_mbox(thread))}, f"{name}.mbox", None


def cases(per_kind: int = CASES_PER_KIND, tree_per_kind: int = TREE_PER_KIND) -> list[Case]:
    """PER_KIND cases of every mutation (fewer of the slow ones), each on a seed drawn for it, then TREE_PER_KIND
    of each of TREE_KINDS to review with --tree; the same list on every run."""
    pool = [(p.relative_to(FIXTURES).as_posix(), split_mbox(p.read_bytes())) for p in seeds()]
    series = [(seed, thread) for seed, thread in pool if seed.count("/") == 1 and seed.startswith("series/")]
    out = []
    for kind, mutate in MUTATIONS.items():
        for n in range(min(per_kind, FEWER.get(kind, per_kind))):
            out.append(_case(f"{kind}-{n:02d}", kind, mutate, pool, random.Random(f"{kind}/{n}")))
    for kind in TREE_KINDS:
        for n in range(tree_per_kind):
            out.append(replace(_case(f"tree-{kind}-{n:02d}", kind, MUTATIONS[kind], series, random.Random(f"tree/{kind}/{n}")), tree=True))
    return out


def _case(name: str, kind: str, mutate: Mutation, pool: list[tuple[str, Thread]], rng: random.Random) -> Case:
    seed, thread = pool[rng.randrange(len(pool))]
    i = rng.randrange(len(thread))
    files, target, stdin = as_files(rng, kind, name, mutate(rng, thread, i), i)
    return Case(name, kind, seed, files, target, stdin)
