"""Every bad input: a one-line error, the documented exit code, no traceback, nothing left behind."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from tests.conftest import FIXTURES, SERIES, git
from tests.helpers import review
from tests.unit.series.test_patchparse import huge_diff

BAD = SERIES / "bad"


@pytest.mark.parametrize(
    "path,fragment",
    [
        ("does-not-exist.mbox", "no such file or directory"),
        (BAD / "empty.mbox", "empty input"),
        (BAD / "no-patch.mbox", "no patches found"),
        (BAD / "not-a-patch.eml", "no patches found"),
    ],
    ids=["missing", "empty", "no-patch", "not-a-patch"],
)
def test_unreadable_inputs(path: Path | str, fragment: str, tmp_path: Path) -> None:
    result = review(path, cwd=tmp_path, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, fragment)
    assert result.stdout == ""
    result.assert_nothing_left()


def test_directory_without_patches(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("nothing here\n")
    result = review(tmp_path / "out", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "no *.patch files")


def test_unknown_git_range(kernel_repo: Path, tmp_path: Path) -> None:
    before = git(kernel_repo, "status", "--porcelain"), git(kernel_repo, "rev-parse", "HEAD")
    result = review("-C", kernel_repo, "v9.99..HEAD", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "unknown revision 'v9.99'")
    assert (git(kernel_repo, "status", "--porcelain"), git(kernel_repo, "rev-parse", "HEAD")) == before


def test_empty_git_range(kernel_repo: Path, tmp_path: Path) -> None:
    result = review("-C", kernel_repo, "HEAD..HEAD", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "holds no commits")


def test_missing_revision(tmp_path: Path) -> None:
    result = review(SERIES / "loongarch-vdso-getrandom-v3-v4.mbox", "--revision", "7", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "there is no v7 of this series (found v3, v4)")


def test_message_id_when_lore_is_unreachable(tmp_path: Path) -> None:
    # Never the real lore from a test: a closed loopback port (tests/fetch/ has a real server).
    result = review("20240816110717.10249-1-xry111", "--lore-url", "http://127.0.0.1:9/all/", cwd=tmp_path, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "http://127.0.0.1:9/all/20240816110717.10249-1-xry111/: cannot connect")
    result = review("20240816110717.10249-1-xry111", "--offline", cwd=tmp_path, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "<20240816110717.10249-1-xry111> is not in the cache")


def test_usage_error_is_exit_2(tmp_path: Path) -> None:
    result = review(SERIES / "single-patch.mbox", "--format", "xml", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.USAGE and "Traceback" not in result.stderr


def test_tree_that_is_not_git(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    result = review(SERIES / "single-patch.mbox", "--tree", tmp_path / "plain", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.CONFIG, "not a git repository")
    result.assert_nothing_left()


@pytest.mark.parametrize("name", ["qp.mbox", "base64.mbox", "latin1.mbox", "crlf.mbox"])
def test_encodings_parse(name: str, tmp_path: Path) -> None:
    result = review(FIXTURES / "series" / "encodings" / name, "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    assert doc["patches"][0]["files"] and doc["patches"][0]["added"] > 0
    assert not [f for f in doc["findings"] if f["level"] == "error"]


def test_undeclared_8bit_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    result = review(BAD / "undeclared-8bit.mbox", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    assert [f["rule"] for f in result.json()["findings"]] == ["patch-encoding"]


def test_huge_patch(tmp_path: Path) -> None:
    mail = (
        "From: Big Author <big@example.org>\nSubject: [PATCH] lib: add a big table\n"
        "Message-Id: <huge-1@example.org>\nDate: Fri, 16 Aug 2024 11:07:17 +0800\n\n"
        "A very large generated table.\n\nSigned-off-by: Big Author <big@example.org>\n---\n"
        + huge_diff(50_000)
    )
    (tmp_path / "huge.eml").write_text(mail)
    result = review(tmp_path / "huge.eml", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    assert result.json()["patches"][0]["added"] == 50_000


def test_unknown_build_target(tmp_path: Path) -> None:
    result = review(SERIES / "loongarch-vdso-getrandom-v4.mbox", "--build", "--arch", "x86_64,sparc64", tmp=tmp_path)
    result.assert_one_line_error(ExitStatus.USAGE, "--arch 'x86_64,sparc64': unknown build target sparc64")
    assert "choose from x86_64, ppc64le, ppc32" in result.stderr
