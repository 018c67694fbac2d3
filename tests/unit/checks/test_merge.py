"""reviewer/checks/merge.py: one finding per fact, on findings as the checks and checkpatch give them."""
from __future__ import annotations

from reviewer.checks.merge import EQUIVALENT, merge
from reviewer.model import Finding, Level


def f(rule: str, level: Level = Level.WARNING, patch: int | None = 1, path: str | None = None, line: int | None = None,
      hint: str | None = None, quote: tuple[str, ...] = ()) -> Finding:
    return Finding(rule, level, f"{rule} says so", patch, path, line, hint, quote)


def test_our_spdx_finding_and_checkpatchs_two_are_one() -> None:
    found = merge([f("spdx-header/style", path="x.h", line=1, hint="write /* */", quote=("+// SPDX",)),
                   f("checkpatch/SPDX_LICENSE_TAG", path="x.h", line=1),
                   f("checkpatch/SPDX_LICENSE_TAG", path="x.h", line=1)])
    assert [(x.rule, x.sources, x.hint, x.quote) for x in found] == [
        ("spdx-header/style", ("spdx-header/style", "checkpatch/SPDX_LICENSE_TAG"), "write /* */", ("+// SPDX",))]


def test_the_most_severe_report_is_kept_with_every_source() -> None:
    (one,) = merge([f("author-signoff/name", Level.WARNING), f("checkpatch/FROM_SIGN_OFF_MISMATCH", Level.WARNING),
                    f("checkpatch/NO_AUTHOR_SIGN_OFF", Level.ERROR)])
    assert one.rule == "checkpatch/NO_AUTHOR_SIGN_OFF" and one.level is Level.ERROR
    assert set(one.sources) == {"author-signoff/name", "checkpatch/FROM_SIGN_OFF_MISMATCH", "checkpatch/NO_AUTHOR_SIGN_OFF"}


def test_different_places_and_patches_stay_apart() -> None:
    kept = merge([f("spdx-header/style", path="a.h", line=1), f("checkpatch/SPDX_LICENSE_TAG", path="b.h", line=1),
                  f("checkpatch/TRAILING_WHITESPACE", path="a.c", line=3), f("checkpatch/TRAILING_WHITESPACE", path="a.c", line=9),
                  f("author-signoff", patch=1), f("checkpatch/MISSING_SIGN_OFF", patch=2)])
    assert len(kept) == 6 and all(x.sources == () for x in kept)


def test_unrelated_rules_are_not_merged() -> None:
    assert len(merge([f("subject-format/prefix"), f("checkpatch/MISSING_SIGN_OFF")])) == 2


def test_the_table_names_real_rules_and_says_why() -> None:
    from reviewer.checks import CHECKS

    for same in EQUIVALENT:
        assert same.where in ("line", "patch") and same.why
        for rule in (same.ours, same.theirs):
            assert rule.startswith("checkpatch/") or rule.split("/")[0] in CHECKS, rule
