"""A patch does not carry a Gerrit `Change-Id:` line in its commit message.

Why: Change-Id is a Gerrit artefact and means nothing upstream; checkpatch reports it as an
error ("Remove Gerrit Change-Id's before submitting upstream"). b4's `change-id:` in a cover
letter is a different thing and is fine.
PASS: a commit message that ends in Signed-off-by.
FAIL: `Change-Id: I0123456789abcdef0123456789abcdef01234567` in the commit message.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.model import Finding, Level, Series

ID = "change-id"
LEVEL = Level.ERROR
GERRIT = re.compile(r"^Change-Id:\s*I[0-9a-f]{8,}", re.MULTILINE)


def check(series: Series) -> Iterator[Finding]:
    for patch in series.patches:
        if GERRIT.search(patch.message):
            yield Finding("", LEVEL, "the commit message carries a Gerrit Change-Id", patch.index,
                          hint="remove the Change-Id: line (and the commit-msg hook that adds it)")
