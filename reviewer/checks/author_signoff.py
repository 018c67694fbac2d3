"""Every patch carries a Signed-off-by from its author.

Why: the Developer's Certificate of Origin (Documentation/process/submitting-patches.rst)
needs the author's sign-off; maintainers cannot apply a patch without it.
PASS: `From: A <a@example.org>` and `Signed-off-by: A <a@example.org>`.
FAIL: the same patch with no Signed-off-by, or one from someone else only.
"""
from __future__ import annotations

from collections.abc import Iterator

from reviewer.model import Finding, Level, Series

ID = "author-signoff"
LEVEL = Level.ERROR


def check(series: Series) -> Iterator[Finding]:
    for patch in series.patches:
        if patch.author.email.lower() not in patch.signoff_emails:
            yield Finding(
                rule="",
                level=LEVEL,
                message=f"no Signed-off-by from the author {patch.author}",
                patch=patch.index,
                hint="add `Signed-off-by: NAME <EMAIL>` matching the From: line (git commit -s)",
            )
