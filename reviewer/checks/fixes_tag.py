"""A Fixes: tag names the commit by 12 or more hex digits and its whole subject, and the commit exists.

Why: stable maintainers and their scripts pick fixes by this tag (Documentation/process/submitting-patches.rst,
"Describe your changes"): `Fixes: <12+ lower-case hex digits> ("<subject>")`, on one line. An
abbreviated id may become ambiguous, a wrong subject points at the wrong commit. Every line of the
commit message's trailer block that starts with `Fixes:` is checked, whatever follows it (b4
drops the ones it cannot parse as trailers: those are exactly the malformed ones).
- `format` (error): `Fixes: commit <id>`, upper-case hex, fewer than 12 or more than 40 digits, a URL,
  `Fixes: ?`, no `("subject")` or an unquoted one, text after it, `fixes:` in another case, a tag
  wrapped over lines;
- `abbreviated` (warning): the subject is cut short with `...` or `…`; quote it whole;
- with a base tree that has history: `unknown` (warning: the commit may live in another tree)
  when the tree has no such commit, `subject` (error) when its subject is another one (an
  abbreviated subject must be the start of the real one).
checkpatch.pl (BAD_FIXES_TAG, a warning) sees the same lines with these differences, on purpose
(tests/realkernel/test_checkpatch_oracle.py): it does not recognise a URL or `?` as a Fixes tag at
all, it wants exactly 12 digits (submitting-patches asks for "at least" 12), it says nothing of a
commit the tree does not have, and it warns where a malformed tag is our error.
PASS: `Fixes: 6bbeb48ebf41 ("Linux 6.11-rc3")`.
FAIL: `Fixes: 6bbeb48 ("Linux 6.11-rc3")`, `Fixes: commit 6bbeb48ebf41`, `Fixes: https://bugs.example.org/1` (format);
`Fixes: 6bbeb48ebf41 ("Linux 6.11...")` (abbreviated); `Fixes: 6bbeb48ebf41 ("Linux 6.10")` (subject, with a tree);
a well-formed id the tree does not have (unknown).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from reviewer.model import Finding, Level, Patch, Series
from reviewer.tree.base import BaseTree

ID = "fixes-tag"
LEVEL = Level.ERROR
LEVELS = {"unknown": Level.WARNING, "abbreviated": Level.WARNING}
FORMAT = re.compile(r'(?P<sha>[0-9a-f]{12,40}) \("(?P<subject>.+)"\)')
ELLIPSES = ("...", "…")
HINT = 'write `Fixes: <12+ hex digits> ("<subject>")`, e.g. git log -1 --format=\'%h ("%s")\' --abbrev=12 <commit>'
_ID = re.compile(r"[0-9a-fA-F]+\b")


def check(series: Series, base: BaseTree | None) -> Iterator[Finding]:
    for patch in series.patches:
        for trailer in patch.trailers:
            if trailer.source == "patch" and trailer.name.lower() == "fixes":
                yield from _tag(patch, trailer.name, trailer.value.strip(), base)


def malformed(name: str, value: str) -> str | None:
    """What is wrong with the tag `NAME: VALUE`, None when it has the documented form."""
    if name != "Fixes":
        return f"`{name}:` is spelt `Fixes:`"
    if "\n" in value:
        return "wrapped over lines (keep the tag on one line, however long)"
    if (m := FORMAT.fullmatch(value)) is not None:
        return None if m["subject"].strip(" .…") else 'an empty ("subject")'
    if re.match(r"[a-z][a-z0-9+.-]*://", value, re.IGNORECASE):
        return "a URL, not a commit id (a bug report belongs in `Closes:` or `Link:`)"
    if re.match(r"commit\b", value, re.IGNORECASE):
        return "`commit` before the id"
    sha = _ID.match(value)
    if sha is None:
        return "no commit id"
    return _id_problem(sha[0]) or _subject_problem(value[sha.end():])


def _id_problem(sha: str) -> str | None:
    if sha != sha.lower():
        return "an id in upper-case hex"
    if not 12 <= len(sha) <= 40:
        return f"an id of {len(sha)} hex digits (12 to 40)"
    return None


def _subject_problem(rest: str) -> str:
    if not rest.strip():
        return 'no ("subject") after the id'
    if re.fullmatch(r' \(".*"\).+', rest):
        return 'text after the ("subject")'
    return 'the subject is not written ("<subject>"), one space after the id'


def _tag(patch: Patch, name: str, value: str, base: BaseTree | None) -> Iterator[Finding]:
    why = malformed(name, value)
    m = FORMAT.fullmatch(value)
    if why is not None or m is None:
        yield Finding("format", LEVEL, f"malformed Fixes: tag `{value}`: {why}", patch.index, hint=HINT)
        return
    sha, subject = m["sha"], m["subject"]
    lookup = getattr(base, "commit_subject", None)
    real = lookup(sha) if lookup is not None else None
    short = next((subject[: -len(e)].rstrip() for e in ELLIPSES if subject.endswith(e)), None)
    if short is not None and real != subject:
        yield Finding("abbreviated", LEVEL, f'Fixes: {sha} abbreviates the subject ("{subject}")', patch.index,
                      hint="quote the whole subject, however long: git log -1 --format=%s " + sha)
    if lookup is None:
        return
    if real is None:
        yield Finding("unknown", LEVEL, f"Fixes: {sha} is not a commit of the base tree", patch.index,
                      hint="check the id; the fixed commit may live in another tree")
    elif real != subject and (short is None or not real.startswith(short)):
        yield Finding("subject", LEVEL, f'Fixes: {sha} is "{real}", not "{subject}"', patch.index, hint="copy the subject from git log")
