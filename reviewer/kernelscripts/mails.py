"""Each patch written back as a mail (series.mbox's, the one `git am` gets, without its Date:), with
a map from the mail's line numbers to the file and line they show (checkpatch.pl and
get_maintainer.pl read mails). No Date: header: neither script reads it, and without it a
re-posted patch's mail, its line numbers and its cache key stay the same.

checkpatch's `--emacs` positions are mail line numbers; its `--showfile` positions are wrong for
commit-message findings (they carry the last file's position), so we map them ourselves.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from reviewer.model import Patch
from reviewer.series import mbox

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_HEADERS = ("diff --git ", "index ", "--- ", "+++ ", "old mode", "new mode", "deleted file", "new file", "similarity", "dissimilarity",
            "rename ", "copy ", "Binary files", "GIT binary patch", "literal ", "delta ", "\\ No newline")


@dataclass(frozen=True)
class Where:
    path: str | None = None  # None: the headers or the commit message
    line: int | None = None  # the line in the file after the patch (context and added lines)
    added: str | None = None  # the text of an added line, to quote


@dataclass(frozen=True)
class Mail:
    patch: Patch
    text: str
    lines: dict[int, Where] = field(default_factory=dict)  # 1-based mail line -> where; absent: nowhere

    def where(self, number: int) -> Where:
        return self.lines.get(number, Where())


def render(patch: Patch) -> Mail:
    head = mbox.patch_head(patch, dated=False)
    diff = mbox.lines(patch.diff)
    return Mail(patch, "\n".join(head + diff) + "\n", _map(diff, len(head)))


def _map(diff: list[str], offset: int) -> dict[int, Where]:
    """Mail line -> where, for the diff lines that follow OFFSET header and message lines.

    Lines outside a file's headers and hunks (base-commit: and other text after the diff) map
    nowhere, like the end of the mail where checkpatch reports whole-patch problems.
    """
    out: dict[int, Where] = {}
    path: str | None = None
    old_left = new_left = new = 0
    for number, text in enumerate(diff, offset + 1):
        if old_left > 0 or new_left > 0:
            kind = text[:1]  # "" is a blank context line, as some mailers send it
            out[number] = Where(path, new, text[1:] if kind == "+" else None) if kind != "-" else Where(path)
            new, new_left = (new + 1, new_left - 1) if kind != "-" else (new, new_left)
            old_left -= kind != "+"
            continue
        if text.startswith("diff --git "):
            path = text.rsplit(" b/", 1)[-1]
        elif (m := _HUNK.match(text)) is not None:
            old_left, new, new_left = _len(m[2]), int(m[3]), _len(m[4])
        elif path is None or not text.startswith(_HEADERS):
            path = None
            continue
        if text.startswith("+++ ") and not text.startswith("+++ /dev/null"):
            path = text[4:].removeprefix("b/")
        out[number] = Where(path)
    return out


def _len(count: str | None) -> int:
    return 1 if count is None else int(count)
