"""Our commit-message checks against the 6.12 tree's own scripts/checkpatch.pl, run at test time.

author-signoff decides as checkpatch decides (NO_AUTHOR_SIGN_OFF, MISSING_SIGN_OFF,
FROM_SIGN_OFF_MISMATCH): for each mail, both say nothing, or both say the same level and the
same difference. fixes-tag sees the lines checkpatch's BAD_FIXES_TAG / GIT_COMMIT_ID see, with
the differences its docstring names, asserted case by case. And without --mailback, `review
--tree` reports checkpatch's end-of-patch checks on a patch that is otherwise clean.

Every mail is made by git (commit-tree + format-patch) from real changes to the tree's README (not
to a file under drivers/net/, where checkpatch adds its --strict checks and seeds its CamelCase list
from include/ for seconds).
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from reviewer.checks import CHECKS
from reviewer.errors import ExitStatus
from reviewer.model import Level, Series
from reviewer.series import fetch
from reviewer.tree.base import GitBaseTree
from tests.helpers import review as review_cli
from tests.realkernel.kernel import commit, format_patch, git, show

README = "README"
JANE = "Jane Doe <jane@example.org>"
EDITS = (("guides for kernel developers and users.", "guides for kernel users and developers."),
         ("formats, like HTML and PDF.", "formats, such as HTML and PDF."),
         ("There are various text files", "There are many text files"),
         ("running the kernel, and information", "running the kernel and information"),
         ("changes.rst file, as it contains", "changes.rst file: it contains"))


@dataclasses.dataclass(frozen=True)
class Change:
    base: str
    tree: str  # the base's tree with EDITS[0] applied: every mail below carries this change


@pytest.fixture(scope="module")
def change(linux: Path, linux_head: str) -> Change:
    text = show(linux, linux_head, README)
    tip = commit(linux, linux_head, {README: text.replace(*EDITS[0])}, "README: Reword a sentence\n")
    return Change(linux_head, git(linux, "rev-parse", f"{tip}^{{tree}}").strip())


def _mail(linux: Path, change: Change, out: Path, author: str, message: str, *extra: str) -> Path:
    """A format-patch mail of the change with AUTHOR and MESSAGE (git quotes and MIME-encodes the From:)."""
    name, email = author.rsplit(" <", 1)
    who = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">")}
    sha = git(linux, "commit-tree", change.tree, "-p", change.base, "-m", message, env=who).strip()
    out.write_text(git(linux, "format-patch", "-1", "--stdout", *extra, sha))
    return out


def _checkpatch(linux: Path, mails: dict[str, Path], *flags: str) -> dict[str, list[tuple[str, str, str]]]:
    """checkpatch.pl on every mail in one run (from the mails' directory, where --strict may leave
    its CamelCase cache): per mail, its (level, type, message) reports."""
    args = ["perl", str(linux / "scripts/checkpatch.pl"), f"--root={linux}", "--terse", "--no-summary", "--show-types",
            "--emacs", "--color=never", *flags, *map(str, mails.values())]
    done = subprocess.run(args, cwd=next(iter(mails.values())).parent, env={**os.environ, "GIT_DIR": str(linux / ".git")},
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode in (0, 1), done.stderr
    by_path: dict[str, list[tuple[str, str, str]]] = {str(p): [] for p in mails.values()}
    for line in done.stdout.splitlines():
        path, _line, rest = line.split(":", 2)
        level, kind, message = rest.strip().split(":", 2)
        by_path[path].append((level, kind, message.strip()))
    return {case: by_path[str(path)] for case, path in mails.items()}


def _series(path: Path) -> Series:
    return fetch.build_series(fetch.read_mbox(path), str(path))


# --------------------------------------------------------------------------- author sign-off

SIGNOFF_CASES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {  # case: (author, sign-offs, format-patch options)
    "exact": (JANE, (JANE,), ()),
    "signoff-subaddress": (JANE, ("Jane Doe <jane+lkml@example.org>",), ()),
    "author-subaddress": ("Jane Doe <jane+lkml@example.org>", (JANE,), ()),
    "both-subaddress": ("Jane Doe <jane+lkml@example.org>", ("Jane Doe <jane+lkml@example.org>",), ()),
    "other-address": (JANE, ("Jane Doe <jdoe@corp.example.com>",), ()),
    "other-name": (JANE, ("J. Doe <jane@example.org>",), ()),
    "name-case": (JANE, ("jane doe <jane@example.org>",), ()),
    "address-case": (JANE, ("Jane Doe <Jane@Example.org>",), ()),
    "name-comment": (JANE, ("Jane Doe (ACME) <jane@example.org>",), ()),
    "no-signoff": (JANE, (), ()),
    "someone-else": (JANE, ("Max Maintainer <max@example.org>",), ()),
    "someone-else-then-near": (JANE, ("Max Maintainer <max@example.org>", "Jane Doe <jdoe@corp.example.com>"), ()),
    "last-near-counts": (JANE, ("Jane Doe <jdoe@corp.example.com>", "J. Doe <jane@example.org>"), ()),
    "other-name-and-tag": ("Jane Doe <jane+lkml@example.org>", ("Jane Roe <jane@example.org>",), ()),
    "comma-name": ("Doe, Jane <jane@example.org>", ("Doe, Jane <jane@example.org>",), ()),
    "non-ascii": ("Jörg Rödel <joro@example.org>", ("Jörg Rödel <joro@example.org>",), ()),
    "non-ascii-transliterated": ("Jörg Rödel <joro@example.org>", ("Joerg Roedel <joro@example.org>",), ()),
    "in-body-from": (JANE, (JANE,), ("--from=Sam Sender <sam@example.org>",)),
    "in-body-from-sender-signs": (JANE, ("Sam Sender <sam@example.org>",), ("--from=Sam Sender <sam@example.org>",)),
    "hash-comment": (JANE, (JANE + " # for the stable part",), ()),
}
# checkpatch's report -> (our level, our sub-id)
KINDS = {"email comments mismatch": "comment", "email name mismatch": "name", "email address mismatch": "address",
         "email subaddress mismatch": "subaddress"}
LEVELS = {"ERROR": Level.ERROR, "WARNING": Level.WARNING, "CHECK": Level.INFO}
# On purpose: git and b4 read `# ...` after a trailer as its comment, so the sign-off is the author's own.
DIFFER = {"hash-comment": ((Level.INFO, "author-signoff/comment"), None)}


def _checkpatch_verdict(reports: list[tuple[str, str, str]]) -> tuple[Level, str] | None:
    mine = [(lvl, kind, msg) for lvl, kind, msg in reports if kind in ("NO_AUTHOR_SIGN_OFF", "MISSING_SIGN_OFF", "FROM_SIGN_OFF_MISMATCH")]
    assert len(mine) <= 1, mine
    if not mine:
        return None
    level, kind, message = mine[0]
    sub = (next((sub for text, sub in KINDS.items() if message.startswith(f"From:/Signed-off-by: {text}")), "")
           if kind == "FROM_SIGN_OFF_MISMATCH" else "")
    return LEVELS[level], f"author-signoff/{sub}" if sub else "author-signoff"


def test_author_signoff_decides_as_checkpatch(linux: Path, change: Change, tmp_path: Path) -> None:
    mails = {}
    for case, (author, signoffs, extra) in SIGNOFF_CASES.items():
        message = "README: Reword a sentence\n\nSay it plainly.\n\n" + "".join(f"Signed-off-by: {s}\n" for s in signoffs)
        mails[case] = _mail(linux, change, tmp_path / f"{case}.patch", author, message, *extra)
    theirs = {case: _checkpatch_verdict(r) for case, r in _checkpatch(linux, mails, "--strict").items()}
    ours = {}
    for case, path in mails.items():
        found = [(f.level, f.rule) for f in CHECKS["author-signoff"].findings(_series(path))]
        assert len(found) <= 1, found
        ours[case] = found[0] if found else None
    for case, (checkpatch_says, we_say) in DIFFER.items():
        assert (theirs.pop(case), ours.pop(case)) == (checkpatch_says, we_say), case
    assert ours == theirs
    # the cases are not all alike: every verdict occurs
    assert {v[1] if v else None for v in ours.values()} == {None, "author-signoff", *(f"author-signoff/{k}" for k in KINDS.values())}
    assert theirs["no-signoff"] == (Level.ERROR, "author-signoff") and theirs["exact"] is None


# --------------------------------------------------------------------------- Fixes:

def _fixes_cases(head: str, subject: str) -> dict[str, tuple[str, set[str], list[str]]]:
    """case: (the Fixes: line, checkpatch's types among BAD_FIXES_TAG/GIT_COMMIT_ID, our fixes-tag rules)."""
    s12 = head[:12]
    return {
        "well-formed": (f'Fixes: {s12} ("{subject}")', set(), []),
        "commit-prefix": (f'Fixes: commit {s12} ("{subject}")', {"BAD_FIXES_TAG"}, ["fixes-tag/format"]),
        "upper-case": (f'Fixes: {s12.upper()} ("{subject}")', {"BAD_FIXES_TAG"}, ["fixes-tag/format"]),
        "short-id": (f'Fixes: {head[:7]} ("{subject}")', {"BAD_FIXES_TAG"}, ["fixes-tag/format"]),
        "unquoted": (f"Fixes: {s12} ({subject})", {"BAD_FIXES_TAG"}, ["fixes-tag/format"]),
        "no-subject": (f"Fixes: {s12}", {"BAD_FIXES_TAG"}, ["fixes-tag/format"]),
        "lower-case-tag": (f'fixes: {s12} ("{subject}")', {"BAD_FIXES_TAG"}, ["fixes-tag/format"]),
        "wrong-subject": (f'Fixes: {s12} ("Linux 6.11")', {"BAD_FIXES_TAG"}, ["fixes-tag/subject"]),
        # checkpatch warns of any subject that is not the commit's; ours is a warning of its own
        "abbreviated": (f'Fixes: {s12} ("{subject[:10]}...")', {"BAD_FIXES_TAG"}, ["fixes-tag/abbreviated"]),
        # on purpose: checkpatch does not take these for Fixes tags at all, stable's tools cannot use them either
        "url": ("Fixes: https://bugzilla.kernel.org/show_bug.cgi?id=219000", set(), ["fixes-tag/format"]),
        "question-mark": ("Fixes: ?", set(), ["fixes-tag/format"]),
        # on purpose: submitting-patches asks for at least 12 digits, checkpatch for exactly 12
        "sixteen-digits": (f'Fixes: {head[:16]} ("{subject}")', {"BAD_FIXES_TAG"}, []),
        "forty-digits": (f'Fixes: {head} ("{subject}")', {"BAD_FIXES_TAG"}, []),
        # on purpose: checkpatch says nothing of a commit the tree does not have
        "unknown": ('Fixes: 0123456789ab ("net: Add a driver")', set(), ["fixes-tag/unknown"]),
    }


def test_fixes_lines_as_checkpatch_sees_them(linux: Path, linux_head: str, change: Change, tmp_path: Path) -> None:
    subject = git(linux, "log", "-1", "--format=%s", linux_head).strip()
    cases = _fixes_cases(linux_head, subject)
    mails = {case: _mail(linux, change, tmp_path / f"{case}.patch", JANE,
                         f"README: Reword a sentence\n\nSay it plainly.\n\n{line}\nSigned-off-by: {JANE}\n")
             for case, (line, _, _) in cases.items()}
    reports = _checkpatch(linux, mails)
    theirs = {case: {kind for _, kind, _ in r if kind in ("BAD_FIXES_TAG", "GIT_COMMIT_ID")} for case, r in reports.items()}
    assert theirs == {case: want for case, (_, want, _) in cases.items()}
    assert all(lvl == "WARNING" for r in reports.values() for lvl, kind, _ in r if kind == "BAD_FIXES_TAG")  # ours: an error
    base = GitBaseTree(linux, linux_head)
    ours = {case: [f.rule for f in CHECKS["fixes-tag"].findings(_series(path), base)] for case, path in mails.items()}
    assert ours == {case: want for case, (_, _, want) in cases.items()}


# --------------------------------------------------------------------------- checkpatch's end-of-patch checks

def test_end_of_patch_checks_on_otherwise_clean_patches_reach_the_review(linux: Path, linux_head: str, tmp_path: Path) -> None:
    """Without --mailback: each patch is clean but for one of the checks checkpatch runs at the patch's end."""
    text = show(linux, linux_head, README)
    trailers = (  # the first patch is clean: it shows that the change itself draws no report
        f"Signed-off-by: {JANE}\n",
        f"Cc: stable@vger.kernel.org\nSigned-off-by: {JANE}\n",  # a fix for stable without a Fixes: tag
        "Signed-off-by: Jane Doe <jane+lkml@example.org>\n",
        "",
        "Signed-off-by: Max Maintainer <max@example.org>\n",
    )
    tip = linux_head
    for n, (edit, trailer) in enumerate(zip(EDITS, trailers, strict=True), 1):
        text = text.replace(*edit)
        tip = commit(linux, tip, {README: text}, f"README: Reword sentence {n}\n\nSay it plainly.\n\n{trailer}", author=JANE)
    mbox = format_patch(linux, linux_head, tip, tmp_path / "series.mbox", "--to=linux-kernel@vger.kernel.org")
    result = review_cli(mbox, "--tree", linux, "--no-tests", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.FINDINGS, result.stderr
    found = result.json()["findings"]
    # Every report of every source, with its patch and the finding's level (reviewer/checks/merge.py makes
    # our sign-off finding and checkpatch's one finding naming both).
    said = sorted((f["patch"] or 0, r, f["level"]) for f in found for r in f["sources"])
    checkpatch = [s for s in said if s[1].startswith("checkpatch/")]
    assert checkpatch == [(2, "checkpatch/MISSING_FIXES_TAG", "warning"), (3, "checkpatch/FROM_SIGN_OFF_MISMATCH", "warning"),
                          (4, "checkpatch/MISSING_SIGN_OFF", "error"), (5, "checkpatch/NO_AUTHOR_SIGN_OFF", "error")]
    ours = [s for s in said if s[1].startswith("author-signoff")]
    assert ours == [(3, "author-signoff/subaddress", "warning"), (4, "author-signoff", "error"), (5, "author-signoff", "error")]
    merged = [f["sources"] for f in found if len(f["sources"]) > 1]
    assert len(merged) == 3, merged  # patches 3, 4 and 5: one finding each, not two
    result.assert_nothing_left()
