"""The output format registry (reviewer/report/formats.py): every format renders through it, one test each,
and --format's choices are the registry's names."""
from __future__ import annotations

import json

import pytest

from reviewer import app
from reviewer.model import Review
from reviewer.report import formats
from reviewer.report import json as json_report
from reviewer.request import ReviewRequest, SourceOptions
from tests.conftest import SERIES

SPDX = SERIES.parent / "rules" / "spdx-header" / "bad" / "wrong-style.mbox"  # one warning: spdx-header/style


@pytest.fixture(scope="module")
def demo() -> Review:
    return app.review(ReviewRequest(SourceOptions(target=str(SPDX), cwd=SPDX.parent))).review


def _terminal(out: str, _review: Review) -> None:
    assert "spdx-header/style" in out and "[warning]" in out
    assert "\x1b[" not in out  # Style(color=False): no colour


def _json(out: str, review: Review) -> None:
    assert out == json_report.dumps(review)
    assert [f["rule"] for f in json.loads(out)["findings"]] == [f.rule for f in review.findings]


def _b4_check(out: str, _review: Review) -> None:
    doc = json.loads(out)
    assert doc[0]["tool"] == "reviewer" and "spdx-header/style" in doc[0]["details"], doc


def _checkpatch(out: str, _review: Review) -> None:
    assert any("spdx-header/style" in line for line in out.splitlines()), out


def _html(out: str, review: Review) -> None:
    from reviewer.report import html

    assert out == html.page(review) and out.startswith("<!DOCTYPE html>") and "spdx-header/style" in out


EXPECT = {"terminal": _terminal, "json": _json, "html": _html, "b4-check": _b4_check, "checkpatch": _checkpatch}


def test_every_format_has_its_test() -> None:
    assert set(EXPECT) == set(formats.FORMATS)
    assert formats.DEFAULT in formats.FORMATS


@pytest.mark.parametrize("name", list(EXPECT))
def test_format_renders_through_the_registry(name: str, demo: Review, capsys: pytest.CaptureFixture[str]) -> None:
    formats.render(name, demo, formats.Style(color=False))
    EXPECT[name](capsys.readouterr().out, demo)


def test_only_b4_formats_read_a_message_and_only_the_terminal_shows_progress() -> None:
    assert [n for n, f in formats.FORMATS.items() if f.reads_message] == ["b4-check", "checkpatch"]
    assert [n for n, f in formats.FORMATS.items() if f.shows_progress] == ["terminal"]
    assert formats.progress("json", color=True) is formats.QUIET


def test_the_cli_choices_are_the_registry() -> None:
    import typer.main

    from reviewer.cli.review import (
        main_command,  # the CLI's --format, as typer built it
        review_app,
    )

    command = typer.main.get_command(review_app)
    option = next(p for p in command.params if p.name == "fmt")
    assert tuple(option.type.choices) == tuple(formats.FORMATS)  # type: ignore[attr-defined]
    assert main_command is not None
