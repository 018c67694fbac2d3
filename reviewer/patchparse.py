"""Patch text -> FileChange list and diffstat. The ONLY module that imports unidiff."""
from __future__ import annotations

import re

from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk as UHunk
from unidiff.patch import PatchedFile, PatchSet

from reviewer.errors import InputError
from reviewer.model import Change, FileChange, Hunk, Line

_DIFF_START = re.compile(r"^(diff --git |--- (a/|/dev/null))", re.MULTILINE)
_CUT = re.compile(r"^---[ \t]*$", re.MULTILINE)
# The end of a diff in a mail: the signature delimiter git format-patch writes.
_SIGNATURE = re.compile(r"^-- \n(?:[\d.]+|\S.*)\n*\Z", re.MULTILINE)


def split_message(body: str) -> tuple[str, str]:
    """Split a patch mail body into (commit message, diff text)."""
    body = body.replace("\r\n", "\n")
    start = _DIFF_START.search(body)
    if start is None:
        return body, ""
    head, diff = body[: start.start()], body[start.start() :]
    message = _CUT.split(head, maxsplit=1)[0]
    sig = _SIGNATURE.search(diff)
    if sig is not None:
        diff = diff[: sig.start()]
    message = message.strip("\n")
    return (message + "\n" if message else ""), diff


_DIFFSTAT = re.compile(r"^ (\S.*\|\s+(\d+ ?[+-]*|Bin .*)|\d+ files? changed.*|(create|delete) mode \d+ .*|rename .*\(\d+%\)|copy .*\(\d+%\)|mode change .*)$")


def notes(body: str) -> str:
    """What the author wrote between the `---` and the diff (changelog, remarks), without the diffstat."""
    body = body.replace("\r\n", "\n")
    start = _DIFF_START.search(body)
    head = body[: start.start()] if start else body
    parts = _CUT.split(head, maxsplit=1)
    if len(parts) < 2:
        return ""
    kept = [ln for ln in parts[1].splitlines() if not _DIFFSTAT.match(ln)]
    return "\n".join(kept).strip("\n") + "\n" if any(ln.strip() for ln in kept) else ""


def parse_diff(diff: str, where: str = "patch") -> tuple[FileChange, ...]:
    """Parse DIFF into file changes; a malformed diff raises InputError naming WHERE."""
    if not diff.strip():
        return ()
    try:
        patchset = PatchSet(diff)
    except UnidiffParseError as exc:
        reason = " ".join(str(exc).split())[:120]
        raise InputError(
            f"{where}: corrupt diff ({reason})",
            "the patch was probably mangled by a mail client; ask for it to be resent with git send-email",
        ) from exc
    return tuple(_file_change(pf) for pf in patchset)


def _file_change(pf: PatchedFile) -> FileChange:
    info = "".join(pf.patch_info or ())
    change = _change_kind(pf, info)
    old_path = None if change is Change.ADDED else _strip(pf.source_file)
    path = old_path if change is Change.DELETED else _strip(pf.target_file)
    hunks = tuple(_hunk(h) for h in pf)
    return FileChange(
        path=path or "",
        old_path=old_path,
        change=change,
        old_mode=pf.source_mode,
        new_mode=pf.target_mode,
        binary=pf.is_binary_file,
        added=pf.added,
        removed=pf.removed,
        hunks=hunks,
    )


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
    if name.startswith('"') and name.endswith('"'):
        name = name[1:-1]
    return name[2:] if name[:2] in ("a/", "b/") else name


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
