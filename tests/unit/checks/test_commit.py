"""The commit-message checks on Series/Patch objects built here: author-signoff (decided as
checkpatch.pl decides, see tests/realkernel/test_checkpatch_oracle.py for the comparison with it),
fixes-tag (every `Fixes:` line of the trailer block, malformed or abbreviated) and subject-format."""
from __future__ import annotations

from dataclasses import replace
from typing import cast

import pytest

from reviewer.checks import CHECKS
from reviewer.checks._address import Address, parse, reformat, without_subaddress
from reviewer.model import Level, Patch, Person, Series, Trailer
from reviewer.tree.base import BaseTree

JANE = Person("Jane Doe", "jane@example.org")


def _series(*trailers: tuple[str, str], author: Person = JANE, subject: str = "mm: Fix a leak",
            followups: tuple[tuple[str, str], ...] = ()) -> Series:
    own = tuple(Trailer(name, value, "patch") for name, value in trailers)
    replies = tuple(Trailer(name, value, "followup", "r@x") for name, value in followups)
    message = "Body.\n\n" + "".join(f"{n}: {v}\n" for n, v in trailers)
    patch = Patch(1, 1, subject, "m@x", author, None, message, "", trailers=own + replies)
    return Series(subject, 1, "m@x", author, None, 1, (patch,))


def _found(check: str, series: Series, base: object = None) -> list[tuple[str, Level]]:
    return [(f.rule, f.level) for f in CHECKS[check].findings(series, cast(BaseTree | None, base))]


def _messages(check: str, series: Series, base: object = None) -> list[str]:
    return [f.message for f in CHECKS[check].findings(series, cast(BaseTree | None, base))]


# --------------------------------------------------------------------------- author-signoff

SOB = "Signed-off-by"


@pytest.mark.parametrize(("signoff", "rule", "level", "differs"), [
    ("Jane Doe <jane+lkml@example.org>", "author-signoff/subaddress", Level.WARNING, "the address's +tag"),
    ("Jane Doe <jane@corp.example.com>", "author-signoff/address", Level.WARNING, "the address"),
    ("Jane Roe <jane@example.org>", "author-signoff/name", Level.WARNING, "the name"),
    ("jane doe <jane@example.org>", "author-signoff/name", Level.WARNING, "the name"),  # names are compared as written
    ("Jane Doe <Jane@Example.org>", "author-signoff/comment", Level.INFO, "the address's case"),
    ("Jane Doe <jane@example.org> [rebased]", "author-signoff/comment", Level.INFO, "the comment after the address"),
    ("Jane (ACME) Doe <jane@example.org>", "author-signoff/comment", Level.INFO, "the name's comment"),
])
def test_a_near_signoff_says_what_differs(signoff: str, rule: str, level: Level, differs: str) -> None:
    series = _series((SOB, signoff))
    assert _found("author-signoff", series) == [(rule, level)]
    (message,) = _messages("author-signoff", series)
    assert message == f"the author's Signed-off-by `{signoff}` differs from From: `Jane Doe <jane@example.org>` in {differs}"


def test_the_authors_own_signoff_as_checkpatch_reads_names_and_addresses() -> None:
    for own in ("Jane Doe <jane@example.org>", "  Jane Doe <jane@example.org>  ", '"Jane Doe" <jane@example.org>'):
        assert _found("author-signoff", _series(("Cc", "x@y"), (SOB, "Max Maintainer <max@example.org>"), (SOB, own))) == []
    commented = _series()  # `Signed-off-by: Jane Doe <jane@example.org> # 6.1`: the trailer reader keeps `# 6.1` apart
    patch = replace(commented.patches[0], trailers=(Trailer(SOB, "Jane Doe <jane@example.org>", "patch", comment="# 6.1"),))
    assert _found("author-signoff", replace(commented, patches=(patch,))) == []
    author = Person("Doe, Jane", "jane+kernel@example.org")
    assert _found("author-signoff", _series((SOB, '"Doe, Jane" <jane+kernel@example.org>'), author=author)) == []
    assert _found("author-signoff", _series((SOB, "Doe, Jane <jane+kernel@example.org>"), author=author)) == []
    assert _found("author-signoff", _series((SOB, '"Doe, Jane" <jane@example.org>'), author=author)) == [
        ("author-signoff/subaddress", Level.WARNING)]


def test_no_signoff_by_the_author_is_an_error() -> None:
    cases = {
        (): "no Signed-off-by at all",
        ("Max Maintainer <max@example.org>",): "no Signed-off-by from the author Jane Doe <jane@example.org>",
        # checkpatch drops a +tag only when the names match: another name and a tagged address is someone else
        ("Jane Roe <jane+lkml@example.org>",): "no Signed-off-by from the author Jane Doe <jane@example.org>",
    }
    for signoffs, message in cases.items():
        series = _series(*((SOB, s) for s in signoffs))
        assert _found("author-signoff", series) == [("author-signoff", Level.ERROR)]
        assert _messages("author-signoff", series) == [message]


def test_a_reply_signoff_is_not_the_authors_and_the_tag_is_case_blind() -> None:
    assert _found("author-signoff", _series(followups=((SOB, "Jane Doe <jane@example.org>"),))) == [("author-signoff", Level.ERROR)]
    assert _found("author-signoff", _series(("signed-off-by", "Jane Doe <jane@example.org>"))) == []


def test_the_last_near_signoff_counts_and_an_exact_one_wins() -> None:
    near = ((SOB, "Jane Doe <jd@corp.example.com>"), (SOB, "J. Doe <jane@example.org>"))
    assert _found("author-signoff", _series(*near)) == [("author-signoff/name", Level.WARNING)]
    assert _found("author-signoff", _series(*near[::-1])) == [("author-signoff/address", Level.WARNING)]
    assert _found("author-signoff", _series(*near, (SOB, "Jane Doe <jane@example.org>"))) == []


def test_an_author_without_a_name_as_b4_gives_it() -> None:
    bare = Person("jane@example.org", "jane@example.org")  # b4 fills an empty From: name with the address
    assert _found("author-signoff", _series((SOB, "jane@example.org"), author=bare)) == []
    assert _found("author-signoff", _series((SOB, "Jane Doe <jane@example.org>"), author=bare)) == [("author-signoff/name", Level.WARNING)]


def test_addresses_split_as_checkpatch_splits_them() -> None:
    assert parse("Jane (ACME) Doe <jane@example.org> # stable") == Address("Jane Doe", "(ACME)", "jane@example.org", "# stable")
    assert parse('"Doe, Jane (Kernel)" <j@x>') == Address('"Doe, Jane (Kernel)"', "", "j@x", "")  # quoted: kept whole
    assert parse("Jane (a (b) c) Doe <j@x>") == Address("Jane Doe", "(a (b) c)", "j@x", "")  # nested parentheses
    assert parse("Jane (unclosed Doe <j@x>") == Address('"Jane (unclosed Doe"', "", "j@x", "")
    assert parse("<j@x> (ACME)") == Address("", "", "j@x", "(ACME)")
    assert parse("j@x") == Address("", "", "j@x", "")
    assert parse("joe smith joe@smith.com") == Address("", "", "", "")  # a name without angle brackets: no address at all
    assert reformat('"Doe, Jane" <jane@example.org.>') == Address('"Doe, Jane"', "", "jane@example.org", "")
    assert without_subaddress("jane+a+b@example.org") == "jane+a@example.org"  # the last +tag only, as checkpatch
    assert without_subaddress("jane@example.org") == "jane@example.org"


# --------------------------------------------------------------------------- fixes-tag

SHA = "6bbeb48ebf412bd3"[:12]


class Tree:
    """A base tree that knows one commit."""

    def __init__(self, subject: str) -> None:
        self.subject = subject

    def commit_subject(self, rev: str) -> str | None:
        return self.subject if SHA.startswith(rev[:12]) else None


@pytest.mark.parametrize(("value", "why"), [
    (f'commit {SHA} ("Linux 6.11-rc3")', "`commit` before the id"),
    (f"commit {SHA}", "`commit` before the id"),
    (f'{SHA.upper()} ("Linux 6.11-rc3")', "an id in upper-case hex"),
    ("https://bugzilla.kernel.org/show_bug.cgi?id=219000", "a URL, not a commit id"),
    ("?", "no commit id"),
    ("", "no commit id"),
    ('6bbeb48 ("Linux 6.11-rc3")', "an id of 7 hex digits (12 to 40)"),
    (SHA, 'no ("subject") after the id'),
    (f"{SHA} (Linux 6.11-rc3)", 'the subject is not written ("<subject>"), one space after the id'),
    (f'{SHA}("Linux 6.11-rc3")', 'the subject is not written ("<subject>"), one space after the id'),
    (f'{SHA} ("Linux 6.11-rc3") # v6.11', 'text after the ("subject")'),
    (f'{SHA} ("...")', 'an empty ("subject")'),
    (f'{SHA} ("Linux\n 6.11-rc3")', "wrapped over lines"),
])
def test_every_malformed_fixes_line_is_a_format_error(value: str, why: str) -> None:
    series = _series(("Fixes", value), (SOB, "Jane Doe <jane@example.org>"))
    assert _found("fixes-tag", series) == [("fixes-tag/format", Level.ERROR)]
    (message,) = _messages("fixes-tag", series)
    assert message.startswith(f"malformed Fixes: tag `{value.strip()}`: {why}")


def test_fixes_in_another_case_is_a_format_error() -> None:
    series = _series(("fixes", f'{SHA} ("Linux 6.11-rc3")'))
    assert _found("fixes-tag", series) == [("fixes-tag/format", Level.ERROR)]
    assert _messages("fixes-tag", series)[0].endswith("`fixes:` is spelt `Fixes:`")


@pytest.mark.parametrize("ellipsis", ["...", "…"])
def test_an_abbreviated_subject_is_a_warning_and_a_prefix_of_the_real_one(ellipsis: str) -> None:
    series = _series(("Fixes", f'{SHA} ("Linux 6.11{ellipsis}")'))
    assert _found("fixes-tag", series) == [("fixes-tag/abbreviated", Level.WARNING)]
    assert _found("fixes-tag", series, Tree("Linux 6.11-rc3")) == [("fixes-tag/abbreviated", Level.WARNING)]
    assert _found("fixes-tag", series, Tree("Linux 6.10")) == [("fixes-tag/abbreviated", Level.WARNING), ("fixes-tag/subject", Level.ERROR)]
    dots = _series(("Fixes", f'{SHA} ("mm: Wait for it...")'))  # a subject that really ends in dots is not abbreviated
    assert _found("fixes-tag", dots, Tree("mm: Wait for it...")) == []


def test_with_a_tree_the_commit_and_its_subject_are_checked() -> None:
    good = _series(("Fixes", f'{SHA} ("Linux 6.11-rc3")'))
    assert _found("fixes-tag", good) == [] and _found("fixes-tag", good, Tree("Linux 6.11-rc3")) == []
    assert _found("fixes-tag", good, Tree("Linux 6.10")) == [("fixes-tag/subject", Level.ERROR)]
    assert _messages("fixes-tag", good, Tree("Linux 6.10")) == [f'Fixes: {SHA} is "Linux 6.10", not "Linux 6.11-rc3"']
    unknown = _series(("Fixes", '0123456789ab ("mm: Add dmapool")'))
    assert _found("fixes-tag", unknown, Tree("Linux 6.11-rc3")) == [("fixes-tag/unknown", Level.WARNING)]
    assert _found("fixes-tag", _series(("Fixes", f'{SHA}0123 ("Linux 6.11-rc3")'))) == []  # 16 digits: "at least 12"
    short = _series(("Fixes", '6bbeb48 ("Linux 6.11-rc3")'))  # a malformed tag is not looked up
    assert _messages("fixes-tag", short, Tree("Linux 6.11-rc3")) == [
        'malformed Fixes: tag `6bbeb48 ("Linux 6.11-rc3")`: an id of 7 hex digits (12 to 40)']


def test_every_fixes_line_is_checked_and_replies_are_not() -> None:
    series = _series(("Fixes", "?"), ("Fixes", f'{SHA} ("Linux 6.11-rc3")'), ("Fixes", "commit 0123"),
                     followups=(("Fixes", "?"),))
    assert _messages("fixes-tag", series) == ["malformed Fixes: tag `?`: no commit id",
                                              "malformed Fixes: tag `commit 0123`: `commit` before the id"]


# --------------------------------------------------------------------------- subject-format

SHAPES = [  # the first eight were "no subsystem prefix" warnings before
    "PM / OPP: Fix a leak", "ACPI / PM: Use the right state", "PM / devfreq: Drop a check", 'Revert "foo: bar"',
    'Revert "Revert "mm: Add x""', 'Reapply "mm: Add x"', ".mailmap: Add an entry", "perf vendor events intel: Update",
    "net/mlx5e: Fix a leak", "drm/i915/gt: Fix a leak", "x86/mm/pat: Fix a leak", "dt-bindings: iio: adc: Add a chip",
    "selftests/bpf: Add a test", "ARM: dts: Add a board", "perf tools: Fix a leak", "Documentation: Fix a typo",
    "tracing/probes: Fix a leak", "mm, slab: Fix a leak", "bpf, x86: Fix a leak", "tools/power turbostat: Fix a leak",
    "dm vdo: Fix a leak", "hwmon: (pmbus) Add a chip", "Input: xpad - add a pad", "KVM: x86/mmu: Fix a leak",
    "9p/net: Fix a leak", "thermal/drivers/mediatek/lvts_thermal: Fix a leak", "ALSA: hda/realtek - Add a quirk",
]
MISSES = ["fix the thing", "Update foo.c", "Refuse to create zero-sized pools", "Fix the problem in the driver: it leaks", "Revert foo"]


def test_common_kernel_subject_shapes_have_a_prefix_and_real_misses_stay_warnings() -> None:
    assert [s for s in SHAPES if _found("subject-format", _series(subject=s))] == []
    found = {s: _found("subject-format", _series(subject=s)) for s in MISSES}
    assert found == {s: [("subject-format/prefix", Level.WARNING)] for s in MISSES}
