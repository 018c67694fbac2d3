from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from reviewer.errors import InputError
from reviewer.model import Change
from reviewer.series import fetch
from reviewer.series.patchparse import ParsedDiff, diffstat, parse_diff, read_diff, split_message
from tests.conftest import FIXTURES, git


def _commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def modes_patch(tmp_path: Path) -> str:
    """A real format-patch that renames, copies, chmods, symlinks, deletes and adds binary."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "old.c").write_text("".join(f"int v{i};\n" for i in range(20)))
    (repo / "keep.h").write_text("".join(f"#define K{i} {i}\n" for i in range(20)))
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "gone.txt").write_text("bye\n")
    _commit_all(repo, "base")
    git(repo, "mv", "old.c", "new.c")
    with (repo / "new.c").open("a") as fh:
        fh.write("int added;\n")
    (repo / "copy.h").write_text((repo / "keep.h").read_text() + "#define EXTRA 1\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "vdso").symlink_to("../../../arch/loongarch/vdso")
    (repo / "gone.txt").unlink()
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02binary\x00")
    _commit_all(repo, "x: everything at once")
    return git(repo, "format-patch", "-1", "-M", "-C", "--find-copies-harder", "--binary", "--stdout")


def test_every_kind_of_change(modes_patch: str) -> None:
    message, diff = split_message(modes_patch)
    files = {f.path: f for f in parse_diff(diff)}
    assert files["new.c"].change is Change.RENAMED and files["new.c"].old_path == "old.c"
    assert (files["new.c"].added, files["new.c"].removed) == (1, 0)
    assert files["copy.h"].change is Change.COPIED and files["copy.h"].old_path == "keep.h"
    assert files["run.sh"].mode_changed and (files["run.sh"].old_mode, files["run.sh"].new_mode) == ("100644", "100755")
    assert files["vdso"].is_symlink and files["vdso"].change is Change.ADDED
    assert files["vdso"].added_lines()[0].text == "../../../arch/loongarch/vdso"
    assert files["gone.txt"].change is Change.DELETED and files["gone.txt"].removed == 1
    assert files["blob.bin"].binary and files["blob.bin"].change is Change.ADDED


def test_line_numbers_and_hunk_headers() -> None:
    diff = (
        "diff --git a/k b/k\nindex 1111111..2222222 100644\n--- a/k\n+++ b/k\n"
        "@@ -10,3 +10,4 @@ config LOONGARCH\n \tselect A\n+\tselect VDSO_GETRANDOM\n \tselect B\n-\tselect C\n+\tselect D\n"
    )
    (f,) = parse_diff(diff)
    (hunk,) = f.hunks
    assert hunk.header == "@@ -10,3 +10,4 @@ config LOONGARCH"
    added = [(ln.new_no, ln.text) for ln in f.added_lines()]
    assert added == [(11, "\tselect VDSO_GETRANDOM"), (13, "\tselect D")]
    assert [(ln.old_no, ln.text) for ln in f.removed_lines()] == [(12, "\tselect C")]


def test_corrupt_hunk_counts_are_an_input_error() -> None:
    diff = "diff --git a/k b/k\n--- a/k\n+++ b/k\n@@ -1,9 +1,10 @@\n a\n+b\n c\n"
    with pytest.raises(InputError, match="patch 2/3: corrupt diff"):
        parse_diff(diff, "patch 2/3")


def test_split_message_drops_diffstat_and_signature() -> None:
    body = ("Why it matters.\n\nSigned-off-by: A <a@example.org>\n---\n k | 1 +\n\n"
            "diff --git a/k b/k\n--- a/k\n+++ b/k\n@@ -0,0 +1 @@\n+x\n-- \n2.46.0\n\n")
    message, diff = split_message(body)
    assert message == "Why it matters.\n\nSigned-off-by: A <a@example.org>\n"
    assert diff.endswith("+x\n")


def test_crlf_is_normalised() -> None:
    body = "Msg\r\n---\r\ndiff --git a/k b/k\r\n--- a/k\r\n+++ b/k\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n"
    _, diff = split_message(body)
    (f,) = parse_diff(diff)
    assert (f.added, f.removed) == (1, 1) and f.added_lines()[0].text == "b"


def huge_diff(lines: int) -> str:
    body = "".join(f"+int v{i} = {i};\n" for i in range(lines))
    return ("diff --git a/big.c b/big.c\nnew file mode 100644\nindex 0000000..1111111\n"
            f"--- /dev/null\n+++ b/big.c\n@@ -0,0 +1,{lines} @@\n{body}")


def test_huge_patch_parses_completely() -> None:
    # Its speed is measured by bench/parse_huge.py, not asserted here.
    (f,) = parse_diff(huge_diff(50_000))
    assert diffstat((f,)) == (1, 50_000, 0)
    assert f.added_lines()[-1].new_no == 50_000


def test_diffstat_matches_git_apply_numstat(modes_patch: str, tmp_path: Path) -> None:
    _, diff = split_message(modes_patch)
    numstat = numstat_of(modes_patch, tmp_path)
    assert [(f.added, f.removed) if not f.binary else None for f in parse_diff(diff)] == numstat


def numstat_of(patch: str, cwd: Path) -> list[tuple[int, int] | None]:
    """`git apply --numstat` per file, in order; None for a binary file."""
    out = subprocess.run(["git", "apply", "--numstat", "-"], input=patch, text=True, capture_output=True, check=True, cwd=cwd).stdout
    rows: list[tuple[int, int] | None] = []
    for line in out.splitlines():
        add, rem, _ = line.split("\t", 2)
        rows.append(None if add == "-" else (int(add), int(rem)))
    return rows


def test_notes_below_the_cut_without_the_diffstat() -> None:
    from reviewer.series.patchparse import notes

    body = ("Why.\n\nSigned-off-by: A <a@example.org>\n---\nv2: use the helper\n\n arch/x/Kconfig | 1 +\n"
            " 1 file changed, 1 insertion(+)\n create mode 100644 x\n\ndiff --git a/x b/x\n")
    assert notes(body) == "v2: use the helper\n"
    assert notes("Why.\n---\n a | 1 +\n 1 file changed, 1 insertion(+)\n\ndiff --git a/a b/a\n") == ""
    assert notes("no cut at all\n") == ""


# --- quilt, CVS and diff -u diffs, named and counted as git names and counts them --------------

DIFFS = FIXTURES / "mail" / "diffs"


def git_view(mbox: Path, tmp: Path) -> list[list[tuple[str, int, int, str]] | str]:
    """What git makes of each patch mail in MBOX (cover letters left out): git mailsplit, git mailinfo,
    then `git apply --numstat --summary`: (path, added, removed, created|deleted|"") per file, or git's error."""
    out = tmp / "split"
    out.mkdir(exist_ok=True)
    subprocess.run(["git", "mailsplit", f"-o{out}", str(mbox)], check=True, capture_output=True)
    views: list[list[tuple[str, int, int, str]] | str] = []
    for mail in sorted(out.iterdir()):
        patch = tmp / f"{mail.name}.diff"
        with mail.open("rb") as fh:
            subprocess.run(["git", "mailinfo", str(tmp / "msg"), str(patch)], stdin=fh, check=True, capture_output=True, cwd=tmp)
        if not patch.read_text().strip():
            continue  # a cover letter
        done = subprocess.run(["git", "apply", "--numstat", "--summary", str(patch)], capture_output=True, text=True, cwd=tmp)
        views.append(_rows(done.stdout) if done.returncode == 0 else done.stderr.strip())
    return views


def _rows(out: str) -> list[tuple[str, int, int, str]]:
    how = {m[2]: m[1] + "d" for m in re.finditer(r"(?m)^ (create|delete)(?: mode \d+)? (.+)$", out)}
    return [(path, int(a), int(r), how.get(path, "")) for a, r, path in (ln.split("\t", 2) for ln in out.splitlines() if "\t" in ln)]


def our_view(mbox: Path) -> list[list[tuple[str, int, int, str]]]:
    series = fetch.build_series(fetch.read_mbox(mbox), str(mbox))
    kind = {Change.ADDED: "created", Change.DELETED: "deleted"}
    return [[(f.path, f.added, f.removed, kind.get(f.change, "")) for f in read_diff(p.diff).files] for p in series.patches]


@pytest.mark.parametrize("name", ["quilt-series.mbox", "cvs-diff.mbox", "diff-urnp.mbox", "diff-up-orig.mbox", "gmail-qp.mbox"])
def test_other_diff_formats_read_as_git_reads_them(name: str, tmp_path: Path) -> None:
    ours, gits = our_view(DIFFS / name), git_view(DIFFS / name, tmp_path)
    assert ours == gits and all(rows for rows in ours), (ours, gits)


def test_quilt_paths_lose_their_first_component() -> None:
    assert our_view(DIFFS / "quilt-series.mbox") == [
        [("mm/dmapool.c", 2, 0, "")], [("mm/dmapool.c", 3, 0, ""), ("mm/dmapool_trace.h", 9, 0, "created")]]
    # And the CVS diff made at the top of the tree loses its directory, as with git apply -p1.
    assert our_view(DIFFS / "cvs-diff.mbox") == [[("dmapool.c", 3, 0, "")]]


def test_quilt_and_cvs_mails_split_where_git_mailinfo_splits(tmp_path: Path) -> None:
    for name, last_line in (("cvs-diff.mbox", "Signed-off-by: Cvs Veteran <cvs.veteran@example.org>"),
                            ("quilt-series.mbox", "Signed-off-by: Quilt User <quilt.user@example.org>")):
        split = tmp_path / name
        split.mkdir()
        subprocess.run(["git", "mailsplit", f"-o{split}", str(DIFFS / name)], check=True, capture_output=True)
        with sorted(split.iterdir())[-1].open("rb") as fh:
            subprocess.run(["git", "mailinfo", str(split / "msg"), str(split / "patch")], stdin=fh, check=True, capture_output=True)
        series = fetch.build_series(fetch.read_mbox(DIFFS / name), name)
        message, diff = series.patches[-1].message, series.patches[-1].diff
        assert message.rstrip("\n").endswith(last_line) and "Index:" not in message, message
        assert message.strip() == (split / "msg").read_text().strip(), name
        assert diff.startswith("Index: ") and "\n--- " in diff


def test_gmail_base64_reads_as_b4_am_then_git_am_read_it(tmp_path: Path) -> None:
    """Raw git am refuses it (CRLF inside base64); b4 am re-encodes the text, and git am applies that."""
    mbox = DIFFS / "gmail-base64.mbox"
    (raw := tmp_path / "raw").mkdir()
    assert git_view(mbox, raw) == ["error: corrupt patch at line 10"]
    b4 = Path(sys.executable).parent / "b4"
    subprocess.run([str(b4), "am", "-m", str(mbox), "-o", str(tmp_path), "-n", "b4out"], check=True, capture_output=True, timeout=120)
    assert our_view(mbox) == git_view(tmp_path / "b4out.mbx", tmp_path) == [[("mm/dmapool.c", 2, 2, "")]]


@pytest.mark.parametrize("name", ["quilt-series.mbox", "diff-urnp.mbox", "gmail-qp.mbox"])
def test_git_am_applies_them_to_the_base_with_our_diffstat(name: str, kernel_repo: Path, tmp_path: Path) -> None:
    split = tmp_path / "split"
    split.mkdir()
    subprocess.run(["git", "mailsplit", f"-o{split}", str(DIFFS / name)], check=True, capture_output=True)
    mails = [m for m in sorted(split.iterdir()) if "diff" in m.read_text() or "\n--- " in m.read_text()]
    base = git(kernel_repo, "rev-parse", "HEAD").strip()
    git(kernel_repo, "am", "-q", *map(str, mails))
    commits = git(kernel_repo, "rev-list", "--reverse", f"{base}..HEAD").split()
    numstats = [git(kernel_repo, "show", "--numstat", "--format=", c).split("\n") for c in commits]
    applied = [[(p, int(a), int(r)) for a, r, p in (ln.split("\t") for ln in lines if ln)] for lines in numstats]
    assert applied == [[row[:3] for row in rows] for rows in our_view(DIFFS / name)]


# The first name git gives each (--- line, +++ line) pair of a traditional diff; verified against
# `git apply --numstat --summary` in the test below.
TRADITIONAL = [
    ("linux.orig/mm/dmapool.c", "linux/mm/dmapool.c", "mm/dmapool.c", ""),
    ("linux-6.11.orig/mm/x.c\t2024-08-27 10:00:00.000000000 +0200", "linux-6.11/mm/x.c\t2024-08-27 11:00:00.000000000 +0200", "mm/x.c", ""),
    ("mm/dmapool.c.orig", "mm/dmapool.c", "dmapool.c", ""),
    ("dmapool.c.orig", "dmapool.c", "dmapool.c", ""),
    ("a/mm/x.c", "b/mm/x.c~", "mm/x.c", ""),
    ("a/mm/x.c.orig", "b/mm/x.c", "mm/x.c", ""),
    ("mm/x.c\t27 Aug 2024 08:40:00 -0000\t1.1.1.1", "mm/x.c\t27 Aug 2024 09:15:42 -0000", "x.c", ""),
    ("/dev/null", "linux/mm/new.c", "mm/new.c", "created"),
    ("linux.orig/mm/gone.c", "/dev/null", "mm/gone.c", "deleted"),
    ("a/mm/new.c\t1970-01-01 01:00:00.000000000 +0100", "b/mm/new.c\t2024-08-27 11:00:00.000000000 +0200", "mm/new.c", "created"),
    ("a/mm/gone.c\t2024-08-27 11:00:00.000000000 +0200", "b/mm/gone.c\t1969-12-31 19:00:00.000000000 -0500", "mm/gone.c", "deleted"),
    ("/usr/src/linux.orig/mm/x.c", "/usr/src/linux/mm/x.c", "usr/src/linux/mm/x.c", ""),
    ("linux.orig/mm/new.c", "linux/mm/new.c", "mm/new.c", "created"),  # only its -0,0 hunk says so
    ("linux.orig/mm/gone.c", "linux/mm/gone.c", "mm/gone.c", "deleted"),
]


@pytest.mark.parametrize("first,second,path,how", TRADITIONAL)
def test_traditional_names_are_gits(first: str, second: str, path: str, how: str, tmp_path: Path) -> None:
    if how == "created":
        hunk = "@@ -0,0 +1,2 @@\n+a\n+b\n"
    elif how == "deleted":
        hunk = "@@ -1,2 +0,0 @@\n-a\n-b\n"
    else:
        hunk = "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    diff = f"--- {first}\n+++ {second}\n{hunk}"
    (patch := tmp_path / "p.diff").write_text(diff)
    done = subprocess.run(["git", "apply", "--numstat", "--summary", str(patch)], capture_output=True, text=True, check=True, cwd=tmp_path)
    (f,) = read_diff(diff).files
    ours = (f.path, f.added, f.removed, {Change.ADDED: "created", Change.DELETED: "deleted"}.get(f.change, ""))
    assert [ours] == _rows(done.stdout)
    assert ours[0] == path and ours[3] == how


def test_git_guesses_p0_once_for_the_whole_patch(tmp_path: Path) -> None:
    """Names without a directory make git apply -p0 for every later file of the same patch too."""
    diff = ("--- x.c.orig\n+++ x.c\n@@ -1 +1 @@\n-a\n+b\n"
            "--- a/mm/y.c.orig\n+++ b/mm/y.c\n@@ -1 +1 @@\n-a\n+b\n")
    (patch := tmp_path / "p.diff").write_text(diff)
    done = subprocess.run(["git", "apply", "--numstat", str(patch)], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert [f.path for f in read_diff(diff).files] == [r[0] for r in _rows(done.stdout)] == ["x.c", "b/mm/y.c"]


def test_a_header_without_hunks_is_no_diff_as_for_git(tmp_path: Path) -> None:
    for diff in ("diff --git a/mm/dmapool.c b/mm/dmapool.c\n",
                 "--- linux.orig/mm/dmapool.c\n+++ linux/mm/dmapool.c\n-\t\talign = 1;\n+\t\talign = 8;\n"):
        (patch := tmp_path / "p.diff").write_text(diff)
        done = subprocess.run(["git", "apply", "--numstat", str(patch)], capture_output=True, text=True, cwd=tmp_path)
        assert "No valid patches in input" in done.stderr
        assert read_diff(diff) == ParsedDiff(())
    message, diff = split_message((DIFFS / "no-hunk-header.mbox").read_text().split("\n\n", 1)[1])
    assert message.endswith("Signed-off-by: New Comer <new.comer@example.org>\n") and diff.startswith("--- linux.orig/")
    assert read_diff(diff) == ParsedDiff(())


# --- git's quoted file names (core.quotePath) ---------------------------------------------------

QUOTED_NAMES = ["dir/über.c", "sp ace.c", 'qu"ote.c', "back\\slash.c", "tab\there.c", "日本.h"]


@pytest.fixture
def quoted_patch(tmp_path: Path) -> tuple[Path, str]:
    """A real format-patch (core.quotePath=true, git's default) that adds, modifies, renames and deletes
    files whose names git quotes: non-ASCII bytes as octal, a quote, a backslash, a tab; and a space."""
    repo = tmp_path / "q"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "dir").mkdir()
    for i, name in enumerate(QUOTED_NAMES):
        (repo / name).write_text("".join(f"line {i}.{n}\n" for n in range(8)))
    (repo / "plain.c").write_text("x\n")
    _commit_all(repo, "base")
    with (repo / "dir/über.c").open("a") as fh:
        fh.write("one more\n")
    git(repo, "mv", "sp ace.c", "dir/ä b.c")
    git(repo, "mv", 'qu"ote.c', "dir/ö.c")
    (repo / "dir/ö.c").write_text((repo / "dir/ö.c").read_text().replace("line 2.3", "line two.3"))
    (repo / "back\\slash.c").unlink()
    (repo / "neu-ß.c").write_text("new\n")
    _commit_all(repo, "quoted names")
    patch = git(repo, "-c", "core.quotePath=true", "format-patch", "-1", "-M", "--stdout")
    assert '"a/dir/\\303\\274ber.c"' in patch and 'rename from "qu\\"ote.c"' in patch  # git did quote them
    return repo, patch


def test_quoted_names_are_the_names_git_means(quoted_patch: tuple[Path, str]) -> None:
    """Every path as `git diff --name-status -z` (NUL-separated, never quoted) names it."""
    repo, patch = quoted_patch
    fields = git(repo, "diff", "--name-status", "-z", "-M", "HEAD~1", "HEAD").split("\0")
    want, i = set(), 0
    while i < len(fields) - 1:
        status = fields[i][0]
        if status in "RC":
            want.add((status, fields[i + 1], fields[i + 2]))
            i += 3
        else:
            want.add((status, None if status == "A" else fields[i + 1], None if status == "D" else fields[i + 1]))
            i += 2
    letter = {Change.ADDED: "A", Change.DELETED: "D", Change.MODIFIED: "M", Change.RENAMED: "R", Change.COPIED: "C"}
    got = {(letter[f.change], f.old_path, None if f.change is Change.DELETED else f.path) for f in parse_diff(split_message(patch)[1])}
    assert got == want
    assert not any("\\" in p and p != "back\\slash.c" for f in parse_diff(split_message(patch)[1]) for p in (f.path, f.old_path) if p)


def test_quoted_names_count_as_git_apply_counts(quoted_patch: tuple[Path, str], tmp_path: Path) -> None:
    """`git apply --numstat -z`: the same files (unquoted), the same counts; also for the traditional
    `--- "a/..."` form of the same diff (no `diff --git` header), which git apply unquotes too."""
    repo, patch = quoted_patch
    diff = split_message(patch)[1]
    assert _numstat_z(diff, tmp_path) == {f.path: (f.added, f.removed) for f in parse_diff(diff)}
    sections = [s for s in re.split(r"(?m)^(?=diff --git )", diff) if s.startswith("diff --git ") and "\n--- \"a/" in s]
    traditional = "".join(s[s.index("\n--- ") + 1 :] for s in sections if "\n+++ \"b/" in s)
    assert traditional.count("\n+++ ") >= 2
    assert _numstat_z(traditional, tmp_path) == {f.path: (f.added, f.removed) for f in parse_diff(traditional)}


def _numstat_z(diff: str, cwd: Path) -> dict[str, tuple[int, int]]:
    out = subprocess.run(["git", "apply", "--numstat", "-z", "-"], input=diff.encode(), capture_output=True, check=True, cwd=cwd).stdout
    rows: dict[str, tuple[int, int]] = {}
    fields = out.decode().split("\0")
    i = 0
    while i < len(fields) - 1:
        add, rem, path = fields[i].split("\t", 2)
        if path:  # a plain entry; a rename is "add\trem\t" then the old and the new name
            rows[path] = (int(add), int(rem))
            i += 1
        else:
            rows[fields[i + 2]] = (int(add), int(rem))
            i += 3
    return rows


def test_a_failed_apply_names_the_file_and_hunk_unquoted(quoted_patch: tuple[Path, str], tmp_path: Path) -> None:
    """git's apply errors name the file unquoted (`error: patch failed: dir/über.c:1`): the report finds
    the hunk of that file, and every report (JSON, terminal, reply) shows the name as it is."""
    from reviewer.pipeline import review
    from reviewer.report import email as reply_mail
    from reviewer.report import json as json_report
    from reviewer.request import CheckOptions, ReviewRequest, SelftestOptions, SourceOptions

    repo, patch = quoted_patch
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    (repo / "dir/über.c").write_text((repo / "dir/über.c").read_text().replace("line 0.7", "line seven"))
    _commit_all(repo, "a conflicting change")
    (mbox := tmp_path / "quoted.mbox").write_text(patch)
    result, error = review(ReviewRequest(SourceOptions(target=str(mbox), cwd=tmp_path, tree=repo),
                                         checks=CheckOptions(checkpatch=False),
                                         selftests=SelftestOptions(no_tests=True)))
    assert error is not None and error.status == 5, error
    assert result.series is not None
    hunk = next((h for f in result.series.patches[0].files if f.path == "dir/über.c" for h in f.hunks), None)
    assert hunk is not None and f"dir/über.c: hunk {hunk.header} does not apply" in error.message, error.message
    doc = json_report.dumps(result)
    assert "dir/über.c" in doc or "dir/\\u00fcber.c" in doc
    assert "\\\\303" not in doc and "\\303" not in doc
    mail = reply_mail.as_bytes(reply_mail.reply(result, reply_mail.ReplyOptions("R <r@example.org>"))).decode()
    assert "\\303" not in mail
