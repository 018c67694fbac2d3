"""reviewer.app: a whole review through the application function, as a bot calls it (no typer, no
printing, no exit); a failure is a ReviewerError, a stage that stopped a readable review is its error."""
from __future__ import annotations

import json
import mailbox
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reviewer import app
from reviewer.errors import ApplyError, ExitStatus, InputError, UsageError
from reviewer.model import Level, StageStatus
from reviewer.request import CheckOptions, ReviewRequest, SelftestOptions, SourceOptions
from tests.conftest import ROOT, SERIES, git

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"

# The bundled demo (reviewer/demo.py: its series and a fresh git repository of its tree), reviewed through
# app.review in a fresh interpreter: typer is never imported, nothing is printed on stdout but ours.
_WHOLE = """
import json, sys
from reviewer import app, demo
from reviewer.request import ReviewRequest, SelftestOptions, SourceOptions

with demo.prepared() as (mbox, tree):
    done = app.review(ReviewRequest(SourceOptions(target=str(mbox), cwd=mbox.parent, tree=tree),
                                    selftests=SelftestOptions(no_tests=True)))
r = done.review
print(json.dumps({"typer": "typer" in sys.modules, "error": done.error is not None, "status": int(done.status()),
                  "stages": {s.name: str(s.status) for s in r.stages}, "applied": [p.status for p in r.apply.patches],
                  "findings": sorted([f.rule, str(f.level), f.patch] for f in r.findings), "subject": r.series.subject}))
"""


def test_a_whole_review_of_the_demo_without_typer(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _WHOLE], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["typer"] is False
    assert got["error"] is False and got["status"] == ExitStatus.OK
    assert got["subject"] == "LoongArch: vDSO: Wire up getrandom() vDSO implementation"
    assert got["stages"] == {"load": "ok", "parse": "ok", "check": "ok", "apply": "ok", "build": "skipped",
                             "selftests": "skipped", "boot": "skipped"}
    assert got["applied"] == ["applied"] * 4
    assert ["subject-format/length", "info", 3] in got["findings"]
    assert not [f for f in got["findings"] if f[1] == "error"]


def test_the_app_imports_no_typer() -> None:
    code = "import sys, reviewer.app, reviewer.report.formats, reviewer.report.outgoing; print('typer' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "False"


def test_a_review_without_a_tree_is_the_series_checked(tmp_path: Path) -> None:
    done = app.review(ReviewRequest(SourceOptions(target=str(DEMO), cwd=tmp_path)))
    assert done.error is None and done.status() is ExitStatus.OK
    assert done.review.series is not None and len(done.review.series.patches) == 4
    assert [(f.rule, f.level, f.patch) for f in done.review.findings] == [
        ("subject-format/length", Level.INFO, 3), ("kconfig-symbol-exists/unverified", Level.INFO, None)]
    assert [s.status for s in done.review.stages][3:] == [StageStatus.SKIPPED] * 4


def test_strict_fails_on_warnings_only(tmp_path: Path) -> None:
    spdx = SERIES.parent / "rules" / "spdx-header" / "bad" / "wrong-style.mbox"
    done = app.review(ReviewRequest(SourceOptions(target=str(spdx), cwd=tmp_path)))
    levels = {f.level for f in done.review.findings}
    assert Level.WARNING in levels and Level.ERROR not in levels
    assert done.status() is ExitStatus.OK and done.status(strict=True) is ExitStatus.FINDINGS


def test_a_target_that_cannot_be_read_raises(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        app.review(ReviewRequest(SourceOptions(target=str(tmp_path / "nothing.mbox"), cwd=tmp_path)))


def test_no_target_and_no_prep_branch_is_a_usage_error(kernel_repo: Path) -> None:
    with pytest.raises(UsageError, match="not a b4 prep branch"):
        app.review(ReviewRequest(SourceOptions(cwd=kernel_repo)))


def test_a_range_without_a_tree_is_reviewed_in_the_tree_it_is_in(kernel_repo: Path) -> None:
    (kernel_repo / "Makefile").write_text((kernel_repo / "Makefile").read_text() + "# a change\n")
    git(kernel_repo, "commit", "-qam", "kbuild: a comment\n\nSigned-off-by: A U Thor <author@example.com>")
    done = app.review(ReviewRequest(SourceOptions(target="HEAD~1..HEAD", cwd=kernel_repo), CheckOptions(checkpatch=False),
                                    SelftestOptions(no_tests=True)))
    load = next(s for s in done.review.stages if s.name == "load")
    assert "the kernel tree the range is in" in load.detail
    assert next(s for s in done.review.stages if s.name == "apply").status is StageStatus.OK


def test_a_series_that_does_not_apply_is_reported_with_its_error(kernel_repo: Path, tmp_path: Path) -> None:
    (kernel_repo / "arch" / "loongarch" / "Kconfig").write_text("config LOONGARCH\n\tbool\n")
    git(kernel_repo, "commit", "-qam", "conflict")
    done = app.review(ReviewRequest(SourceOptions(target=str(DEMO), cwd=tmp_path, tree=kernel_repo, base="HEAD"),
                                    CheckOptions(checkpatch=False), SelftestOptions(no_tests=True)))
    assert isinstance(done.error, ApplyError) and done.status() is ExitStatus.APPLY
    assert done.review.series is not None and done.review.apply is not None and done.review.apply.failed is not None


def test_b4_check_narrows_the_findings_to_the_message(tmp_path: Path) -> None:
    third = next(m for m in mailbox.mbox(DEMO) if "v4 3/4]" in str(m["Subject"])).as_bytes()
    done = app.b4_check(ReviewRequest(SourceOptions(target="-", cwd=tmp_path)), third)
    assert ("subject-format/length", 3) in [(f.rule, f.patch) for f in done.review.findings]
    assert {f.patch for f in done.review.findings} == {3}


def test_b4_check_of_nothing_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="empty input"):
        app.b4_check(ReviewRequest(SourceOptions(target="-", cwd=tmp_path)), b"\n")
