"""Real b4 (the pinned 0.16.0) drives our check commands: `b4 prep --check`, and b4 review's check runner."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from reviewer.errors import ExitStatus
from tests.cli.test_hook import patches
from tests.conftest import git
from tests.helpers import review
from tests.report.test_reply import no_select_mbox

B4 = Path(sys.executable).parent / "b4"
CMD = f"{shlex.quote(sys.executable)} -m reviewer"
KCONFIG = "arch/loongarch/Kconfig does not select VDSO_GETRANDOM"


def _identity(repo: Path) -> None:
    git(repo, "config", "user.name", "Test Runner")
    git(repo, "config", "user.email", "runner@example.org")  # b4 prep finds its cover commit by committer


def test_b4_prep_check(tmp_path: Path, kernel_repo: Path) -> None:
    _identity(kernel_repo)
    subprocess.run([str(B4), "prep", "-n", "vdso", "-f", "master"], cwd=kernel_repo, check=True, capture_output=True, timeout=120)
    git(kernel_repo, "am", "-q", *map(str, patches(tmp_path / "bad", drop_select=True)))
    git(kernel_repo, "config", "b4.prep-perpatch-check-cmd", f"{CMD} --format checkpatch --tree . -")
    done = subprocess.run([str(B4), "prep", "--check"], cwd=kernel_repo, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert f"python: arch/loongarch/Kconfig: ERROR: {KCONFIG}" in out, out  # b4 prefixes the command name
    assert "Success: 3, Warning: 0, Error: 1" in out, out

    # The same branch reviewed directly: no TARGET inside a b4 prep branch, cover letter and base recognised.
    direct = review("--format", "json", "--tree", kernel_repo, cwd=kernel_repo, tmp=tmp_path / "tmp")
    assert direct.rc == ExitStatus.FINDINGS, direct.stderr
    doc = direct.json()
    assert doc["series"]["cover"] is not None and doc["series"]["total"] == 4
    assert doc["apply"]["base"] == git(kernel_repo, "rev-parse", "master").strip()
    assert any(f["rule"] == "vdso-getrandom-new-arch/kconfig-select" for f in doc["findings"])
    direct.assert_nothing_left()


def _b4_review_checks(repo: Path, mbox: Path, env: dict[str, str]) -> tuple[dict[str, list[dict[str, str]]], list[dict[str, str]]]:
    """Run our command the way `b4 review` does (b4.review.checks), per patch and on the cover letter."""
    import b4.review.checks as checks

    from reviewer.series import fetch

    msgs = [m for m in fetch.read_mbox(mbox) if not str(m["Subject"]).startswith("Re:")]  # b4 feeds patches, not replies
    ids = [(str(m["Message-Id"]).strip("<>"), m) for m in msgs]
    cmd = f"{CMD} --format b4-check --tree {shlex.quote(str(repo))} -"
    per = checks.run_perpatch_checks(ids[1:], [cmd], str(repo), extra_env=env)
    series = checks.run_series_checks(ids[0], [cmd], str(repo), extra_env=env)
    return per, series


def test_b4_review_check_protocol(tmp_path: Path, kernel_repo: Path) -> None:
    mbox = no_select_mbox(tmp_path / "no-select.mbox")
    blob = subprocess.run(["git", "-C", str(kernel_repo), "hash-object", "-w", str(mbox)], check=True, capture_output=True,
                          text=True).stdout.strip()
    tracking = tmp_path / "tracking.json"
    tracking.write_text(json.dumps({"series": {"thread-blob": blob}}))
    per, series = _b4_review_checks(kernel_repo, mbox, {"B4_TRACKING_FILE": str(tracking)})
    first, *others = per.values()
    assert [r["tool"] for r in first] == ["reviewer"]
    assert first[0]["status"] == "fail" and first[0]["summary"] == "1 error"
    details = json.loads(first[0]["details"])
    assert details[0]["status"] == "fail" and KCONFIG in details[0]["description"]
    assert all(r[0]["status"] == "pass" for r in others), [r[0].get("details") for r in others]
    assert series[0]["tool"] == "reviewer" and series[0]["status"] == "fail"


def _single(tmp_path: Path) -> Path:
    """One patch mail, as b4 passes it on stdin (no mbox From line), whose one finding is a warning (SPDX style)."""
    single = tmp_path / "p.eml"
    text = (Path(__file__).resolve().parents[2] / "fixtures" / "rules" / "spdx-header" / "bad" / "wrong-style.mbox").read_text()
    single.write_text(text.split("\n", 1)[1])
    return single


def test_b4_check_strict_fails_on_a_warning(tmp_path: Path) -> None:
    """--strict makes a warning fail: in the exit status and in the status b4 shows (it once said "warn")."""
    single = _single(tmp_path)
    lax = review("--format", "b4-check", "-", stdin=single.read_bytes(), cwd=tmp_path, tmp=tmp_path / "tmp")
    strict = review("--format", "b4-check", "--strict", "-", stdin=single.read_bytes(), cwd=tmp_path, tmp=tmp_path / "tmp")
    assert (lax.rc, json.loads(lax.stdout)[0]["status"]) == (ExitStatus.OK, "warn"), lax.stdout
    assert (strict.rc, json.loads(strict.stdout)[0]["status"]) == (ExitStatus.FINDINGS, "fail"), strict.stdout
    assert json.loads(strict.stdout)[0]["summary"] == json.loads(lax.stdout)[0]["summary"] == "1 warning"


def test_b4_check_message_alone(tmp_path: Path) -> None:
    """Without b4's thread, a single patch is judged alone; bad input is one line and exit 4."""
    single = _single(tmp_path)
    result = review("--format", "b4-check", "-", stdin=single.read_bytes(), cwd=tmp_path, tmp=tmp_path / "tmp")
    doc = json.loads(result.stdout)
    assert doc[0]["tool"] == "reviewer" and doc[0]["status"] in ("warn", "fail"), doc
    assert "spdx-header/style" in doc[0]["details"]
    lines = review("--format", "checkpatch", "-", stdin=single.read_bytes(), cwd=tmp_path, tmp=tmp_path / "tmp")
    assert any("spdx-header/style" in ln and ("ERROR:" in ln or "WARNING:" in ln) for ln in lines.stdout.splitlines()), lines.stdout
    result = review("--format", "b4-check", "-", stdin=b"", cwd=tmp_path, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "empty input")
    review("--format", "b4-check", "x.mbox", cwd=tmp_path, tmp=tmp_path / "tmp").assert_one_line_error(ExitStatus.USAGE, "give - as TARGET")
    review(cwd=tmp_path, tmp=tmp_path / "tmp").assert_one_line_error(ExitStatus.USAGE, "not a b4 prep branch")
