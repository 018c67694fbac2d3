"""A patch mail that carries non-UTF-8 bytes declares its charset.

Why: without a charset the receiving side guesses, and `git am` may store mojibake in
the tree; kernel mail is expected to be UTF-8 (Documentation/process/email-clients.rst).
PASS: `Content-Type: text/plain; charset=UTF-8`, or ISO-8859-1 declared with Latin-1 bytes.
FAIL: raw 0xE9 bytes in a mail with no charset parameter.
"""
from __future__ import annotations

from collections.abc import Iterator

from reviewer.model import Finding, Level, Series

ID = "patch-encoding"
LEVEL = Level.WARNING


def check(series: Series) -> Iterator[Finding]:
    for patch in series.patches:
        if patch.encoding_note:
            yield Finding(
                rule="",
                level=LEVEL,
                message=patch.encoding_note,
                patch=patch.index,
                hint="send the patch as UTF-8 with git send-email",
            )
