"""A damaged diff is read as far as it goes and its damage recorded; git says what is damaged."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reviewer.model import Level
from reviewer.pipeline import review
from reviewer.request import ReviewRequest, SourceOptions
from reviewer.series import fetch
from reviewer.series.patchparse import Damage, read_diff, split_message
from tests.unit.series.test_patchparse import DIFFS, git_view, our_view

HEAD = "diff --git a/mm/dmapool.c b/mm/dmapool.c\n--- a/mm/dmapool.c\n+++ b/mm/dmapool.c\n"
ONE = "@@ -45,2 +45,3 @@\n \tif (!align)\n+\t\tx;\n \t\talign = 1;\n"
TWO = "@@ -60,2 +61,3 @@\n \tretval->dev = dev;\n+\ty;\n \tINIT_LIST_HEAD(&retval->page_list);\n"


def git_apply(diff: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    (patch := tmp / "p.diff").write_text(diff)
    return subprocess.run(["git", "apply", "--numstat", str(patch)], capture_output=True, text=True, cwd=tmp)


def damage_of(name: str, index: int = 1) -> tuple[Damage, ...]:
    series = fetch.build_series(fetch.read_mbox(DIFFS / name), name)
    return read_diff(series.patches[index - 1].diff).damage


@pytest.mark.parametrize("name,kind,line,bad", [
    ("mangled-wrapped.mbox", "wrapped", 62, "struct device *dev,"),
    ("mangled-context.mbox", "no-space", 71, "\tstruct dma_block *block;"),
])
def test_mangled_mails(name: str, kind: str, line: int, bad: str, tmp_path: Path) -> None:
    (d,) = damage_of(name)
    assert (d.path, d.kind, d.line) == ("mm/dmapool.c", kind, line)
    assert d.quote[0] == d.header and d.quote[-1] == bad and len(d.quote) <= 5
    assert "git am rejects the patch" in d.why and d.why.startswith("line 1 of hunk @@ ")
    assert git_view(DIFFS / name, tmp_path) == ["error: corrupt patch at line 10"]


def test_only_patch_2_of_3_is_damaged_and_keeps_both_its_files(tmp_path: Path) -> None:
    assert damage_of("series-damaged-2of3.mbox", 1) == damage_of("series-damaged-2of3.mbox", 3) == ()
    (d,) = damage_of("series-damaged-2of3.mbox", 2)
    assert (d.path, d.kind, d.line, d.header.split(" @@")[0]) == ("mm/dmapool.c", "short", 102, "@@ -95,7 +95,8")
    assert "ends after 6 of its 7 old and 7 of its 8 new lines" in d.why
    assert d.quote[-2:] == (" \tspin_unlock_irqrestore(&pool->lock, flags);", " }")
    # git: 1/3 and 3/3 apply, 2/3 is corrupt; we read 2/3's files as far as they go, the test file whole.
    gits, ours = git_view(DIFFS / "series-damaged-2of3.mbox", tmp_path), our_view(DIFFS / "series-damaged-2of3.mbox")
    assert gits[0] == ours[0] and gits[2] == ours[2] and gits[1] == "error: corrupt patch at line 19"
    assert ours[1] == [("mm/dmapool.c", 2, 1, ""), ("mm/dmapool_test.c", 1, 0, "")]


def test_a_longer_hunk_is_damage_though_git_am_applies_it(tmp_path: Path) -> None:
    (d,) = damage_of("longer-hunk.mbox")
    assert (d.kind, d.line, d.quote[-1]) == ("long", 74, '+MODULE_AUTHOR("Dma Author <dma.author@example.org>");')
    assert "git am would apply the patch without it" in d.why
    assert git_view(DIFFS / "longer-hunk.mbox", tmp_path) == our_view(DIFFS / "longer-hunk.mbox") == [[("mm/dmapool_test.c", 1, 0, "")]]


@pytest.mark.parametrize("name", ["gmail-qp.mbox", "gmail-base64.mbox", "quilt-series.mbox", "cvs-diff.mbox", "diff-urnp.mbox"])
def test_what_git_reads_is_not_damaged(name: str) -> None:
    series = fetch.build_series(fetch.read_mbox(DIFFS / name), name)
    parsed = [read_diff(p.diff) for p in series.patches]
    assert [d.damage for d in parsed] == [()] * len(parsed) and all(d.files for d in parsed)


def test_gmail_lost_blank_context_line_is_the_line_git_reads_at_the_end(tmp_path: Path) -> None:
    """The blank last context line is gone from Python's text; git reads the line break before the boundary."""
    series = fetch.build_series(fetch.read_mbox(DIFFS / "gmail-qp.mbox"), "gmail")
    (patch,) = series.patches
    assert patch.diff.endswith(" };\n\n") and "\n\n struct dma_pool {\n" in patch.diff
    # Without that line the hunk is one context line short, which git rejects too.
    assert git_apply(patch.diff[:-1], tmp_path).returncode != 0 and git_apply(patch.diff, tmp_path).returncode == 0
    assert [d.kind for d in read_diff(patch.diff[:-1]).damage] == ["short"]


def test_only_one_lost_line_at_the_very_end_is_added(tmp_path: Path) -> None:
    body = "Msg\n---\n" + HEAD + "@@ -45,4 +45,5 @@\n \tif (!align)\n+\t\tx;\n \t\talign = 1;\n"
    _, diff = split_message(body)  # two context lines short: git rejects it, and so do we
    assert [d.kind for d in read_diff(diff).damage] == ["short"] and git_apply(diff, tmp_path).returncode != 0
    _, diff = split_message(body + "-- \n2.46.0\n")  # one short, but a signature follows: git reads "-- " as a line
    assert [d.kind for d in read_diff(diff).damage] == ["short"]


@pytest.mark.parametrize("diff,kind,path", [
    (HEAD + ONE + "\n" + TWO, "gap", "mm/dmapool.c"),  # a blank line between two hunks
    (HEAD + ONE.replace("+\t\tx;\n", "+\t\tx;\n+\t\ty;\n") + TWO, "excess", "mm/dmapool.c"),  # a line too many, mid-file
    (ONE + HEAD + TWO, "orphan", ""),  # a hunk before any file header
    (HEAD + ONE.replace("\n \t\talign", "\n\t\talign"), "no-space", "mm/dmapool.c"),
    (HEAD + ONE.replace(" \t\talign = 1;\n", "align = 1;\n"), "garbage", "mm/dmapool.c"),
])
def test_damage_git_rejects(diff: str, kind: str, path: str, tmp_path: Path) -> None:
    done = git_apply(diff, tmp_path)
    assert done.returncode != 0 and ("corrupt patch" in done.stderr or "without header" in done.stderr), done.stderr
    parsed = read_diff(diff)
    assert [(d.kind, d.path) for d in parsed.damage] == [(kind, path)]
    assert all(len(d.quote) <= 5 for d in parsed.damage)


def test_text_after_blank_lines_ends_a_short_hunk(tmp_path: Path) -> None:
    """A trailer after the hunk's blank lines: git reads the blanks as context, then fails; the hunk was short."""
    diff = HEAD + "@@ -45,4 +45,5 @@\n \tif (!align)\n+\t\tx;\n \t\talign = 1;\n\nbase-commit: 6bbeb48ebf41\n"
    assert "corrupt patch" in git_apply(diff, tmp_path).stderr
    (d,) = read_diff(diff).damage
    assert (d.kind, d.line) == ("short", 48) and "ends after 2 of its 4 old and 3 of its 5 new lines" in d.why
    assert d.quote == ("@@ -45,4 +45,5 @@", " \tif (!align)", "+\t\tx;", " \t\talign = 1;")


def test_the_hunks_after_the_damage_are_still_read() -> None:
    broken = ONE.replace(" \t\talign = 1;\n", "align = 1;\n")
    parsed = read_diff(HEAD + broken + TWO + HEAD.replace("dmapool.c", "Kconfig") + "@@ -1 +1 @@\n-a\n+b\n")
    assert [(f.path, [h.header for h in f.hunks]) for f in parsed.files] == [
        ("mm/dmapool.c", ["@@ -45,1 +45,2 @@", "@@ -60,2 +61,3 @@"]),  # the damaged hunk cut to the lines read
        ("mm/Kconfig", ["@@ -1,1 +1,1 @@"])]


def test_parse_stage_reports_the_damage_and_reviews_the_rest(tmp_path: Path) -> None:
    result, error = review(ReviewRequest(SourceOptions(target=str(DIFFS / "series-damaged-2of3.mbox"), cwd=tmp_path)))
    assert error is None and result.series is not None
    damaged = [f for f in result.findings if f.rule == "patch-damaged"]
    assert [(f.patch, f.level, f.path, f.line) for f in damaged] == [(2, Level.ERROR, "mm/dmapool.c", 102)]
    assert damaged[0].quote[0].startswith("@@ -95,7 +95,8 @@") and "git send-email" in (damaged[0].hint or "")
    assert [len(p.files) for p in result.series.patches] == [1, 2, 1]
    assert {s.name: s.detail for s in result.stages}["parse"] == "4 files, +8 -3; 1 damaged"
    assert [s.name for s in result.stages][:3] == ["load", "parse", "check"]


def test_parse_stage_warns_of_a_patch_without_a_diff(tmp_path: Path) -> None:
    result, error = review(ReviewRequest(SourceOptions(target=str(DIFFS / "no-hunk-header.mbox"), cwd=tmp_path)))
    assert error is None
    (found,) = [f for f in result.findings if f.rule.startswith("patch-")]
    assert (found.rule, found.level, found.patch) == ("patch-no-diff", Level.WARNING, 1)
    assert found.message == "the patch mail has no diff the tool could parse"
    assert {s.name: s.detail for s in result.stages}["parse"] == "0 files, +0 -0; 1 without a diff"


def test_a_nul_in_a_file_name_is_damage_and_the_file_left_out() -> None:
    """No file name holds a NUL, and none can reach git's command line or open(): the file is left out of the
    patch's files (the checks and the base's guess go by them) and the damage names it as git quotes it."""
    diff = ("diff --git a/mm/dma\0pool.c b/mm/dma\0pool.c\nindex 9d78463..17ce5f9 100644\n--- a/mm/dma\0pool.c\n+++ b/mm/dma\0pool.c\n"
            "@@ -1,1 +1,2 @@\n // x\n+\n"
            "diff --git a/lib/ok.c b/lib/ok.c\nindex 1111111..2222222 100644\n--- a/lib/ok.c\n+++ b/lib/ok.c\n@@ -1,1 +1,2 @@\n x\n+y\n")
    parsed = read_diff(diff)
    assert [f.path for f in parsed.files] == ["lib/ok.c"]
    assert [(d.kind, d.why) for d in parsed.damage] == [
        ("nul-path", "the file name \"mm/dma\\000pool.c\" holds a NUL byte, which no file name can: git reads it as 'mm/dma'")]
