"""A v2 or later series says what changed since the previous version.

Why: reviewers should not have to diff revisions to find out whether their comments were
addressed (Documentation/process/submitting-patches.rst, "Respond to review comments").
The changelog goes in the cover letter or below the `---` of a patch.
PASS: `[PATCH v4 0/4]` whose cover letter has `Changes since v3:`.
FAIL: `[PATCH v2 0/3]` whose cover letter has no changelog.
Known gap: the parsed patch keeps no notes from below its `---`, so a v2+ series without a
cover letter is not checked.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.model import Finding, Level, Series

ID = "changelog"
LEVEL = Level.WARNING
CHANGES = re.compile(r"(?im)^\s*[-*]?\s*(changes\b|change ?log\b|v\d+\s*(->|\.\.|:|-)|since v\d+|in v\d+\s*:)")


def check(series: Series) -> Iterator[Finding]:
    if series.version < 2 or series.cover is None:
        return
    if any(CHANGES.search(text) for text in (series.cover.body, *(p.message for p in series.patches))):
        return
    yield Finding("", LEVEL, f"v{series.version} has no changelog (`Changes since v{series.version - 1}:`)", None,
                  hint="list what changed in each revision in the cover letter (b4 prep keeps it for you)")
