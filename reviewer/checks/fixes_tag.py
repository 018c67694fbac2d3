"""A Fixes: tag names the commit by 12 or more hex digits and its subject, and the commit exists.

Why: stable maintainers and scripts pick fixes by this tag (Documentation/process/submitting-patches.rst,
"Describe your changes"); an abbreviated id may become ambiguous and a wrong subject points at the
wrong commit. With a base tree that has history the id must name a commit there with that subject.
PASS: `Fixes: 6bbeb48ebf41 ("Linux 6.11-rc3")`.
FAIL: `Fixes: 6bbeb48 ("Linux 6.11-rc3")` (format), `Fixes: 6bbeb48ebf41 ("Linux 6.10")` (subject),
a well-formed id the tree does not have (unknown, a warning: the commit may be in another tree).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.model import Finding, Level, Patch, Series
from reviewer.rules.engine import BaseTree

ID = "fixes-tag"
LEVEL = Level.ERROR
LEVELS = {"unknown": Level.WARNING}
FORMAT = re.compile(r'(?P<sha>[0-9a-f]{12,40}) \("(?P<subject>.+)"\)')


def check(series: Series, base: BaseTree | None) -> Iterator[Finding]:
    for patch in series.patches:
        for trailer in patch.trailers:
            if trailer.source == "patch" and trailer.name.lower() == "fixes":
                yield from _tag(patch, trailer.value.strip(), base)


def _tag(patch: Patch, value: str, base: BaseTree | None) -> Iterator[Finding]:
    m = FORMAT.fullmatch(value)
    if m is None:
        yield Finding("format", LEVEL, f"malformed Fixes: tag `{value}`", patch.index,
                      hint='write `Fixes: <12+ hex digits> ("<subject>")`, e.g. git log -1 --format=\'%h ("%s")\' --abbrev=12')
        return
    lookup = getattr(base, "commit_subject", None)
    if lookup is None:
        return
    subject = lookup(m["sha"])
    if subject is None:
        yield Finding("unknown", LEVEL, f"Fixes: {m['sha']} is not a commit of the base tree", patch.index,
                      hint="check the id; the fixed commit may live in another tree")
    elif subject != m["subject"]:
        yield Finding("subject", LEVEL, f'Fixes: {m["sha"]} is "{subject}", not "{m["subject"]}"', patch.index,
                      hint="copy the subject from git log")
