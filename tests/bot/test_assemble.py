"""Series assembly on mails written here: complete, missing a part, RFC, RESEND, v2, a patch-id-unchanged v3."""
from __future__ import annotations

import logging

import pytest

from reviewer.bot.assemble import Assembled, Readiness, Seen, assemble, read
from reviewer.bot.feed import RawMail
from reviewer.series.fetch import mail_facts
from tests.bot.mails import series

SETTLE = 600.0
BOB = "Bob Builder <bob@example.org>"


def _seen(mails: list[bytes], at: float, listname: str = "test") -> list[Seen]:
    return [Seen(mail_facts(m), listname, at + k) for k, m in enumerate(mails)]


def _by_root(found: list[Assembled]) -> dict[str, Assembled]:
    return {s.root: s for s in found}


COMPLETE = series("foo", "PATCH", "net: add foo", 3)
MISSING = series("bar", "PATCH", "mm: fix bar", 3, sender=BOB, parts=(1, 3))
RFC = series("baz", "RFC PATCH", "fs: try baz", 2)
RESEND = series("foo-resend", "RESEND PATCH", "net: add foo", 3)
BAR_V2 = series("bar2", "PATCH v2", "mm: fix bar", 3, sender=BOB, change=" (v2)")
BAR_V3 = series("bar3", "PATCH v3", "mm: fix bar", 3, sender=BOB, change=" (v2)", wording="Reworded: do it")


def test_a_complete_series_is_ready_at_once() -> None:
    [s] = assemble(_seen(COMPLETE, 100.0), now=104.0, settle=SETTLE)
    assert (s.state, s.expected, s.missing, s.revision, s.rfc) == (Readiness.READY, 3, (), 1, False)
    assert s.parts == ("foo.0@example.org", "foo.1@example.org", "foo.2@example.org", "foo.3@example.org")
    assert s.identity == "test|ann@example.org|net: add foo"
    assert all(len(p) == 40 for p in s.patch_ids) and len(set(s.patch_ids)) == 3


def test_a_series_missing_a_part_waits_then_settles_as_incomplete() -> None:
    seen = _seen(MISSING, 100.0)
    last = max(s.seen_at for s in seen)
    [waiting] = assemble(seen, now=last + SETTLE - 1, settle=SETTLE)
    assert (waiting.state, waiting.missing) == (Readiness.WAITING, (2,))
    [settled] = assemble(seen, now=last + SETTLE, settle=SETTLE)
    assert settled.state is Readiness.INCOMPLETE


def test_the_missing_part_arriving_in_time_makes_it_complete() -> None:
    late = series("bar", "PATCH", "mm: fix bar", 3, sender=BOB, parts=(2,))[1:]
    [s] = assemble(_seen(MISSING, 100.0) + _seen(late, 400.0), now=401.0, settle=SETTLE)
    assert (s.state, s.missing, len(s.parts)) == (Readiness.READY, (), 4)


def test_an_rfc_is_marked() -> None:
    [s] = assemble(_seen(RFC, 100.0), now=200.0, settle=SETTLE)
    assert (s.rfc, s.state, s.subject) == (True, Readiness.READY, "fs: try baz")


def test_the_list_traffic_in_order() -> None:
    seen = (_seen(COMPLETE, 100.0) + _seen(MISSING, 200.0) + _seen(RFC, 300.0) + _seen(RESEND, 400.0) + _seen(BAR_V2, 500.0)
            + _seen(BAR_V3, 600.0))
    found = assemble(seen, now=700.0, settle=SETTLE)
    assert [s.root for s in found] == ["foo.0@example.org", "bar.0@example.org", "baz.0@example.org", "foo-resend.0@example.org",
                                       "bar2.0@example.org", "bar3.0@example.org"]
    by = _by_root(found)
    assert by["foo-resend.0@example.org"].duplicate_of == "test/foo.0@example.org"  # a RESEND: results reused
    assert by["foo-resend.0@example.org"].supersedes is None
    v2 = by["bar2.0@example.org"]
    assert (v2.revision, v2.duplicate_of, v2.supersedes) == (2, None, "test/bar.0@example.org")  # a new revision
    v3 = by["bar3.0@example.org"]
    assert (v3.revision, v3.duplicate_of, v3.supersedes) == (3, "test/bar2.0@example.org", None)  # only the wording changed
    assert by["bar.0@example.org"].state is Readiness.WAITING  # v1 still waits for its part 2: 600 s after 203 s
    assert [s.key for s in found if s.duplicate_of is None and s.supersedes is None] == [
        "test/foo.0@example.org", "test/bar.0@example.org", "test/baz.0@example.org"]


def test_a_v2_with_the_same_patches_is_a_duplicate() -> None:
    same = series("foo2", "PATCH v2", "net: add foo", 3, wording="Better words")
    found = _by_root(assemble(_seen(COMPLETE, 100.0) + _seen(same, 200.0), now=300.0, settle=SETTLE))
    assert found["foo2.0@example.org"].duplicate_of == "test/foo.0@example.org"


def test_the_change_id_is_the_identity_across_subjects() -> None:
    v1 = series("cid1", "PATCH", "net: add qux", 2, cover_note="change-id: 20261206-qux-0123456789ab\n")
    v2 = series("cid2", "PATCH v2", "net: add qux, the better way", 2, change="!", cover_note="change-id: 20261206-qux-0123456789ab\n")
    found = _by_root(assemble(_seen(v1, 100.0) + _seen(v2, 200.0), now=300.0, settle=SETTLE))
    assert found["cid2.0@example.org"].identity == "change-id:20261206-qux-0123456789ab"
    assert found["cid2.0@example.org"].supersedes == "test/cid1.0@example.org"


def test_another_author_with_the_same_subject_is_another_series() -> None:
    other = series("foo-bob", "PATCH v2", "net: add foo", 3, sender=BOB, change="?")
    found = _by_root(assemble(_seen(COMPLETE, 100.0) + _seen(other, 200.0), now=300.0, settle=SETTLE))
    assert found["foo-bob.0@example.org"].supersedes is None
    assert found["foo-bob.0@example.org"].identity != found["foo.0@example.org"].identity


def test_a_resend_is_a_duplicate_even_when_its_diffs_differ() -> None:
    # Its diffs differ from the first posting (rebased, touched up in passing): the RESEND prefix says it is the same revision.
    resend = series("foo-rebased", "RESEND PATCH", "net: add foo", 3, change=" (rebased)")
    found = _by_root(assemble(_seen(COMPLETE, 100.0) + _seen(resend, 200.0), now=300.0, settle=SETTLE))
    assert found["foo-rebased.0@example.org"].resend is True
    assert found["foo-rebased.0@example.org"].duplicate_of == "test/foo.0@example.org"


def test_a_blob_that_is_no_mail_is_skipped_with_a_note(caplog: pytest.LogCaptureFixture) -> None:
    good = RawMail(0, "a" * 40, COMPLETE[0])
    bad = RawMail(0, "b" * 40, b"Subject: " + b"x" * 2_000_000 + b"\n\nbody\n")
    with caplog.at_level(logging.WARNING, logger="reviewer.bot.assemble"):
        seen = read("test", [bad, good], at=5.0)
    assert [(s.msgid, s.commit, s.seen_at) for s in seen] == [("foo.0@example.org", "a" * 40, 5.0)]
    assert f"commit {'b' * 40}" in caplog.text and "skipped" in caplog.text
