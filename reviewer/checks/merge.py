"""One finding per fact: when our checks and the tree's checkpatch.pl (or two checkpatch reports)
say the same thing about the same patch, file and line, the report says it once, naming every
source that agrees (`Finding.sources`).

EQUIVALENT is the table of what counts as the same fact, one entry per pair, each with where the
two must meet: `line` (the same file and line; a report with no line meets any line of its file)
or `patch` (commit-message facts, which have no file). Two reports of the same checkpatch type at
the same file and line are one fact as well (checkpatch words one SPDX problem twice). Of a group
the finding kept is the most severe, ours before checkpatch's at the same level (ours carry a
hint); its message and quote stand for the group. tests/realkernel/test_merge_real.py checks each
pair against what the 6.12 tree's checkpatch.pl really reports.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from reviewer.model import Finding, Level


@dataclass(frozen=True)
class Same:
    ours: str  # a rule id, `spdx-header/style` (an id without a sub-id covers all of them)
    theirs: str  # `checkpatch/SPDX_LICENSE_TAG`
    where: str  # line | patch
    why: str


EQUIVALENT: tuple[Same, ...] = (
    Same("spdx-header/style", "checkpatch/SPDX_LICENSE_TAG", "line", "both: the SPDX line of a new file uses the wrong comment style"),
    Same("spdx-header/missing", "checkpatch/SPDX_LICENSE_TAG", "line", "both: a new file's first line is not an SPDX tag"),
    Same("author-signoff", "checkpatch/NO_AUTHOR_SIGN_OFF", "patch", "both: no Signed-off-by from the author"),
    Same("author-signoff", "checkpatch/MISSING_SIGN_OFF", "patch", "both: the patch has no Signed-off-by at all"),
    Same("author-signoff", "checkpatch/FROM_SIGN_OFF_MISMATCH", "patch", "both: the author's sign-off differs from From:"),
    Same("fixes-tag/format", "checkpatch/BAD_FIXES_TAG", "patch", "both: a Fixes: tag not in the documented form"),
    Same("fixes-tag/format", "checkpatch/GIT_COMMIT_ID", "patch", "checkpatch words a malformed Fixes: id as a commit-id problem"),
    Same("checkpatch/BAD_FIXES_TAG", "checkpatch/GIT_COMMIT_ID", "patch", "checkpatch reports one bad Fixes: line under both types"),
    Same("fixes-tag/unknown", "checkpatch/UNKNOWN_COMMIT_ID", "patch", "both: a well-formed Fixes: id the tree does not have"),
    Same("change-id", "checkpatch/GERRIT_CHANGE_ID", "patch", "both: a Gerrit Change-Id in the commit message"),
    Same("maintainers-coverage", "checkpatch/FILE_PATH_CHANGES", "patch",
         "both: a new file that MAINTAINERS does not cover (checkpatch asks whether it needs updating)"),
)


def merge(findings: Sequence[Finding]) -> list[Finding]:
    """FINDINGS with each group of reports of one fact made one finding, in the order of their first."""
    parent = list(range(len(findings)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(findings):
        for j in range(i):
            if _same_fact(a, findings[j]):
                parent[root(i)] = root(j)
    groups: dict[int, list[Finding]] = {}
    for i, f in enumerate(findings):
        groups.setdefault(root(i), []).append(f)
    return [_one(group) for group in groups.values()]


def _same_fact(a: Finding, b: Finding) -> bool:
    if a.patch != b.patch:
        return False
    if a.rule == b.rule and a.rule.startswith("checkpatch/"):
        return a.path == b.path and a.line == b.line
    pair = _pair(a.rule, b.rule)
    if pair is None:
        return False
    if pair.where == "patch":
        return True
    return a.path == b.path and (a.line is None or b.line is None or a.line == b.line)


def _pair(a: str, b: str) -> Same | None:
    for same in EQUIVALENT:
        if (_covers(same.ours, a) and _covers(same.theirs, b)) or (_covers(same.ours, b) and _covers(same.theirs, a)):
            return same
    return None


def _covers(entry: str, rule: str) -> bool:
    return rule == entry or ("/" not in entry and rule.startswith(entry + "/"))


_RANK = {Level.ERROR: 0, Level.WARNING: 1, Level.INFO: 2}


def _one(group: list[Finding]) -> Finding:
    if len(group) == 1:
        return group[0]
    kept = min(group, key=lambda f: (_RANK[f.level], f.rule.startswith("checkpatch/")))
    sources = tuple(dict.fromkeys([kept.rule, *(f.rule for f in group)]))
    quote = kept.quote or next((f.quote for f in group if f.quote), ())
    hint = kept.hint or next((f.hint for f in group if f.hint), None)
    return replace(kept, sources=sources, quote=quote, hint=hint,
                   line=kept.line if kept.line is not None else next((f.line for f in group if f.line is not None), None))

