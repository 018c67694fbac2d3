"""Every rule and check against its fixtures: fixtures/rules/<id>/{good,bad}/*.mbox.

A bad fixture yields exactly the findings its `expect:` lines name (every rule and check is
run, so a fixture that trips something else fails too); a good fixture yields none of its
rule. The base is a fresh git repository of fixtures/kernel-mini, as the pipeline's --tree.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from reviewer.checks import CHECKS, run_checks
from reviewer.model import Finding, Level, Series
from reviewer.rules import RULES_DIR, Rule, evaluate, load_rules
from reviewer.series import fetch
from reviewer.series.patchparse import parse_diff
from reviewer.tree.base import GitBaseTree
from reviewer.tree.plainrepo import build_base_repo, git
from tests.conftest import FIXTURES, SERIES

RULE_FIXTURES = FIXTURES / "rules"
CASES = sorted(RULE_FIXTURES.glob("*/*/*.mbox"))
EXPECT = re.compile(r"^expect: (\S+)$", re.MULTILINE)


def load(path: Path) -> Series:
    series = fetch.build_series(fetch.read_mbox(path), str(path))
    patches = tuple(replace(p, files=parse_diff(p.diff, f"patch {p.index}")) for p in series.patches)
    return replace(series, patches=patches)


@pytest.fixture(scope="module")
def rules() -> tuple[Rule, ...]:
    return load_rules(RULES_DIR)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> GitBaseTree:
    repo = tmp_path_factory.mktemp("base") / "linux"
    build_base_repo(FIXTURES / "kernel-mini", repo)
    return GitBaseTree(repo, git(repo, "rev-parse", "HEAD").strip())


def review(series: Series, rules: tuple[Rule, ...], base: GitBaseTree | None) -> list[Finding]:
    return [*run_checks(series, base), *evaluate(rules, series, base)]


def _id(path: Path) -> str:
    return str(path.relative_to(RULE_FIXTURES).with_suffix(""))


@pytest.mark.parametrize("path", CASES, ids=_id)
def test_fixture(path: Path, rules: tuple[Rule, ...], base: GitBaseTree) -> None:
    rule, kind = path.parts[-3], path.parts[-2]
    found = review(load(path), rules, base)
    expect = EXPECT.findall(path.read_text())
    if kind == "bad":
        assert expect, f"{path}: a bad fixture needs expect: lines"
        assert Counter(f.rule for f in found) == Counter(expect), found
    else:
        assert not expect
        assert [f for f in found if f.rule.split("/")[0] == rule] == []
        assert [f for f in found if f.level is not Level.INFO] == []


def test_every_rule_and_check_has_good_and_bad_fixtures(rules: tuple[Rule, ...]) -> None:
    # A rule with no [[require]] only chooses tests (overflow-kunit): it has no findings to show.
    ids = {r.id for r in rules if r.requires} | set(CHECKS) - {"series-complete", "patch-encoding"}  # those two: fixtures/series
    for rule in sorted(ids):
        for kind in ("good", "bad"):
            assert list((RULE_FIXTURES / rule / kind).glob("*.mbox")), f"{rule} has no {kind} fixture"


def test_demo_has_no_error_or_warning(rules: tuple[Rule, ...], base: GitBaseTree) -> None:
    demo = load(SERIES / "loongarch-vdso-getrandom-v4.mbox")
    assert [f for f in review(demo, rules, base) if f.level is not Level.INFO] == []
    # Without a tree only `unverified` infos may appear; the long 3/4 subject is an info too.
    assert {f.rule for f in review(demo, rules, None)} <= {"kconfig-symbol-exists/unverified", "subject-format/length"}
