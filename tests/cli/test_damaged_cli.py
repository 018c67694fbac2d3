"""`review` on damaged and unusual diffs: a finding on the patch, the rest reviewed, exit 1, no traceback."""
from __future__ import annotations

import email
import email.policy
import subprocess
from pathlib import Path

from reviewer.errors import ExitStatus
from tests.helpers import Result, review
from tests.unit.series.test_patchparse import DIFFS

SERIES = DIFFS / "series-damaged-2of3.mbox"


def _clean(result: Result) -> None:
    assert "Traceback" not in result.stdout + result.stderr
    assert "review: error" not in result.stderr, result.stderr


def test_one_damaged_patch_is_an_error_finding_and_the_rest_is_reviewed(tmp_path: Path) -> None:
    result = review(SERIES, cwd=tmp_path, tmp=tmp_path / "tmp")
    _clean(result)
    assert result.rc == ExitStatus.FINDINGS
    lines = result.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("0002/0003 mm/dmapool.c:102: [error] the diff is damaged: "))
    assert lines[at].endswith("(patch-damaged)") and "ends after 6 of its 7 old and 7 of its 8 new lines" in lines[at]
    assert lines[at + 1].strip().startswith("@@ -95,7 +95,8 @@") and "spin_unlock_irqrestore" in "".join(lines[at + 2 : at + 6])
    assert not [ln for ln in lines if "patch-damaged" in ln and not ln.startswith("0002/0003")]
    assert "4 files, +8 -3; 1 damaged" in result.stdout  # the parse stage read all three patches
    result.assert_nothing_left()


def test_json_and_reply_still_work(tmp_path: Path) -> None:
    doc = review(SERIES, "--format", "json", cwd=tmp_path, tmp=tmp_path / "tmp").json()
    assert [(f["patch"], f["level"]) for f in doc["findings"] if f["rule"] == "patch-damaged"] == [(2, "error")]
    assert [len(p["files"]) for p in doc["patches"]] == [1, 2, 1]
    subprocess.run(["git", "config", "--global", "user.email", "rev@example.org"], check=True)  # the reply's sender
    result = review(SERIES, "--reply", "-", cwd=tmp_path, tmp=tmp_path / "tmp2")
    _clean(result)
    assert result.rc == ExitStatus.FINDINGS
    msg = email.message_from_string(result.stdout, policy=email.policy.default)
    assert msg["Subject"] == "Re: [PATCH 0/3] mm/dmapool: the free path"
    body = msg.get_content()
    section = body[body.index("[2/3] mm/dmapool: warn about an unbalanced free"):]
    assert "> @@ -95,7 +95,8 @@" in section and "The diff is damaged: hunk @@ -95,7 +95,8 @@ ends after" in section
    assert "git send-email" in section


def test_a_mangled_mail(tmp_path: Path) -> None:
    result = review(DIFFS / "mangled-wrapped.mbox", cwd=tmp_path, tmp=tmp_path / "tmp")
    _clean(result)
    assert result.rc == ExitStatus.FINDINGS
    assert "0001/0001 mm/dmapool.c:62: [error] the diff is damaged: line 1 of hunk @@ -62,6 +62,9 @@" in result.stdout
    assert "(a long line the mail client wrapped)" in result.stdout and "    struct device *dev," in result.stdout


def test_a_patch_mail_without_a_diff_is_a_warning_not_silence(tmp_path: Path) -> None:
    result = review(DIFFS / "no-hunk-header.mbox", cwd=tmp_path, tmp=tmp_path / "tmp")
    _clean(result)
    assert "0001/0001: [warning] the patch mail has no diff the tool could parse (patch-no-diff)" in result.stdout
    assert "0 files, +0 -0; 1 without a diff" in result.stdout


def test_quilt_and_gmail_mails_review_cleanly(tmp_path: Path) -> None:
    quilt = review(DIFFS / "quilt-series.mbox", "--format", "json", cwd=tmp_path, tmp=tmp_path / "tmp").json()
    assert [[(f["path"], f["change"], f["added"]) for f in p["files"]] for p in quilt["patches"]] == [
        [("mm/dmapool.c", "modified", 2)], [("mm/dmapool.c", "modified", 3), ("mm/dmapool_trace.h", "added", 9)]]
    result = review(DIFFS / "gmail-qp.mbox", cwd=tmp_path, tmp=tmp_path / "tmp2")
    _clean(result)
    assert result.rc == ExitStatus.OK and "patch-damaged" not in result.stdout and "1 files, +2 -2" in result.stdout
    for doc in (quilt,):
        assert not [f for f in doc["findings"] if f["rule"].startswith("patch-")]


def test_the_old_corrupt_hunk_fixture_is_now_a_finding(tmp_path: Path) -> None:
    """fixtures/series/bad/corrupt-hunk.mbox used to stop the review (exit 4); git am still rejects it."""
    result = review(SERIES.parents[2] / "series" / "bad" / "corrupt-hunk.mbox", cwd=tmp_path, tmp=tmp_path / "tmp")
    _clean(result)
    assert result.rc == ExitStatus.FINDINGS
    assert ("0001/0001 lib/vdso/Kconfig:6: [error] the diff is damaged: hunk @@ -1,9 +1,10 @@ ends after 4 of its 9 old "
            "and 5 of its 10 new lines") in result.stdout
