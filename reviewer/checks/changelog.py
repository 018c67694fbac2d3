"""A v2 or later series says what changed since the previous version.

Why: reviewers should not have to diff revisions to find out whether their comments were
addressed (Documentation/process/submitting-patches.rst, "Respond to review comments").
The changelog goes in the cover letter or below the `---` of a patch.
PASS: `[PATCH v4 0/4]` whose cover letter has `Changes since v3:`; a single `[PATCH v2]`
with `v2: use the helper` below its `---`.
FAIL: `[PATCH v2 0/3]` whose cover letter and patches have no changelog.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.model import Finding, Level, Series

ID = "changelog"
LEVEL = Level.WARNING
CHANGES = re.compile(r"(?im)^\s*[-*]?\s*(changes\b|change ?log\b|v\d+\s*(->|\.\.|:|-)|since v\d+|in v\d+\s*:)")


def check(series: Series) -> Iterator[Finding]:
    if series.version < 2:
        return
    texts = [series.cover.body] if series.cover else []
    texts += [text for p in series.patches for text in (p.message, p.notes)]
    if any(CHANGES.search(text) for text in texts):
        return
    yield Finding("", LEVEL, f"v{series.version} has no changelog (`Changes since v{series.version - 1}:`)", None,
                  hint="list what changed in each revision in the cover letter (b4 prep keeps it for you)")
