"""Issue 30, item 3: a series whose file names, subject and author name hold a newline, a forged
`Reviewed-by:` with the reviewer's own name, ESC[2J and rich markup, made with git itself
(tests/report/gitseries.py), through the real command: the terminal (coloured or not), the JSON,
the reply (whole and per patch) and b4's two check formats. Nothing is forged, nothing raw."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reviewer.report import escape
from reviewer.tree.plainrepo import build_base_repo
from tests.conftest import FIXTURES
from tests.helpers import Result, review
from tests.report import gitseries

TRAILER = f"Tested-by: {gitseries.REVIEWER}"
SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own colours: the only escape sequences allowed


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("hostile")
    repo = root / "linux"
    build_base_repo(FIXTURES / "kernel-mini", repo)
    (root / "gitconfig").write_text("[user]\n\tname = Rev Iewer\n\temail = rev@example.org\n")
    return repo, gitseries.hostile(repo, root / "hostile.mbox"), root / "gitconfig"


def _run(setup: tuple[Path, Path, Path], tmp: Path, *args: str, stdin: bytes | None = None) -> Result:
    repo, mbox, gitconfig = setup
    target = "-" if stdin is not None else str(mbox)
    res = review(target, "--tree", repo, "--no-tests", *args, cwd=repo, tmp=tmp, stdin=stdin, env={"GIT_CONFIG_GLOBAL": str(gitconfig)})
    assert res.rc in (0, 1), res.stderr
    assert "Traceback" not in res.stderr
    res.assert_nothing_left()
    return res


def test_the_names_reach_every_report(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """The fixture is what it claims: git kept the names whole, and the review has findings naming them."""
    doc = _run(setup, tmp_path, "--format", "json").json()
    paths = {f["path"] for p in doc["patches"] for f in p["files"]}
    assert paths == {gitseries.NEWLINE_NAME, gitseries.ESC_NAME}  # JSON keeps the exact text
    assert {f["path"] for f in doc["findings"]} >= paths


def test_json_has_no_raw_control_character(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    out = _run(setup, tmp_path, "--format", "json").stdout
    assert "\x1b" not in out and "\\u001b[2J" in out and "x\\nReviewed-by" in out
    assert not any(ln.startswith("Reviewed-by") for ln in out.splitlines())


@pytest.mark.parametrize("color", ["--color", "--no-color"])
def test_the_terminal_gets_no_escape_sequence_of_the_series(setup: tuple[Path, Path, Path], tmp_path: Path, color: str) -> None:
    out = _run(setup, tmp_path, color).stdout
    assert "\x1b[2J" not in out and "\x1b" not in SGR.sub("", out), repr(out[:300])
    assert (color == "--no-color") == ("\x1b" not in out)
    assert "e\\033[2Jf.c" in out and not any(ln.lstrip().startswith("Reviewed-by") for ln in out.splitlines())
    assert "[/bold]" in out or "/bold]" in out  # markup in a subject is text, never a style (nor a crash)


def _forged(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if escape.trailer_like(ln) and ln != TRAILER]


def test_the_reply_forges_no_line(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    for args in (("--reply", "-"), ("--reply", "-", "--per-patch"), ("--reply", "-", "--reply-infos")):
        out = _run(setup, tmp_path, *args, "--trailer", TRAILER).stdout
        body = out.split("\n\n", 1)[1]
        assert "\x1b" not in out and "\r" not in out, args
        assert _forged(body) == [] and [ln for ln in body.splitlines() if ln.startswith("Reviewed-by:")] == [], args
        assert body.count(TRAILER) == 1 and "x\\nReviewed-by: Rev" in body, args


def test_b4s_check_formats_forge_no_finding(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    mail = setup[1].read_bytes()
    lines = _run(setup, tmp_path, "--format", "checkpatch", stdin=mail).stdout.splitlines()
    doc = json.loads(_run(setup, tmp_path, "--format", "b4-check", stdin=mail).stdout)
    details = json.loads(doc[0]["details"])
    assert len(lines) == len(details) == 5  # one line per finding: a newline in a name makes no second one
    assert all(ln.startswith(("lib/vdso/", "WARNING: ")) for ln in lines) and "\x1b" not in "".join(lines)
    assert all("\x1b" not in d["description"] and "\n" not in d["description"] for d in details)
