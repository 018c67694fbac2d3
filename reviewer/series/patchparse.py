"""Patch text -> FileChange list and diffstat, as git reads it. The ONLY module that imports unidiff.

git am takes more than `diff --git`: quilt (`Index:`, `--- linux.orig/x`), CVS and plain `diff -u`
diffs, whose paths `git apply -p1` names; we name them the same way. A damaged diff (mangled by a
mail client, or edited by hand) is read as far as it goes and its damage is recorded, not raised:
one bad patch must not stop the review of the others.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk as UHunk
from unidiff.patch import PatchedFile, PatchSet

from reviewer.errors import InputError
from reviewer.model import Change, FileChange, Hunk, Line

# Where git apply finds the first file (and git mailinfo ends the commit message): a git header,
# or a traditional `--- old` / `+++ new` pair (quilt, CVS, diff -u), as b4's DIFF_RE also sees one.
_GIT_HEADER = re.compile(r"^diff --git ", re.MULTILINE)
_PAIR = re.compile(r"^--- [^\n]*\n\+\+\+ ", re.MULTILINE)
# The lines quilt, CVS and diff -r write just above the pair; they belong to the diff, not the message.
_PRELUDE = re.compile(r"Index: |={20,}$|RCS file: |retrieving revision |diff -")
_CUT = re.compile(r"^---[ \t]*$", re.MULTILINE)
# The end of a diff in a mail: the signature delimiter git format-patch writes.
_SIGNATURE = re.compile(r"^-- \n(?:[\d.]+|\S.*)\n*\Z", re.MULTILINE)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_QUOTE = 4  # hunk lines a damage quotes, besides the hunk header: enough to see it
# What each hunk line takes from the (old, new) counts. An empty line is an empty context line to
# git apply (GNU diff writes them so; mail clients strip the space of a blank context line).
_NEED = {" ": (1, 1), "": (1, 1), "-": (1, 0), "+": (0, 1)}


@dataclass(frozen=True)
class Damage:
    """One damaged hunk: the file (as git names it, "" before any file header), what is wrong, its lines."""

    path: str
    header: str  # the hunk's @@ line as sent
    kind: str  # short | excess | long | no-space | wrapped | garbage | gap | orphan | unreadable | nul-path
    why: str  # one clause, lowercase, saying what git am does with it
    line: int | None  # the line of the new file where the damage is
    quote: tuple[str, ...]  # the hunk header and a few of its lines, as sent


@dataclass(frozen=True)
class ParsedDiff:
    files: tuple[FileChange, ...]
    damage: tuple[Damage, ...] = ()


def split_message(body: str) -> tuple[str, str]:
    """Split a patch mail body into (commit message, diff text as git reads it)."""
    body = body.replace("\r\n", "\n")
    start = _diff_start(body)
    if start is None:
        return body, ""
    head, diff = body[:start], body[start:]
    message = _CUT.split(head, maxsplit=1)[0]
    sig = _SIGNATURE.search(diff)
    diff = diff[: sig.start()] if sig is not None else _with_closing_line(diff)
    message = message.strip("\n")
    return (message + "\n" if message else ""), diff


def _diff_start(body: str) -> int | None:
    found = [m.start() for m in (_GIT_HEADER.search(body), _PAIR.search(body)) if m is not None]
    if not found:
        return None
    start = min(found)
    while start > 0:
        above = body.rfind("\n", 0, start - 1) + 1
        if not _PRELUDE.match(body[above : start - 1]):
            break
        start = above
    return start


def _with_closing_line(diff: str) -> str:
    """The diff plus the empty line git reads where the mail's text ends, when its last hunk lacks one.

    Python's mail parsers drop the line break that closes a mail's text (the mbox separator, the CRLF
    before a MIME boundary); git mailsplit and mailinfo keep it, and git apply reads an empty line in a
    hunk as an empty context line. So a patch whose last context line was blank, and lost its space
    (Gmail strips trailing blanks), applies with git am: we read it the same way.
    """
    tail = _lines(diff[diff.rfind("\n@@ -") + 1 :])
    if not tail or not _HUNK.match(tail[0]):
        return diff
    read = _read_hunk(tail, 0)
    lacks_one = read.stop == "end" and (read.old_left, read.new_left) == (1, 1)
    return diff + "\n" if lacks_one and diff.endswith("\n") else diff


_DIFFSTAT = re.compile(r"^ (\S.*\|\s+(\d+ ?[+-]*|Bin .*)|\d+ files? changed.*|(create|delete) mode \d+ .*"
                       r"|rename .*\(\d+%\)|copy .*\(\d+%\)|mode change .*)$")


def notes(body: str) -> str:
    """What the author wrote between the `---` and the diff (changelog, remarks), without the diffstat."""
    body = body.replace("\r\n", "\n")
    start = _diff_start(body)
    head = body[:start] if start is not None else body
    parts = _CUT.split(head, maxsplit=1)
    if len(parts) < 2:
        return ""
    kept = [ln for ln in parts[1].splitlines() if not _DIFFSTAT.match(ln)]
    return "\n".join(kept).strip("\n") + "\n" if any(ln.strip() for ln in kept) else ""


def parse_diff(diff: str, where: str = "patch") -> tuple[FileChange, ...]:
    """Parse DIFF into file changes; a damaged diff raises InputError naming WHERE (read_diff records it instead)."""
    parsed = read_diff(diff)
    if parsed.damage:
        first = parsed.damage[0]
        raise InputError(f"{where}: corrupt diff ({first.why})",
                         "the patch was probably mangled by a mail client; ask for it to be resent with git send-email")
    return parsed.files


def read_diff(diff: str) -> ParsedDiff:
    """DIFF's file changes as far as they can be read, and the damage found.

    A damaged patch keeps every file its headers name, each with the lines read before the damage
    (a damaged hunk is cut there; the hunks and files after it are read whole): git applies none of
    it, but the checks that go by path (MAINTAINERS, selftests, rules) should still see every file the
    author meant to change, and the lines before the damage are the author's.
    """
    if not diff.strip():
        return ParsedDiff(())
    diff = diff.replace("\r\n", "\n")
    clean, found = _scan(_lines(diff))
    try:  # without damage nothing was cut: unidiff reads the text as it came
        patchset = PatchSet("".join(f"{ln}\n" for ln in clean) if found else diff)
    except UnidiffParseError as exc:  # our scan let through what unidiff refuses: say so, keep reviewing
        reason = " ".join(str(exc).split())[:120]
        return ParsedDiff((), (Damage("", "", "unreadable", f"the diff cannot be read ({reason})", None, ()),))
    names = _Names()
    files = [(pf, _file_change(pf, names)) for pf in patchset]
    damage = tuple(_resolve(raw, files) for raw in found)
    hit = {d.path for d in damage}
    kept = tuple(fc for pf, fc in files if fc.path in hit or not _empty(pf))
    nul = [fc for fc in kept if "\0" in fc.path + (fc.old_path or "")]
    return ParsedDiff(tuple(fc for fc in kept if fc not in nul), damage + tuple(map(_nul_path, nul)))


def _nul_path(fc: FileChange) -> Damage:
    """A file name with a NUL byte: no file system or git tree holds one, and git apply reads the name
    only up to it. The file is left out of the patch's files (a path goes to git, to open(), to the
    rules): the damage names it, its NUL written as git quotes one."""
    name = fc.path if "\0" in fc.path else fc.old_path or ""
    shown = '"' + name.replace("\\", "\\\\").replace('"', '\\"').replace("\0", "\\000") + '"'
    cut = name.split("\0", 1)[0]
    return Damage("", "", "nul-path", f"the file name {shown} holds a NUL byte, which no file name can: git reads it as {cut!r}",
                  None, ())


def _lines(text: str) -> list[str]:
    # Not splitlines(): a form feed or other separator inside a source line is part of it.
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


# --- reading hunks as git apply does ------------------------------------------------------------


@dataclass(frozen=True)
class _Read:
    """One hunk as read: its header's numbers, the lines that fit them, and why reading stopped."""

    header: str
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str
    body: tuple[str, ...]
    old_left: int
    new_left: int
    end: int  # the index of the first line not read
    stop: str  # "" (complete) | end | short | excess | garbage

    def line(self) -> int:
        """The new-file line where reading stopped."""
        return self.new_start + self.new_len - self.new_left

    def truncated(self) -> list[str]:
        """The hunk cut down to the lines read, with a header that counts them (nothing if none were)."""
        old, new = self.old_len - self.old_left, self.new_len - self.new_left
        if not old and not new:
            return []
        tail = f" {self.section}" if self.section else ""
        return [f"@@ -{self.old_start},{old} +{self.new_start},{new} @@{tail}", *self.body]


def _read_hunk(lines: list[str], i: int) -> _Read:
    """Read the hunk whose header is lines[i], counting lines as git apply does."""
    m = _HUNK.match(lines[i])
    assert m is not None
    old_len = int(m[2]) if m[2] is not None else 1
    new_len = int(m[4]) if m[4] is not None else 1
    old_left, new_left, j, stop = old_len, new_len, i + 1, ""
    while old_left or new_left:
        if j >= len(lines):
            stop = "end"
            break
        kind = lines[j][:1]
        if kind == "\\":
            j += 1
            continue
        need = _NEED.get(kind)
        if need is None:
            stop = "short" if _starts_file(lines, j) or _HUNK.match(lines[j]) else "garbage"
            blank = _blanks_before(lines, i + 1, j)
            if stop == "garbage" and blank and not lines[j].startswith("\t"):
                # Text after blank lines (a trailer, a footer): the hunk had ended, short of its header.
                stop, j, old_left, new_left = "short", j - blank, old_left + blank, new_left + blank
            break
        if old_left < need[0] or new_left < need[1]:
            stop = "excess"
            break
        old_left, new_left, j = old_left - need[0], new_left - need[1], j + 1
    if not stop and j < len(lines) and lines[j].startswith("\\ "):  # "\ No newline" after the last line
        j += 1
    return _Read(lines[i], int(m[1]), old_len, int(m[3]), new_len, m[5], tuple(lines[i + 1 : j]),
                 old_left, new_left, j, stop)


def _blanks_before(lines: list[str], start: int, end: int) -> int:
    """How many of lines[start:end] at its end are empty."""
    n = 0
    while end - n > start and lines[end - n - 1] == "":
        n += 1
    return n


def _starts_file(lines: list[str], i: int) -> bool:
    line = lines[i]
    if line.startswith("diff --git "):
        return True
    return line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _hunk_like(line: str) -> bool:
    """A line git would have read as part of a hunk, had the header counted it."""
    return (line[:1] in ("+", "-") and line not in ("-- ", "--")) or (line[:1] == " " and bool(line.strip()))


@dataclass(frozen=True)
class _Raw:
    """A damage found while scanning; `at` is where it sits in the cleaned lines (to find its file)."""

    at: int
    kind: str
    read: _Read
    quote: tuple[str, ...]
    detail: str = ""


def _scan(lines: list[str]) -> tuple[list[str], list[_Raw]]:
    """The lines unidiff can read (damaged hunks cut down to what was read) and the damage found.

    Between files everything is kept (git skips it). Right after a `+++` line or a whole hunk only
    another hunk may follow: stray lines there make git am fail, or drop lines the author sent.
    """
    out: list[str] = []
    found: list[_Raw] = []
    stray: list[str] = []
    last: _Read | None = None  # the hunk just read whole, while more hunks of its file may follow
    state = "none"  # none: no file yet | header: a git header's lines | hunks: hunks may follow | skip: a damaged hunk's rest
    i = 0
    while i < len(lines):
        if _starts_file(lines, i):
            out += _settle(stray, last, found, len(out))
            step = 1 if lines[i].startswith("diff --git ") else 2
            out += lines[i : i + step]
            stray, last, state, i = [], None, "header" if step == 1 else "hunks", i + step
            continue
        if not _HUNK.match(lines[i]):
            if state != "skip":
                stray.append(lines[i])
            i += 1
            continue
        read = _read_hunk(lines, i)
        if state == "none":
            found.append(_Raw(len(out), "orphan", read, (read.header, *read.body[:_QUOTE])))
        elif state == "header":
            out += stray  # a git header's own lines (index, modes), before a hunk git does not expect there
        elif state == "hunks" and stray:  # dropped: unidiff would end the file on them
            found.append(_long(len(out), last, stray) if last is not None and any(map(_hunk_like, stray))
                         else _gap(len(out), last, read, stray))
        stray = []
        if state != "none":
            if read.stop:
                found.append(_Raw(len(out), read.stop, read, _quote_stop(read, lines)))
            out += read.truncated() if read.stop else [read.header, *read.body]
            state = "skip" if read.stop else "hunks"
        last, i = (read if state == "hunks" else None), read.end
    out += _settle(stray, last, found, len(out))
    return out, found


def _settle(stray: list[str], last: _Read | None, found: list[_Raw], at: int) -> list[str]:
    """The stray lines after a file's last hunk to keep: diff lines there are ones git drops."""
    if last is None or not any(map(_hunk_like, stray)):
        return stray
    found.append(_long(at, last, stray))
    return [s for s in stray if not _hunk_like(s)]


def _long(at: int, last: _Read, stray: list[str]) -> _Raw:
    extra = [s for s in stray if _hunk_like(s)]
    return _Raw(at, "long", last, (last.header, *last.body[-1:], *extra[: _QUOTE - 1]), str(len(extra)))


def _gap(at: int, last: _Read | None, read: _Read, stray: list[str]) -> _Raw:
    before = (last.header, *last.body[-1:]) if last is not None else ()
    return _Raw(at, "gap", read, (*before, *stray[:2], read.header))


def _quote_stop(read: _Read, lines: list[str]) -> tuple[str, ...]:
    if read.stop in ("end", "short"):
        return (read.header, *read.body[-_QUOTE:])
    return (read.header, *read.body[-(_QUOTE - 1) :], lines[read.end])


def _resolve(raw: _Raw, files: list[tuple[PatchedFile, FileChange]]) -> Damage:
    """Name RAW's file (the last one that starts before it) and say what git am makes of it."""
    path = ""
    for pf, fc in files:
        if (pf.diff_line_no or 0) <= raw.at:
            path = fc.path
    r = raw.read
    line = r.new_start + r.new_len if raw.kind == "long" else r.new_start if raw.kind in ("gap", "orphan") else r.line()
    return Damage(path, r.header, _kind(raw), _why(raw), line, raw.quote)


def _kind(raw: _Raw) -> str:
    if raw.kind != "garbage":
        return "short" if raw.kind == "end" else raw.kind
    bad, before = raw.quote[-1], (raw.read.header, *raw.read.body)[-1]
    if bad.startswith("\t"):  # kernel code is indented with tabs: its context line lost the space before them
        return "no-space"
    return "wrapped" if len(before.expandtabs(8)) >= 64 else "garbage"


def _why(raw: _Raw) -> str:
    r, kind = raw.read, _kind(raw)
    at = r.header[: r.header.find("@@", 2) + 2]  # the numbers; the quote shows the function
    rejects = "git am rejects the patch"
    if kind == "short":
        return (f"hunk {at} ends after {r.old_len - r.old_left} of its {r.old_len} old and "
                f"{r.new_len - r.new_left} of its {r.new_len} new lines: {rejects} (corrupt patch)")
    if kind == "excess":
        return f"hunk {at} has more lines than its header counts: {rejects} (corrupt patch)"
    if kind == "long":
        n = int(raw.detail)
        return (f"hunk {at} is followed by {n} more diff line{'s' if n > 1 else ''} than its header counts: "
                f"git am would apply the patch without {'them' if n > 1 else 'it'}")
    if kind == "gap":
        return f"stray lines before hunk {at}: {rejects} (patch fragment without header)"
    if kind == "orphan":
        return f"hunk {at} comes before any file header: {rejects}"
    guess = {"wrapped": "a long line the mail client wrapped", "no-space": "a context line that lost its leading space"}
    nth = len(r.body) + 1
    return (f"line {nth} of hunk {at} starts with neither ' ', '+' nor '-' "
            f"({guess.get(kind, 'garbage inside the hunk')}): {rejects} (corrupt patch)")


# --- unidiff's files -> ours, named as git names them -------------------------------------------


class _Names:
    """git apply's -p1 naming of traditional (non-git) diffs; its guess of -p0 holds for the whole patch."""

    def __init__(self) -> None:
        self.strip = 1
        self.known = False

    def name(self, first: str, second: str) -> str | None:
        """The path git gives a `--- FIRST` / `+++ SECOND` pair (timestamps already cut off)."""
        first, second = unquote(first), unquote(second)
        if not self.known:
            p, q = _guess(first), _guess(second)
            p = q if p < 0 else p
            if p >= 0 and p == q:
                self.strip, self.known = p, True
        if first == "/dev/null":
            return _strip_p(second, self.strip)
        if second == "/dev/null":
            return _strip_p(first, self.strip)
        old = _strip_p(first, self.strip)
        new = _strip_p(second, self.strip)
        # git prefers the shorter name when the other only adds to it ("x.c" against "x.c~").
        if new is None or (old is not None and len(old) < len(new) and new.startswith(old)):
            return old
        return new


def _guess(name: str) -> int:
    """-p0 for a name without a directory, else unknown (git apply at the top of the tree)."""
    return -1 if name == "/dev/null" or "/" in name else 0


def _strip_p(name: str, p: int) -> str | None:
    parts = name.split("/", p) if p else [name]
    rest = parts[p] if len(parts) > p else ""
    return re.sub("/{2,}", "/", rest) or None


_STAMP = re.compile(r"\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [-+]\d{4})?$")
_EPOCH = re.compile(r"(1969-12-31|1970-01-01) ([0-2]\d):([0-5]\d):00(?:\.0+)? ([-+])([0-2]\d):?([0-5]\d)")


def _name_and_stamp(name: str | None, stamp: str | None) -> tuple[str, str]:
    name = name or ""
    m = _STAMP.search(name) if stamp is None else None  # a date after spaces, not a tab
    return (name[: m.start()], m.group().strip()) if m else (name, stamp or "")


def _is_epoch(stamp: str) -> bool:
    """diff -N writes the epoch as the date of a file that does not exist (in the writer's time zone)."""
    m = _EPOCH.match(stamp)
    if m is None:
        return False
    minutes = int(m[2]) * 60 + int(m[3]) - (24 * 60 if m[1] == "1969-12-31" else 0)
    zone = (int(m[5]) * 60 + int(m[6])) * (1 if m[4] == "+" else -1)
    return minutes == zone


def _is_git(pf: PatchedFile) -> bool:
    return pf.patch_info is not None and bool(pf.patch_info) and pf.patch_info[0].startswith("diff --git ")


def _file_change(pf: PatchedFile, names: _Names) -> FileChange:
    if _is_git(pf):
        change = _change_kind(pf, "".join(pf.patch_info or ()))
        old_path = None if change is Change.ADDED else _strip(pf.source_file)
        path = old_path if change is Change.DELETED else _strip(pf.target_file)
    else:
        change, path = _traditional(pf, names)
        old_path = None if change is Change.ADDED else path
    return FileChange(
        path=path or "",
        old_path=old_path,
        change=change,
        old_mode=pf.source_mode,
        new_mode=pf.target_mode,
        binary=pf.is_binary_file,
        added=pf.added,
        removed=pf.removed,
        hunks=tuple(_hunk(h) for h in pf),
    )


def _traditional(pf: PatchedFile, names: _Names) -> tuple[Change, str | None]:
    """A quilt / CVS / diff -u file: its change (as `git apply --summary` says) and its path."""
    first, first_stamp = _name_and_stamp(pf.source_file, pf.source_timestamp)
    second, second_stamp = _name_and_stamp(pf.target_file, pf.target_timestamp)
    path = names.name(first, second)
    # git also takes one `@@ -0,0 ...` hunk for a new file (and `+0,0` for a deleted one) whatever the names say.
    only = pf[0] if len(pf) == 1 else None
    if first == "/dev/null" or _is_epoch(first_stamp) or (only is not None and (only.source_start, only.source_length) == (0, 0)):
        return Change.ADDED, path
    if second == "/dev/null" or _is_epoch(second_stamp) or (only is not None and (only.target_start, only.target_length) == (0, 0)):
        return Change.DELETED, path
    return Change.MODIFIED, path


def _empty(pf: PatchedFile) -> bool:
    """Nothing git would apply: a header with no hunk ("No valid patches in input")."""
    if len(pf) or pf.is_binary_file:
        return False
    return not _is_git(pf) or len(pf.patch_info or ()) < 2


def _change_kind(pf: PatchedFile, info: str) -> Change:
    if "\ncopy from " in info or info.startswith("copy from "):
        return Change.COPIED
    if "\nrename from " in info or pf.is_rename:
        return Change.RENAMED
    if pf.source_file == "/dev/null" or "\nnew file mode " in info:
        return Change.ADDED
    if pf.target_file == "/dev/null" or "\ndeleted file mode " in info:
        return Change.DELETED
    return Change.MODIFIED


def _strip(name: str | None) -> str | None:
    if name is None or name == "/dev/null":
        return None
    name = unquote(name)
    return name[2:] if name[:2] in ("a/", "b/") else name


# git's C-style quoting of a path (quote.c: quote_c_style): with core.quotePath (the default) every
# byte >= 0x80 is \ooo octal, and ", \ and control characters are always escaped.
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_QUOTED = re.compile(r'\\(?:([0-3][0-7]{2})|(.))', re.DOTALL)


def unquote(name: str) -> str:
    """NAME as git wrote it in a diff header, unquoted: `"\\303\\274ber.c"` -> `über.c`. A name
    that is not quoted is returned as it is, and so is one whose bytes are not UTF-8 (git's spelling
    of it then stays the one the reader can act on)."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    out = bytearray()
    pos, inner = 0, name[1:-1]
    for m in _QUOTED.finditer(inner):
        out += inner[pos : m.start()].encode()
        if m[1] is not None:
            out.append(int(m[1], 8))
        elif m[2] in _ESCAPES:
            out.append(_ESCAPES[m[2]])
        else:  # not an escape git writes: keep it as it stands
            out += m[0].encode()
        pos = m.end()
    out += inner[pos:].encode()
    try:
        return out.decode()
    except UnicodeDecodeError:
        return inner


def _hunk(h: UHunk) -> Hunk:
    lines = tuple(
        Line(ln.line_type, ln.value.rstrip("\n"), ln.source_line_no, ln.target_line_no)
        for ln in h
        if ln.line_type in ("+", "-", " ")
    )
    return Hunk(
        old_start=h.source_start,
        old_len=h.source_length,
        new_start=h.target_start,
        new_len=h.target_length,
        section=h.section_header,
        lines=lines,
    )


def diffstat(files: tuple[FileChange, ...]) -> tuple[int, int, int]:
    """(files changed, insertions, deletions), as `git apply --numstat` counts them."""
    return len(files), sum(f.added for f in files), sum(f.removed for f in files)
