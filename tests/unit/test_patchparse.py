from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reviewer.errors import InputError
from reviewer.model import Change
from reviewer.patchparse import diffstat, parse_diff, split_message
from tests.conftest import git


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
    body = "Why it matters.\n\nSigned-off-by: A <a@example.org>\n---\n k | 1 +\n\ndiff --git a/k b/k\n--- a/k\n+++ b/k\n@@ -0,0 +1 @@\n+x\n-- \n2.46.0\n\n"
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
    return f"diff --git a/big.c b/big.c\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/big.c\n@@ -0,0 +1,{lines} @@\n{body}"


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
    from reviewer.patchparse import notes

    body = ("Why.\n\nSigned-off-by: A <a@example.org>\n---\nv2: use the helper\n\n arch/x/Kconfig | 1 +\n"
            " 1 file changed, 1 insertion(+)\n create mode 100644 x\n\ndiff --git a/x b/x\n")
    assert notes(body) == "v2: use the helper\n"
    assert notes("Why.\n---\n a | 1 +\n 1 file changed, 1 insertion(+)\n\ndiff --git a/a b/a\n") == ""
    assert notes("no cut at all\n") == ""
