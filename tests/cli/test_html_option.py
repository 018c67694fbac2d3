"""`--format html` and `--html FILE` through the real command (issue 33); the page itself: tests/report/test_html*.py."""
from __future__ import annotations

import json
from pathlib import Path

from reviewer.errors import ExitStatus
from tests.conftest import SERIES
from tests.helpers import review

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
CONCLUSION = "The series misses patch 2/3: it is not in the thread."


def test_format_html_writes_the_page_on_stdout(tmp_path: Path) -> None:
    result = review(SERIES / "missing-2of3.mbox", "--format", "html", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.FINDINGS, result.stderr
    assert result.stdout.startswith("<!DOCTYPE html>") and result.stdout.rstrip().endswith("</html>")
    assert f'<p class="conclusion error" id="conclusion">{CONCLUSION}</p>' in result.stdout
    assert result.stderr == ""
    result.assert_nothing_left()


def test_html_file_beside_another_format(tmp_path: Path) -> None:
    page = tmp_path / "review.html"
    result = review(SERIES / "missing-2of3.mbox", "--format", "json", "--html", page, tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.FINDINGS, result.stderr
    assert json.loads(result.stdout)["series"]["total"] == 3  # stdout is the JSON document alone
    assert result.stderr == f"review: HTML page written to {page}\n"
    assert CONCLUSION in page.read_text(encoding="utf-8")
    result.assert_nothing_left()


def test_html_file_must_be_writable(tmp_path: Path) -> None:
    review(DEMO, "--html", tmp_path, tmp=tmp_path / "tmp").assert_one_line_error(ExitStatus.CONFIG, f"--html {tmp_path}: is a directory")
    missing = tmp_path / "no" / "such" / "page.html"
    review(DEMO, "--html", missing, tmp=tmp_path / "tmp").assert_one_line_error(ExitStatus.CONFIG, f"--html {missing}: cannot write it")
    review(DEMO, "--html", "-", tmp=tmp_path / "tmp").assert_one_line_error(ExitStatus.USAGE, "--html writes a file")
