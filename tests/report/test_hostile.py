"""Issue 30, item 3: a series whose file names, subject and author name hold a newline, a forged
`Reviewed-by:` with the reviewer's own name, ESC[2J and rich markup, made with git itself
(tests/report/gitseries.py), through the real command: the terminal (coloured or not), the JSON,
the reply (whole and per patch) and b4's two check formats. Nothing is forged, nothing raw."""
from __future__ import annotations

import dataclasses
import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from reviewer.model import Review
from reviewer.report import email as reply_mail
from reviewer.report import escape, terminal
from reviewer.report import json as json_report
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


# The stages' own outputs carry text the series controls too: a test's output (its reason), a compiler's
# lines (a build step's detail, a finding's message and quote), a selftest's name; and the thread's
# Message-ID. Set on a real review of the hostile series, every medium is checked again.
HOSTILE = f"bad\x1b[2J\x1b]0;title\x07\n{gitseries.FORGED}"


def _with_stage_outputs(result: Review) -> Review:
    from reviewer.ktap import Result as KtapResult
    from reviewer.model import BuiltStep, BuiltTarget, Finding, Level, TestRun

    assert result.series is not None
    runs = tuple(TestRun(f"vDSO:{HOSTILE}", tree, "plain", KtapResult.FAIL, 0.1, reason=HOSTILE) for tree in ("base", "patched"))
    build = BuiltTarget("x86_64", "ARCH=x86", (BuiltStep(0, "built"), BuiltStep(1, "failed", detail=f"lib/vdso/e.c:2:1: error: {HOSTILE}")))
    compiler = Finding("build/error", Level.ERROR, f"patch 1/1 does not build for x86_64: {HOSTILE}", 1, "lib/vdso/Makefile",
                       quote=(f"lib/vdso/e.c:2:1: error: {HOSTILE}", "    2 | int x;"))
    series = dataclasses.replace(result.series, msgid=f"id{HOSTILE}@example.org")
    return dataclasses.replace(result, series=series, selftests=runs, builds=(build,), findings=(*result.findings, compiler))


def test_stage_outputs_and_ids_reach_no_medium_raw(setup: tuple[Path, Path, Path]) -> None:
    from tests.report.test_reply_properties import body, check_all, reviewed

    result = _with_stage_outputs(reviewed(setup[1], setup[0]))
    out = io.StringIO()
    terminal.render(result, Console(file=out, width=250, force_terminal=True, color_system="truecolor"))
    shown = out.getvalue()
    assert "\x1b" not in SGR.sub("", shown) and "\x07" not in shown and "bad\\033[2J\\033]0;title\\a\\nReviewed-by" in shown
    check_all(result)  # the reply's rules, the terminal's order and conclusion
    text = body(reply_mail.reply(result, reply_mail.ReplyOptions(gitseries.REVIEWER, trailers=(TRAILER,))))
    assert _forged(text) == [] and "\x1b" not in text and "\x07" not in text
    assert "patch 1/1 does not build for x86_64: bad\\033[2J" in " ".join(text.split())
    assert json.loads(json_report.dumps(result))["selftests"][0]["reason"] == HOSTILE and "\x1b" not in json_report.dumps(result)
