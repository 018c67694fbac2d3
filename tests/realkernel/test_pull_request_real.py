"""A `git request-pull -p` mail on the 6.12 tree: reviewed as a pull request, with the tree's own
request-pull writing the mail and its checkpatch.pl reading the diff."""
from __future__ import annotations

from pathlib import Path

from reviewer.errors import ExitStatus
from tests.helpers import review
from tests.realkernel.kernel import commit, git, show

README = "README"


def test_a_request_pull_mail_with_its_diff(linux: Path, linux_head: str, tmp_path: Path) -> None:
    text = show(linux, linux_head, README)
    # Two commits with sign-offs, as in the sender's tree; the second adds a trailing space for checkpatch to see.
    one = commit(linux, linux_head, {README: text.replace("There are various text files", "There are many text files")},
                 "README: Say many, not various\n\nSigned-off-by: Pull Maintainer <pullmaint@example.org>\n")
    two = commit(linux, one, {README: show(linux, one, README).replace("README.rst first.\n", "README.rst first. \n")},
                 "README: Touch the formats line\n\nSigned-off-by: Pull Maintainer <pullmaint@example.org>\n")
    git(linux, "update-ref", "refs/tags/reviewer-pull-test", two)
    # request-pull asks the repository for the tag: the tree itself stands in for the sender's public one.
    body = git(linux, "request-pull", "-p", linux_head, str(linux), "reviewer-pull-test")
    assert "are available in the Git repository at:" in body and "diff --git a/README b/README" in body
    mbox = tmp_path / "pull.mbox"
    mbox.write_text("From pullmaint@example.org Mon Sep 16 12:00:00 2024\nFrom: Pull Maintainer <pullmaint@example.org>\n"
                    "To: Linus <torvalds@example.org>\nSubject: [GIT PULL] README wording\n"
                    "Date: Mon, 16 Sep 2024 12:00:00 +0200\nMessage-Id: <pull-readme@pullmaint.example.org>\n\n" + body)
    result = review(mbox, "--format", "json", "--tree", linux, tmp=tmp_path / "tmp")
    doc = result.json()
    errors = [(f["rule"], f["path"]) for f in doc["findings"] if f["level"] == "error"]
    assert result.rc == ExitStatus.FINDINGS and errors == [("checkpatch/TRAILING_WHITESPACE", "README")], errors
    pr = doc["series"]["pull_request"]
    assert (pr["url"], pr["ref"], pr["base"], pr["tip"]) == (str(linux), "tags/reviewer-pull-test", linux_head, two)
    assert doc["apply"]["base"] == linux_head and [p["status"] for p in doc["apply"]["patches"]] == ["applied"]
    rules = {f["rule"] for f in doc["findings"]}
    # The mail is no commit message: none of ours or checkpatch's message checks; the diff's trailing space is still seen.
    assert not {"author-signoff", "subject-format", "checkpatch/MISSING_SIGN_OFF", "checkpatch/NO_AUTHOR_SIGN_OFF"} & rules, rules
    git(linux, "update-ref", "-d", "refs/tags/reviewer-pull-test")
