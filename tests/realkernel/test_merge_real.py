"""Each pair of reviewer/checks/merge.py's table against what the 6.12 tree's checkpatch.pl really says:
one finding per fact in the report, naming both sources, on patches made from real files."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import review
from tests.realkernel.kernel import commit, format_patch, git, show

JANE = "Jane Doe <jane@example.org>"
README = "README"


@pytest.fixture(scope="module")
def report(linux: Path, linux_head: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("merge")
    lines = ["There are various text files", "guides for kernel developers and users.", "formats, like HTML and PDF.",
             "running the kernel, and information", "changes.rst file, as it contains"]
    steps = [
        ({"include/linux/reviewer_demo.h": "// SPDX-License-Identifier: GPL-2.0\n#ifndef _LINUX_REVIEWER_DEMO_H\n"
          "#define _LINUX_REVIEWER_DEMO_H\n#endif\n"},
         f"demo: Add a header\n\nA header for the demo.\n\nSigned-off-by: {JANE}\n"),
        ((lines[0], "There are many text files"), "README: Say many\n\nMany, not various.\n"),
        ((lines[1], "guides for kernel users and developers."),
         f"README: Users first\n\nUsers first.\n\nFixes: 1234567 (\"README: Say many\")\nSigned-off-by: {JANE}\n"),
        ((lines[2], "formats, such as HTML and PDF."),
         f"README: Such as\n\nSuch as, not like.\n\nChange-Id: I0123456789abcdef0123456789abcdef01234567\nSigned-off-by: {JANE}\n"),
        ((lines[3], "running the kernel and information"),
         "README: Drop a comma\n\nNo comma there.\n\nSigned-off-by: Jane Q. Doe <jane@example.org>\n"),
        ((lines[4], "changes.rst file: it contains"),
         f"README: A colon\n\nA colon reads better.\n\nFixes: 0123456789ab (\"README: Say many\")\nSigned-off-by: {JANE}\n"),
        ({"mm/reviewer_demo.c": "// SPDX-License-Identifier: GPL-2.0\n#include <linux/init.h>\n",
          "mm/Makefile": show(linux, linux_head, "mm/Makefile") + "obj-y += reviewer_demo.o\n"},
         f"mm: Add a demo file\n\nA file under mm/, which MAINTAINERS covers.\n\nSigned-off-by: {JANE}\n"),
    ]
    parent = linux_head
    env = {"GIT_AUTHOR_NAME": "Jane Doe", "GIT_AUTHOR_EMAIL": "jane@example.org"}
    for change, message in steps:
        changes = change if isinstance(change, dict) else {README: show(linux, parent, README).replace(*change)}
        tip = commit(linux, parent, changes, message)
        parent = git(linux, "commit-tree", f"{tip}^{{tree}}", "-p", parent, "-m", message, env=env).strip()
    mbox = format_patch(linux, linux_head, parent, tmp / "series.mbox")
    done = review(mbox, "--format", "json", "--tree", linux, "--base", linux_head, "--reply", tmp / "reply.eml", tmp=tmp / "tmp")
    assert "Traceback" not in done.stderr, done.stderr
    return {**done.json(), "reply": (tmp / "reply.eml").read_text()}


def groups(report: dict[str, Any], patch: int) -> list[set[str]]:
    return [set(f["sources"]) for f in report["findings"] if f["patch"] == patch and f["level"] != "info"
            and not f["rule"].startswith("get-maintainer")]


def test_spdx_style_is_said_once(report: dict[str, Any]) -> None:
    spdx = [g for g in groups(report, 1) if g & {"spdx-header/style", "checkpatch/SPDX_LICENSE_TAG"}]
    assert spdx == [{"spdx-header/style", "checkpatch/SPDX_LICENSE_TAG"}]


def test_a_missing_signoff_is_said_once(report: dict[str, Any]) -> None:
    signoff = [g for g in groups(report, 2) if any("SIGN_OFF" in r or r.startswith("author-signoff") for r in g)]
    assert signoff == [{"author-signoff", "checkpatch/MISSING_SIGN_OFF"}]


def test_a_malformed_fixes_tag_is_said_once(report: dict[str, Any]) -> None:
    # checkpatch's UNKNOWN_COMMIT_ID (the id is not in the tree either) is another fact about the same line
    fixes = [g for g in groups(report, 3) if any("FIXES" in r or r == "checkpatch/GIT_COMMIT_ID" or r.startswith("fixes-tag") for r in g)]
    assert len(fixes) == 1 and "fixes-tag/format" in fixes[0] and fixes[0] & {"checkpatch/BAD_FIXES_TAG", "checkpatch/GIT_COMMIT_ID"}


def test_a_change_id_is_said_once(report: dict[str, Any]) -> None:
    change = [g for g in groups(report, 4) if g & {"change-id", "checkpatch/GERRIT_CHANGE_ID"}]
    assert change == [{"change-id", "checkpatch/GERRIT_CHANGE_ID"}]


def test_a_signoff_under_another_name_is_said_once(report: dict[str, Any]) -> None:
    name = [g for g in groups(report, 5) if any("SIGN_OFF" in r or r.startswith("author-signoff") for r in g)]
    assert name == [{"author-signoff/name", "checkpatch/FROM_SIGN_OFF_MISMATCH"}]


def test_an_unknown_fixes_commit_is_said_once(report: dict[str, Any]) -> None:
    unknown = [g for g in groups(report, 6) if g & {"fixes-tag/unknown", "checkpatch/UNKNOWN_COMMIT_ID"}]
    assert unknown == [{"fixes-tag/unknown", "checkpatch/UNKNOWN_COMMIT_ID"}]


def test_maintainers_need_nothing_for_a_covered_new_file(report: dict[str, Any]) -> None:
    """mm/ has its section: checkpatch's "does MAINTAINERS need updating?" is dropped there, while the
    header of patch 1, which only THE REST covers, keeps it, said once with maintainers-coverage."""
    assert [g for g in groups(report, 7) if "checkpatch/FILE_PATH_CHANGES" in g or "maintainers-coverage" in g] == []
    asked = [g for g in groups(report, 1) if "checkpatch/FILE_PATH_CHANGES" in g or "maintainers-coverage" in g]
    assert asked == [{"maintainers-coverage", "checkpatch/FILE_PATH_CHANGES"}]


def test_the_reply_quotes_each_fact_once_and_a_trailer_fact_quotes_the_trailers(report: dict[str, Any]) -> None:
    reply = report["reply"]
    assert reply.count("> +// SPDX-License-Identifier: GPL-2.0") == 1
    # the malformed Fixes: (an error) and checkpatch's unknown id (a warning) quote the trailer block once (issue 30)
    assert reply.count('> Fixes: 1234567 ("README: Say many")\n> Signed-off-by: Jane Doe <jane@example.org>') == 1
    assert "Warning in [3/7] README: Users first\n\nUnknown commit id '1234567', maybe rebased or not pulled?" in reply
    assert "Error in [2/7] README: Say many\n\n> Many, not various.\n\nNo Signed-off-by at all." in reply  # not a line of the diff
