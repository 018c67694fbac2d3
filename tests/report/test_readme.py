"""The example outputs of the README and the manual (docs/) are what the real command prints
today: each block marked `<!-- readme-example: NAME -->`, in whichever of those files it is, is
made again here by running `review` in a subprocess.

What varies from run to run (stage timings, the reply's Date and Message-ID) is masked on both
sides before comparing. `./dev test tests/report --update-golden` rewrites the blocks from the
runs (timings and all); review the diff.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, SERIES
from tests.helpers import review
from tests.report.test_reply import no_select_mbox

README = ROOT / "README.md"
DOCS = (README, *sorted((ROOT / "docs").glob("*.md")))  # where the examples may be
BLOCK = re.compile(r"^<!-- readme-example: (?P<name>[\w-]+) -->\n```\n(?P<body>.*?)^```$", re.M | re.S)
_SECONDS = re.compile(r"(│ +)\d+\.\d\d( │)")  # the terminal's stage table: Seconds column
_VARYING = re.compile(r'^(Date|Message-ID): .*$|("seconds": )[0-9.]+', re.M)


def _terminal_missing(tmp: Path, _repo: Path) -> str:
    target = "fixtures/series/missing-2of3.mbox"
    res = review(target, cwd=ROOT, tmp=tmp / "run")
    out = "".join(line.rstrip() + "\n" for line in res.stdout.splitlines())
    return f"$ review {target}\n{out}$ echo $?\n{res.rc}\n"


def _json_demo(tmp: Path, _repo: Path) -> str:
    target = "fixtures/series/loongarch-vdso-getrandom-v4.mbox"
    res = review(target, "--format", "json", cwd=ROOT, tmp=tmp / "run")
    assert res.rc == 0, res.stderr
    doc = res.json()
    first = doc["patches"][0]
    abridged: dict[str, Any] = {
        **doc,
        "patches": [{**first, "files": first["files"][:1]}],
        "stages": doc["stages"][:1],
        "...": f"patches 2-{len(doc['patches'])}, their files, the other stages, apply (with --tree)",
    }
    return f"$ review {target} --format json\n{json.dumps(abridged, indent=2, ensure_ascii=False)}\n"


def _reply_no_select(tmp: Path, repo: Path) -> str:
    series = no_select_mbox(tmp / "series.mbox")
    (tmp / "gitconfig").write_text("[user]\n\tname = Rev Iewer\n\temail = rev@example.org\n")
    res = review(series, "--tree", repo, "--reply", "-", cwd=tmp, tmp=tmp / "run",
                 env={"GIT_CONFIG_GLOBAL": str(tmp / "gitconfig")})
    assert res.rc == 1, res.stderr  # the finding is an error
    return res.stdout


EXAMPLES: dict[str, Callable[[Path, Path], str]] = {
    "terminal-missing-2of3": _terminal_missing,
    "json-demo": _json_demo,
    "reply-no-select": _reply_no_select,
}


def _masked(text: str) -> str:
    text = _SECONDS.sub(lambda m: f"{m[1]}#.##{m[2]}", text)
    return _VARYING.sub(lambda m: f"{m[2]}#" if m[2] else f"{m[1]}: #", text)


def _marked() -> list[tuple[Path, str, str]]:
    """(file, name, body) of every marked block in README.md and docs/*.md."""
    return [(path, m["name"], m["body"]) for path in DOCS for m in BLOCK.finditer(path.read_text())]


def _blocks() -> dict[str, str]:
    return {name: body for _path, name, body in _marked()}


def test_every_example_is_marked_and_made() -> None:
    assert sorted(name for _path, name, _body in _marked()) == sorted(EXAMPLES)  # each once, in one file
    assert SERIES.joinpath("missing-2of3.mbox").is_file()


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_readme_example(name: str, tmp_path: Path, kernel_repo: Path, request: pytest.FixtureRequest) -> None:
    actual = EXAMPLES[name](tmp_path, kernel_repo)
    if request.config.getoption("--update-golden"):
        path = next(path for path, marked, _body in _marked() if marked == name)
        text = path.read_text()
        match = next(m for m in BLOCK.finditer(text) if m["name"] == name)
        path.write_text(text[: match.start("body")] + actual + text[match.end("body"):])
    assert _masked(_blocks()[name]) == _masked(actual)


def test_the_masks_hide_only_what_varies() -> None:
    assert _masked(" load      │ ok      │    0.08 │ mbox") == " load      │ ok      │    #.## │ mbox"
    assert _masked('"seconds": 0.016,') == '"seconds": #,'
    assert _masked("Date: Tue, 01 Dec 2026 16:58:40 +0000\nSubject: x") == "Date: #\nSubject: x"
    assert _masked(" 1/3 │ x86/vdso │     1 │ +1 │") == " 1/3 │ x86/vdso │     1 │ +1 │"
