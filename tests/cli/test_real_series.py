"""Which mails are the series, read from real thread shapes (fixtures/mail/series/), with git am,
git mailinfo and b4 as the oracles where they have an answer."""
from __future__ import annotations

import mailbox
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reviewer.errors import ExitStatus
from tests.conftest import FIXTURES, git
from tests.helpers import review

MAIL = FIXTURES / "mail" / "series"


def doc(name: str, tmp: Path, *args: str | Path) -> dict[str, Any]:
    result = review(MAIL / f"{name}.mbox", "--format", "json", *args, tmp=tmp / "tmp")
    assert result.rc in (ExitStatus.OK, ExitStatus.FINDINGS), result.stderr
    assert "Traceback" not in result.stderr
    return result.json()  # type: ignore[no-any-return]


@pytest.fixture(autouse=True)
def reviewer_identity() -> None:
    """The reply tests need a sender: the private HOME's git config gets one."""
    subprocess.run(["git", "config", "--global", "user.email", "rev@example.org"], check=True)


def rules(d: dict[str, Any]) -> list[str]:
    return [f["rule"] for f in d["findings"]]


def git_am(repo: Path, name: str, msgids: list[str], tmp: Path) -> list[str]:
    """`git am` the mails MSGIDS of fixture NAME, in that order, on REPO; the subjects it committed."""
    box = mailbox.mbox(str(MAIL / f"{name}.mbox"))
    by_id = {str(m["Message-Id"]).strip("<>"): m for m in box}
    picked = tmp / f"{name}-picked.mbox"
    picked.write_bytes(b"".join(by_id[i].as_bytes(unixfrom=True) + b"\n" for i in msgids))
    git(repo, "am", "-q", str(picked))
    return git(repo, "log", "--format=%s", f"-{len(msgids)}", "--reverse").splitlines()


def numstat(repo: Path) -> list[str]:
    return git(repo, "diff", "--numstat", "HEAD~1", "HEAD").splitlines()


def test_unlabeled_repost_reviews_the_newest_posting_and_it_applies(tmp_path: Path, kernel_repo: Path) -> None:
    d = doc("repost-unlabeled", tmp_path, "--tree", kernel_repo)
    s = d["series"]
    assert (s["version"], s["total"], s["missing"], s["revisions"]) == (1, 2, [], [1])
    assert [p["msgid"] for p in d["patches"]] == ["20240822070000.4202-2-ana@example.org", "20240822070000.4202-3-ana@example.org"]
    assert [(p["msgid"], p["reviewed"]) for p in s["postings"]] == [
        ("20240820070000.4101-1-ana@example.org", False), ("20240822070000.4202-1-ana@example.org", True)]
    assert [p["status"] for p in d["apply"]["patches"]] == ["applied", "applied"]
    # git am of the reviewed posting gives the diffstat the review shows for its first patch
    subjects = git_am(kernel_repo, "repost-unlabeled", [p["msgid"] for p in d["patches"]][:1], tmp_path)
    assert subjects == [d["patches"][0]["subject"]]
    assert numstat(kernel_repo) == [f"{f['added']}\t{f['removed']}\t{f['path']}" for f in d["patches"][0]["files"]]


def test_resend_reviews_the_resend_and_keeps_the_review_of_the_identical_original(tmp_path: Path) -> None:
    d = doc("resend", tmp_path)
    s = d["series"]
    assert (s["version"], s["total"]) == (2, 2)
    assert [p["subject"] for p in s["postings"]] == ["[PATCH v2 0/2] mm/dmapool: Documentation touches",
                                                      "[RESEND PATCH v2 0/2] mm/dmapool: Documentation touches"]
    assert [p["reviewed"] for p in s["postings"]] == [False, True]
    review_of_1 = [(t["name"], t["msgid"]) for t in d["patches"][0]["trailers"] if t["source"] == "followup"]
    assert review_of_1 == [("Reviewed-by", "20240821080000.GA2@rev1.example.org")]


def test_the_same_patch_sent_three_times_is_one_patch(tmp_path: Path) -> None:
    d = doc("same-patch-thrice", tmp_path)
    s = d["series"]
    assert (s["total"], len(d["patches"]), s["revisions"]) == (1, 1, [1])
    assert d["patches"][0]["msgid"] == "20240822070000.6303-1-ana@example.org"
    assert [p["reviewed"] for p in s["postings"]] == [False, False, True]
    assert all(p["index"] <= s["total"] for p in d["patches"])


def test_an_incomplete_newer_posting_loses_to_a_complete_one(tmp_path: Path) -> None:
    d = doc("newest-posting-incomplete", tmp_path)
    s = d["series"]
    assert (s["total"], s["missing"]) == (3, [])
    assert s["msgid"] == "20240820070000.7101-1-ana@example.org"
    assert [(p["patches"], p["reviewed"]) for p in s["postings"]] == [([1, 2, 3], True), ([1, 3], False)]
    assert "series-complete" not in rules(d)


def test_a_fixup_sent_in_reply_is_a_followup_patch(tmp_path: Path, kernel_repo: Path) -> None:
    d = doc("fixup-in-reply", tmp_path, "--tree", kernel_repo)
    s = d["series"]
    assert (s["total"], [p["index"] for p in d["patches"]]) == (2, [1, 2])
    assert [p["subject"] for p in d["patches"]][1] == "mm/Kconfig: Tell the unsure what to answer for DMAPOOL_TEST"
    (fix,) = s["followup_patches"]
    assert (fix["of_patch"], fix["author"]["email"]) == (2, "fixer@example.org")
    assert fix["subject"] == "[PATCH] mm/Kconfig: Word the DMAPOOL_TEST advice as a sentence"
    assert [p["status"] for p in d["apply"]["patches"]] == ["applied", "applied"]


@pytest.mark.parametrize(("name", "version", "sent"), [
    ("commas-prefix", 2, "[mm,v2,0/2] mm/dmapool: Documentation touches"),
    ("hg-of-numbering", 1, "[PATCH 0 of 2] mm/dmapool: Documentation touches"),
])
def test_prefixes_as_patchwork_and_mercurial_write_them(name: str, version: int, sent: str, tmp_path: Path, kernel_repo: Path) -> None:
    d = doc(name, tmp_path, "--tree", kernel_repo)
    s = d["series"]
    assert (s["version"], s["total"], s["missing"], s["revisions"]) == (version, 2, [], [version])
    ids = [p["msgid"] for p in d["patches"]]
    assert [i.rsplit("-", 2)[-2] for i in ids] == ["2", "3"]  # 1/2 then 2/2, in the order sent
    assert git_am(kernel_repo, name, ids, tmp_path) == [p["subject"] for p in d["patches"]]
    reply = review(MAIL / f"{name}.mbox", "--reply", "-", tmp=tmp_path / "tmp2")
    assert f"Subject: Re: {sent}" in reply.stdout  # the reply keeps the subject as it was sent


def test_in_body_from_is_the_author_and_signs_off(tmp_path: Path) -> None:
    d = doc("on-behalf", tmp_path)
    (p,) = d["patches"]
    assert p["author"] == {"name": "Ana Author", "email": "ana@example.org"}
    assert p["sender"] == {"name": "Sam Sender", "email": "sam@example.org"}
    assert "author-signoff" not in rules(d)
    assert [t["name"] for t in p["trailers"]] == ["Signed-off-by", "Signed-off-by"]
    reply = review(MAIL / "on-behalf.mbox", "--reply", "-", tmp=tmp_path / "tmp2")
    to = next(line for line in reply.stdout.splitlines() if line.startswith("To: "))
    assert "ana@example.org" in to and "sam@example.org" in to


def test_only_the_trailer_block_gives_trailers(tmp_path: Path) -> None:
    d = doc("prose-and-block-trailers", tmp_path)
    (p,) = d["patches"]
    assert [(t["name"], t["comment"]) for t in p["trailers"]] == [
        ("Cc", "# 6.1+"), ("Signed-off-by", "[ rev1: reworded the comment ]"), ("Acked-by", "")]


def test_reply_trailers_dropped_repeated_and_commented(tmp_path: Path) -> None:
    d = doc("reply-trailers", tmp_path)
    (dropped,) = [f for f in d["findings"] if f["rule"] == "dropped-trailers"]
    assert dropped["level"] == "info" and "Reviewed-by: Rev One <rev1@example.org>" in dropped["message"]
    assert "rev1@work.example.com" in dropped["message"]
    assert [t["name"] for t in d["patches"][0]["trailers"]] == ["Acked-by", "Signed-off-by"]
    assert [t["name"] for t in d["patches"][1]["trailers"]] == ["Acked-by", "Signed-off-by"]  # the repeated Acked-by adds nothing
    (tested,) = d["series"]["cover"]["trailers"]
    assert (tested["name"], tested["comment"]) == ("Tested-by", "# on a QEMU x86_64 guest")


def test_a_diff_attached_as_text_x_diff_is_read_as_git_mailinfo_reads_it(tmp_path: Path) -> None:
    path = MAIL / "xdiff-attachment.mbox"
    subprocess.run(["git", "mailinfo", str(tmp_path / "msg"), str(tmp_path / "patch")], stdin=path.open("rb"),
                   capture_output=True, check=True)
    d = doc("xdiff-attachment", tmp_path)
    (p,) = d["patches"]
    git_files = [ln.split(" b/")[-1] for ln in (tmp_path / "patch").read_text().splitlines() if ln.startswith("diff --git ")]
    assert [f["path"] for f in p["files"]] == git_files == ["mm/dmapool.c"]
    assert (p["added"], p["removed"]) == (1, 0)
    assert "author-signoff" not in rules(d)


def test_a_pull_request_is_one(tmp_path: Path) -> None:
    result = review(MAIL / "pull-request.mbox", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    assert "GIT PULL" in result.stdout and "tags/dmapool-docs-6.11-rc4" in result.stdout
    d = doc("pull-request", tmp_path)
    assert d["series"]["pull_request"] == {"url": "https://git.example.org/pub/scm/linux/kernel/git/pullmaint/linux.git",
                                           "ref": "tags/dmapool-docs-6.11-rc4", "base": "6bbeb48ebf412bd3a084da5ffe8492a5a0730ba2",
                                           "tip": "2d6f0ac5b1a04e2f7d3c8e9b0a1f2e3d4c5b6a79"}
    assert d["findings"] == [] and d["patches"] == []
    reply = review(MAIL / "pull-request.mbox", "--reply", "-", tmp=tmp_path / "t3").stdout
    assert "Subject: Re: [GIT PULL] dmapool documentation for 6.11-rc4" in reply
    assert "In-Reply-To: <ZsvK3p-pull@pullmaint.example.org>" in reply and "the pull request" in reply


def test_a_pull_request_with_a_diff_is_reviewed_as_a_pull_request(tmp_path: Path, kernel_repo: Path) -> None:
    d = doc("pull-request-diff", tmp_path, "--tree", kernel_repo)
    assert d["series"]["pull_request"]["ref"] == "tags/dmapool-docs-6.11-rc4"
    assert [f["path"] for p in d["patches"] for f in p["files"]] == ["mm/dmapool.c", "mm/Kconfig"]
    assert not {"author-signoff", "subject-format", "base-commit"} & set(rules(d))
    assert d["apply"]["base"] == "6bbeb48ebf412bd3a084da5ffe8492a5a0730ba2"


def test_format_flowed_is_undone_as_git_mailinfo_does(tmp_path: Path, kernel_repo: Path) -> None:
    path = MAIL / "format-flowed.mbox"
    subprocess.run(["git", "mailinfo", str(tmp_path / "msg"), str(tmp_path / "patch")], stdin=path.open("rb"),
                   capture_output=True, check=True)
    d = doc("format-flowed", tmp_path, "--tree", kernel_repo)
    (p,) = d["patches"]
    assert [(f["path"], f["added"], f["removed"]) for f in p["files"]] == [("mm/dmapool.c", 1, 0)]
    assert d["apply"]["patches"][0]["status"] == "applied"
    assert "patch-damaged" not in rules(d)
    from reviewer.series import fetch

    series = fetch.build_series(fetch.read_mbox(path), str(path))
    assert series.patches[0].message == (tmp_path / "msg").read_text()
    git_diff = (tmp_path / "patch").read_text()
    assert series.patches[0].diff.split("\nbase-commit")[0] == git_diff[git_diff.index("diff --git"):].split("\nbase-commit")[0]


def test_a_partial_reroll_says_which_patches_were_carried_over_as_b4_does(tmp_path: Path) -> None:
    import re
    import sys

    path = FIXTURES / "lore" / "partial-reroll.mbox"
    b4 = Path(sys.executable).parent / "b4"
    done = subprocess.run([str(b4), "-n", "am", "-m", str(path), "-o", str(tmp_path), "20240904073000.8080-1-reroll@example.org"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    said = done.stdout + done.stderr
    assert "v2 is a partial reroll" in said, said
    b4_carried = [(int(m[1]), int(m[3])) for m in re.finditer(r"\[PATCH v(\d+)->v(\d+) (\d+)/\d+\]", said)]
    d = doc("../../lore/partial-reroll", tmp_path)
    reroll = d["series"]["partial_reroll"]
    assert [(reroll["from"], i) for i in reroll["carried"]] == b4_carried == [(1, 1), (1, 3)]
    assert [p["carried_from"] for p in d["patches"]] == [1, None, 1]
    terminal = review(path, tmp=tmp_path / "t2").stdout
    assert "v2 is a partial reroll: 2/3 resent; 1/3, 3/3 carried over from v1" in " ".join(terminal.split())
