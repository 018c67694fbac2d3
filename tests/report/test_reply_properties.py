"""Issue 30, item 2, over every fixture series the tests can review (and two made with git: one
that does not apply, one with hostile names): each reply, per-patch reply and terminal report
keeps the rules of tests/report/properties.py."""
from __future__ import annotations

import email
import email.policy
from pathlib import Path

import pytest
from rich.console import Console

from reviewer.model import Review
from reviewer.pipeline import review
from reviewer.report import email as reply_mail
from reviewer.report import terminal
from reviewer.request import ReviewRequest, SelftestOptions, SourceOptions
from reviewer.tree.plainrepo import build_base_repo
from tests.conftest import FIXTURES, SERIES
from tests.report import gitseries
from tests.report.properties import check_reply, check_terminal

FILES = sorted([*SERIES.glob("*.mbox"), SERIES / "bad" / "corrupt-hunk.mbox", SERIES / "bad" / "undeclared-8bit.mbox",
                *SERIES.glob("encodings/*.mbox"), *FIXTURES.glob("rules/*/*/*.mbox")])
MADE = ("made/not-applying", "made/hostile")
FIXTURE_BASE = (FIXTURES / "base-commit.txt").read_text().strip()
OPTS = reply_mail.ReplyOptions("Rev Iewer <rev@example.org>", trailers=("Tested-by: Rev Iewer <rev@example.org>",),
                               signature="reviewer (test)")


def _name(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("base") / "linux"
    build_base_repo(FIXTURES / "kernel-mini", repo)
    return repo


@pytest.fixture(scope="module")
def made(base: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("made")
    return {"made/not-applying": gitseries.not_applying(base, out / "not-applying.mbox"),
            "made/hostile": gitseries.hostile(base, out / "hostile.mbox")}


def reviewed(target: Path, tree: Path) -> Review:
    result, error = review(ReviewRequest(SourceOptions(target=str(target), cwd=target.parent, tree=tree),
                                         selftests=SelftestOptions(no_tests=True)))
    assert result.series is not None, error
    return result


def body(msg: email.message.EmailMessage) -> str:
    parsed = email.message_from_bytes(reply_mail.as_bytes(msg), policy=email.policy.default)
    return parsed.get_body().get_content()  # type: ignore[union-attr,no-any-return]


def check_all(result: Review) -> str:
    """Every output of RESULT checked; the reply's text back."""
    text = body(reply_mail.reply(result, OPTS))
    check_reply(result, text, trailers=OPTS.trailers)
    with_infos = body(reply_mail.reply(result, reply_mail.ReplyOptions(OPTS.sender, infos=True)))
    check_reply(result, with_infos, infos=True)
    for msg in reply_mail.per_patch(result, OPTS):
        check_reply(result, body(msg), trailers=OPTS.trailers, per_patch=True)
    console = Console(width=200, record=True, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    terminal.render(result, console)
    check_terminal(result, console.export_text(), text)
    return text


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_every_fixture_series(path: Path, base: Path) -> None:
    check_all(reviewed(path, base))


@pytest.mark.parametrize("name", MADE)
def test_series_made_with_git(name: str, base: Path, made: dict[str, Path]) -> None:
    check_all(reviewed(made[name], base))


def test_a_series_that_does_not_apply_says_so_first(base: Path, made: dict[str, Path]) -> None:
    text = check_all(reviewed(made["made/not-applying"], base))
    paragraphs = text.split("\n\n")
    assert paragraphs[1] == f"The series does not apply to {FIXTURE_BASE[:12]}: patch 2/3 fails on\n{gitseries.LDS}."
    assert paragraphs[3] == "The hunk of 2/3 that git could not place:"  # right after the greeting, conclusion and intro
    assert "> -\t\t__vdso_getrandom_v2;\n> +\t\t__vdso_getrandom_v3;\n" in paragraphs[4]
    assert paragraphs[5] == "git am -3 said:" and f"    CONFLICT (content): Merge conflict in {gitseries.LDS}" in paragraphs[6]


def test_the_series_missing_the_export_leads_with_that_error(base: Path) -> None:
    result = reviewed(FIXTURES / "rules/vdso-getrandom-new-arch/bad/no-lds-export.mbox", base)
    paragraphs = check_all(result).split("\n\n")
    assert paragraphs[1].startswith("One error: ") and "__vdso_getrandom" in paragraphs[1]
    assert paragraphs[3] == "Error in [1/2] LoongArch: vDSO: Wire up getrandom() vDSO implementation"
    assert paragraphs[4].startswith("> diff --git a/arch/loongarch/vdso/vdso.lds.S ") or "__vdso_getrandom" in paragraphs[4]


# Each kind of conclusion, on the input that gives it: the property tests above are worth what their inputs hold.
KINDS = {"series/missing-2of3.mbox": "The series misses patch 2/3: it is not in the thread.",
         "rules/vdso-getrandom-new-arch/bad/no-kconfig-select.mbox": "One error: ",
         "rules/spdx-header/bad/wrong-style.mbox": "No errors; one warning: ",
         "series/loongarch-vdso-getrandom-v4.mbox": f"No errors or warnings: the series applies to {FIXTURE_BASE[:12]}."}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_kind_of_conclusion(name: str, base: Path) -> None:
    assert check_all(reviewed(FIXTURES / name, base)).split("\n\n")[1].startswith(KINDS[name])
