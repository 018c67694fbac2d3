"""Golden reports: the JSON document, the terminal text and the HTML page for fixed inputs.

Regenerate with `./dev test tests/report --update-golden` and review the diff.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from rich.console import Console

from reviewer.pipeline import review
from reviewer.report import html, terminal
from reviewer.report import json as json_report
from reviewer.request import ReviewRequest, SourceOptions
from tests.conftest import SERIES

GOLDEN = Path(__file__).parent / "golden"
CASES = {"demo-v4": "loongarch-vdso-getrandom-v4.mbox", "missing-2of3": "missing-2of3.mbox", "modes": "modes.mbox"}


def _review(name: str):  # type: ignore[no-untyped-def]
    result, error = review(ReviewRequest(SourceOptions(target=str(SERIES / CASES[name]), cwd=SERIES)))
    assert error is None
    return result


def _stable_json(name: str) -> str:
    doc = json_report.document(_review(name))
    for stage in doc["stages"]:
        stage["seconds"] = 0.0  # timings vary; everything else must not
    doc["series"]["source"] = CASES[name]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _terminal(name: str) -> str:
    console = Console(width=120, record=True, force_terminal=False, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    result = _review(name)
    terminal.render(result, console)
    lines = console.export_text().splitlines()
    return "\n".join(ln.rstrip() for ln in lines if not ln.lstrip().startswith(("load ", "parse ", "check "))) + "\n"


def _compare(path: Path, actual: str, *, update: bool) -> None:
    if update:
        path.write_text(actual)
    assert path.exists(), f"{path} missing: run with --update-golden"
    assert actual == path.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_golden(name: str, request: pytest.FixtureRequest) -> None:
    _compare(GOLDEN / f"{name}.json", _stable_json(name), update=request.config.getoption("--update-golden"))


@pytest.mark.parametrize("name", ["demo-v4", "missing-2of3"])
def test_terminal_golden(name: str, request: pytest.FixtureRequest) -> None:
    _compare(GOLDEN / f"{name}.txt", _terminal(name), update=request.config.getoption("--update-golden"))


def _html(name: str) -> str:
    result = _review(name)
    stages = tuple(dataclasses.replace(st, seconds=0.0) for st in result.stages)  # timings vary; everything else must not
    return html.page(dataclasses.replace(result, stages=stages))


@pytest.mark.parametrize("name", ["demo-v4", "missing-2of3"])
def test_html_golden(name: str, request: pytest.FixtureRequest) -> None:
    _compare(GOLDEN / f"{name}.html", _html(name), update=request.config.getoption("--update-golden"))
