"""What a kernel developer expects of the command: a thread piped on stdin, RFC kept, finding paths that are paths
and never patterns, a --tree that is no kernel tree named, -h and --version, NO_COLOR, and a git range inside a
kernel tree reviewed against that tree. Each through the real `review`."""
from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from reviewer.errors import ExitStatus
from reviewer.report import email as reply_mail
from reviewer.series import fetch
from tests.conftest import FIXTURES, ROOT, SERIES, git
from tests.helpers import Result, review

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
DEMO_PATCHES = sorted((FIXTURES / "format-patch" / "loongarch-vdso-getrandom-v4").glob("v4-000[1-9]-*.patch"))
SGR_COLOUR = re.compile(rb"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|9[0-7]|38;[0-9;]+)m")  # a foreground colour, not bold or dim


def _json(res: Result, rc: int = ExitStatus.OK) -> dict[str, Any]:
    assert res.rc == rc, res.stderr
    doc: dict[str, Any] = res.json()
    return doc


# --- a thread on standard input ------------------------------------------------------------------------------

def _what_was_reviewed(doc: dict[str, Any]) -> tuple[Any, ...]:
    series = {k: v for k, v in doc["series"].items() if k != "source"}
    return series, doc["patches"], doc["findings"]


@pytest.mark.parametrize(("name", "rc"), [("missing-2of3.mbox", ExitStatus.FINDINGS), ("dmapool-v1-v2.mbox", ExitStatus.OK),
                                          ("loongarch-vdso-getrandom-v4.mbox", ExitStatus.OK)])
def test_an_mbox_on_stdin_is_reviewed_as_the_thread(name: str, rc: int, tmp_path: Path) -> None:
    """`b4 mbox -o - ID | review -` (tests/fetch/test_b4_settings.py pipes real b4): was "no patches found"."""
    piped = review("-", "--format", "json", stdin=(SERIES / name).read_bytes(), tmp=tmp_path / "t1")
    doc = _json(piped, rc)
    assert doc["stages"][0]["detail"].startswith("stdin: ") and doc["series"]["source"] == "-"
    assert _what_was_reviewed(doc) == _what_was_reviewed(_json(review(SERIES / name, "--format", "json", tmp=tmp_path / "t2"), rc))
    piped.assert_nothing_left()


def test_one_mail_on_stdin_still_works(tmp_path: Path, kernel_repo: Path) -> None:
    as_saved = (SERIES / "single-patch.mbox").read_bytes()
    assert as_saved.startswith(b"From ")
    for n, mail in enumerate((as_saved, as_saved.split(b"\n", 1)[1])):  # with its `From ` line, and as a mail client saves it
        doc = _json(review("-", "--format", "json", stdin=mail, tmp=tmp_path / f"t{n}"))
        assert [p["subject"] for p in doc["patches"]] == ["mm/dmapool: Document the free list head"], doc["patches"]
    checked = review("--format", "b4-check", "-", stdin=as_saved.split(b"\n", 1)[1], cwd=kernel_repo, tmp=tmp_path / "t3")
    assert checked.rc == ExitStatus.OK and [r["status"] for r in json.loads(checked.stdout)] == ["pass"], checked.stderr


def test_empty_stdin_is_named(tmp_path: Path) -> None:
    review("-", stdin=b"", tmp=tmp_path / "t").assert_one_line_error(ExitStatus.FETCH, "-: empty input, no mail in it")


# --- RFC -----------------------------------------------------------------------------------------------------

def _as_rfc(dest: Path, prefix: str) -> Path:
    """The demo thread sent as an RFC: `[PATCH v4 ...]` -> `[<PREFIX> v4 ...]` in every subject."""
    dest.write_text(DEMO.read_text().replace("[PATCH v4", f"[{prefix} v4"))
    return dest


@pytest.mark.parametrize("prefix", ["RFC PATCH", "PATCH RFC"])
def test_rfc_is_kept_in_the_json_the_header_and_the_reply(prefix: str, tmp_path: Path) -> None:
    mbox = _as_rfc(tmp_path / "rfc.mbox", prefix)
    assert _json(review(mbox, "--format", "json", tmp=tmp_path / "t1"))["series"]["rfc"] is True
    assert _json(review(DEMO, "--format", "json", tmp=tmp_path / "t2"))["series"]["rfc"] is False
    shown = review(mbox, tmp=tmp_path / "t3")
    assert re.search(r"^Series +\[RFC PATCH v4\] LoongArch: vDSO: Wire up getrandom\(\) vDSO implementation", shown.stdout,
                     re.M), shown.stdout
    subprocess.run(["git", "config", "--global", "user.email", "rev@example.org"], check=True)  # the reply's sender
    reply = review(mbox, "--reply", "-", tmp=tmp_path / "t4")
    assert re.search(rf"^Subject: Re: \[{prefix} v4 0/4\] LoongArch", reply.stdout, re.M), reply.stdout


def test_a_rebuilt_reply_subject_keeps_rfc(tmp_path: Path) -> None:
    """When the subject as sent is not known, the reply's is rebuilt as git format-patch --rfc writes it."""
    mbox = _as_rfc(tmp_path / "rfc.mbox", "PATCH RFC")
    series = fetch.build_series(fetch.read_mbox(mbox), str(mbox))
    assert series.rfc
    subject = reply_mail.subject_line(series, 0, series.subject)
    assert subject == "Re: [RFC PATCH v4 0/4] LoongArch: vDSO: Wire up getrandom() vDSO implementation"
    assert reply_mail.subject_line(series, 2, "x", series.patches[1].mail_subject) == "Re: [PATCH RFC v4 2/4] " + series.patches[1].subject


# --- finding paths are paths -----------------------------------------------------------------------------------

REGEX = re.compile(r"[*?^$|(){}\[\]\\]")  # what a pattern has and a path (almost) never does
INPUTS = [*sorted(FIXTURES.rglob("*.mbox")), *sorted(p for p in (FIXTURES / "format-patch").iterdir() if p.is_dir())]
# One process runs the real command on every input: 2 x 117 starts of a subprocess would take minutes.
DRIVER = """
import contextlib, io, json, sys
from reviewer.cli import main
for target in sys.argv[2:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = main([target, "--format", "json", "--no-tests", *json.loads(sys.argv[1])])
    print(json.dumps({"target": target, "rc": rc, "doc": json.loads(out.getvalue()) if out.getvalue().strip() else None}))
"""


def _every_fixture(extra: list[str], tmp: Path) -> list[dict[str, Any]]:
    tmp.mkdir()
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(extra), *map(str, INPUTS)], capture_output=True, text=True,
                          timeout=900, cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp), "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def _pattern_paths(run: dict[str, Any]) -> list[str]:
    doc = run["doc"]
    real = {f[k] for p in doc["patches"] for f in p["files"] for k in ("path", "old_path") if f[k]}
    return [f"{f['rule']}: {f['path']}" for f in doc["findings"] if f["path"] and f["path"] not in real and REGEX.search(f["path"])]


def test_no_finding_of_any_fixture_names_a_pattern_as_its_file(tmp_path: Path, kernel_repo: Path) -> None:
    """The file the rule matched, or the directory it looked in (was: `arch/loongarch/.*vdso[^/]*\\.lds\\.S`)."""
    runs = _every_fixture([], tmp_path / "alone") + _every_fixture(["--tree", str(kernel_repo)], tmp_path / "tree")
    reviewed = [r for r in runs if r["doc"] is not None and r["doc"]["series"] is not None]
    assert len(reviewed) > 200, [r["target"] for r in runs if r not in reviewed]
    assert {r["target"]: found for r in reviewed if (found := _pattern_paths(r))} == {}
    by_rule = {(Path(r["target"]).name, bool(r["doc"]["apply"]), f["rule"]): f["path"] for r in reviewed for f in r["doc"]["findings"]}
    # The requirements whose path is a pattern: the file the base has, else the directory looked in, else none.
    assert by_rule[("no-lds-export.mbox", False, "vdso-getrandom-new-arch/lds-export")] == "arch/loongarch/"
    assert by_rule[("no-selftest-enable.mbox", False, "vdso-getrandom-new-arch/selftest-enable")] == "tools/testing/selftests/vDSO/"
    assert by_rule[("no-selftest-enable.mbox", True, "vdso-getrandom-new-arch/selftest-enable")] == "tools/testing/selftests/vDSO/Makefile"
    assert by_rule[("no-table-entry.mbox", False, "syscall-wiring/table")] == "scripts/syscall.tbl"  # the table the series touched


# --- a --tree that is not a kernel tree ------------------------------------------------------------------------

def test_a_tree_that_is_not_a_kernel_tree_is_named(tmp_path: Path, kernel_repo: Path) -> None:
    """Was: a false "tools/testing/selftests/vDSO has no Makefile" error, and never a word about the tree."""
    plain = tmp_path / "project"
    plain.mkdir()
    git(plain, "init", "-q")
    (plain / "README").write_text("not a kernel\n")
    git(plain, "add", "README")
    git(plain, "commit", "-q", "-m", "start")
    res = review(DEMO, "--tree", plain, tmp=tmp_path / "t1")
    res.assert_one_line_error(ExitStatus.CONFIG, f"--tree {plain}: not a kernel tree: no Makefile, MAINTAINERS or arch/ at its top")
    assert "has no Makefile" not in res.stdout + res.stderr
    res.assert_nothing_left()
    (plain / "Makefile").write_text("all:\n")
    refused = review(DEMO, "--tree", plain, tmp=tmp_path / "t2")
    refused.assert_one_line_error(ExitStatus.CONFIG, "not a kernel tree: no MAINTAINERS or arch/ at its top")

    inside = review(DEMO, "--tree", kernel_repo / "arch", tmp=tmp_path / "t3")
    inside.assert_one_line_error(ExitStatus.CONFIG, f"--tree {kernel_repo / 'arch'}: not a kernel tree")
    assert inside.stderr.splitlines()[1] == f"hint: that is a directory inside a kernel tree: give its top, --tree {kernel_repo}"

    bare = tmp_path / "linux.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(kernel_repo), str(bare)], check=True)
    for tree in (kernel_repo, bare):  # the kernel-shaped fixture is one, and so is its bare clone
        assert _json(review(DEMO, "--tree", tree, "--no-tests", "--format", "json", tmp=tmp_path / "t4"))["apply"] is not None


# --- -h, --version ---------------------------------------------------------------------------------------------

def test_h_is_help_and_version_prints_the_version(tmp_path: Path) -> None:
    short, long = review("-h", tmp=tmp_path / "t"), review("--help", tmp=tmp_path / "t")
    assert (short.rc, short.stdout) == (0, long.stdout) and "Usage: review [OPTIONS] [TARGET]" in short.stdout
    rules = review("rules", "-h", tmp=tmp_path / "t")
    assert rules.rc == 0 and "Usage: review rules [OPTIONS]" in rules.stdout
    version = review("--version", tmp=tmp_path / "t")
    assert (version.rc, version.stdout, version.stderr) == (0, f"review {metadata.version('reviewer')}\n", "")


# --- NO_COLOR ---------------------------------------------------------------------------------------------------

def _on_a_terminal(args: list[str], no_color: str | None, tmp: Path, *, stdout_too: bool = True) -> tuple[bytes, bytes]:
    """Run review with stderr (and stdout) on a pseudo-terminal; return what each showed."""
    # PAGER=cat: a report taller than the terminal is not held in a pager waiting for a key.
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"TERM": "xterm-256color", "COLUMNS": "150", "TMPDIR": str(tmp),
                                                                       "PAGER": "cat"}
    if no_color is not None:
        env["NO_COLOR"] = no_color
    tmp.mkdir(exist_ok=True)
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "reviewer", *args], stdin=subprocess.DEVNULL, stderr=follower, env=env,
                            stdout=follower if stdout_too else subprocess.PIPE)
    os.close(follower)
    shown, deadline = b"", time.monotonic() + 300
    while select.select([leader], [], [], max(0.0, deadline - time.monotonic()))[0]:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's last writer has gone
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    if proc.poll() is None and time.monotonic() >= deadline:
        proc.kill()
    out = proc.stdout.read() if proc.stdout else b""
    assert proc.wait(timeout=300) in (0, 1), shown
    return shown, out


def test_no_color_turns_colour_off_unless_color_forces_it(tmp_path: Path) -> None:
    args = [str(SERIES / "missing-2of3.mbox")]
    assert SGR_COLOUR.search(_on_a_terminal(args, None, tmp_path / "t")[0])  # the control: the report is coloured
    assert SGR_COLOUR.search(_on_a_terminal(args, "", tmp_path / "t")[0])  # empty: not set (https://no-color.org)
    plain = _on_a_terminal(args, "1", tmp_path / "t")[0]
    assert b"patch 2/3 is missing from the thread" in plain and not SGR_COLOUR.search(plain), plain
    assert SGR_COLOUR.search(_on_a_terminal([*args, "--color"], "1", tmp_path / "t")[0])


def test_no_color_reaches_the_progress_display(tmp_path: Path, kernel_repo: Path) -> None:
    args = [str(DEMO), "--tree", str(kernel_repo), "--tests", "vDSO:vdso_test_gettimeofday"]
    coloured, _ = _on_a_terminal(args, None, tmp_path / "t", stdout_too=False)
    plain, report = _on_a_terminal(args, "1", tmp_path / "t", stdout_too=False)
    assert b"selftests [" in coloured and SGR_COLOUR.search(coloured), coloured
    assert b"selftests [" in plain and not SGR_COLOUR.search(plain), plain
    assert b"vdso_test_gettimeofday" in report and b"\x1b[" not in report  # the report itself went to a pipe


# --- a git range inside a kernel tree --------------------------------------------------------------------------

def test_a_git_range_inside_a_kernel_tree_is_reviewed_against_it(tmp_path: Path, kernel_repo: Path) -> None:
    """Was: no tree, so no apply and every base check "unverified"."""
    base = git(kernel_repo, "rev-parse", "HEAD").strip()
    git(kernel_repo, "am", "-q", *map(str, DEMO_PATCHES))
    note = f"; --tree {kernel_repo}: the kernel tree the range is in"
    for where in (("HEAD~4..",), ("-C", str(kernel_repo / "arch" / "loongarch"), "HEAD~4..")):
        doc = _json(review(*where, "--format", "json", cwd=kernel_repo, tmp=tmp_path / "t1"))
        assert doc["stages"][0]["detail"] == f"range: v1, 4 of 4 patches{note}"
        assert doc["apply"]["base"] == base and [p["status"] for p in doc["apply"]["patches"]] == ["applied"] * 4
        assert not any(f["message"].startswith("unverified:") for f in doc["findings"]), doc["findings"]
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(kernel_repo), str(other)], check=True)
    named = _json(review("HEAD~4..", "--tree", other, "--format", "json", cwd=kernel_repo, tmp=tmp_path / "t2"))
    assert named["stages"][0]["detail"] == "range: v1, 4 of 4 patches" and named["apply"] is not None  # --tree wins, no note


def test_a_git_range_outside_a_kernel_tree_has_no_tree(tmp_path: Path) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q")
    for n in range(2):
        (repo / "file.c").write_text(f"int x = {n};\n")
        git(repo, "add", "file.c")
        git(repo, "commit", "-q", "-s", "-m", f"file: Set x to {n}\n\nSo that x is {n}.")
    doc = _json(review("HEAD~1..", "--format", "json", cwd=repo, tmp=tmp_path / "t"))
    assert doc["stages"][0]["detail"] == "range: v1, 1 of 1 patches" and doc["apply"] is None
    assert [s["detail"] for s in doc["stages"] if s["name"] == "apply"] == ["no kernel tree given (--tree)"]
