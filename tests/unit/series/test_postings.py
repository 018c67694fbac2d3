"""reviewer/series/postings.py: telling postings and follow-up patches apart, on plain records."""
from __future__ import annotations

import datetime as dt

from reviewer.series.postings import Kind, Mail, plain_prefixes, select

T0 = dt.datetime(2024, 8, 20, 9, 0, tzinfo=dt.UTC)


def mail(msgid: str, minutes: int, counter: int = 1, expected: int = 1, *, refs: tuple[str, ...] = (), sender: str = "a@x",
         kind: Kind = Kind.PATCH, revision: int = 1, versioned: bool = False, numbered: bool = True, subject: str = "") -> Mail:
    return Mail(msgid, refs, sender, T0 + dt.timedelta(minutes=minutes), subject or f"patch {counter}", kind,
                revision, not versioned, counter, expected, not numbered)


def series(prefix: str, minutes: int, total: int = 2, *, threaded: bool = True, cover: bool = True, **kw: object) -> list[Mail]:
    root = f"{prefix}-0"
    out = [mail(root, minutes, 0, total, kind=Kind.COVER, subject="cover", **kw)] if cover else []  # type: ignore[arg-type]
    for n in range(1, total + 1):
        refs = (root,) if threaded and cover else ((f"{prefix}-1",) if threaded and n > 1 else ())
        out.append(mail(f"{prefix}-{n}", minutes, n, total, refs=refs, **kw))  # type: ignore[arg-type]
    return out


def roots(sel: object) -> list[tuple[str, list[int], bool]]:
    return [(p.root.msgid, sorted(p.slots), p.root.msgid in sel.chosen) for p in sel.postings]  # type: ignore[attr-defined]


def test_one_clean_posting_leaves_nothing_out() -> None:
    sel = select(series("s", 0))
    assert roots(sel) == [("s-0", [0, 1, 2], True)] and sel.left_out == set()


def test_a_repost_is_a_second_posting_and_the_newest_complete_wins() -> None:
    sel = select(series("old", 0) + series("new", 60))
    assert roots(sel) == [("old-0", [0, 1, 2], False), ("new-0", [0, 1, 2], True)]
    assert sel.left_out == {"old-0", "old-1", "old-2"}


def test_an_incomplete_newer_posting_loses() -> None:
    newer = [m for m in series("new", 60, 3) if m.msgid != "new-2"]
    sel = select(series("old", 0, 3) + newer)
    assert [c for c in sel.chosen] == ["old-0"]


def test_unthreaded_patches_fill_the_slots_of_one_posting_each_time() -> None:
    first = series("a", 0, 3, threaded=False, cover=False)
    again = series("b", 60, 3, threaded=False, cover=False)
    sel = select(first + again)
    assert roots(sel) == [("a-1", [1, 2, 3], False), ("b-1", [1, 2, 3], True)]


def test_deep_threading_and_clock_skew_keep_one_posting() -> None:
    deep = [mail("d-0", 5, 0, 3, kind=Kind.COVER), mail("d-1", 4, 1, 3, refs=("d-0",)),
            mail("d-2", 3, 2, 3, refs=("d-0", "d-1")), mail("d-3", 6, 3, 3, refs=("d-0", "d-1", "d-2"))]
    assert roots(select(deep)) == [("d-0", [0, 1, 2, 3], True)]


def test_a_later_copy_in_the_same_posting_replaces_the_earlier() -> None:
    mails = [*series("s", 0), mail("s-2b", 90, 2, 2, refs=("s-0", "s-2"))]
    sel = select(mails)
    (posting,) = sel.postings
    assert posting.slots[2].msgid == "s-2b" and [m.msgid for m in posting.replaced] == ["s-2"]
    assert sel.left_out == {"s-2"}


def test_an_unnumbered_patch_in_reply_is_a_followup_through_replies_too() -> None:
    reply = mail("r", 30, 2, 2, refs=("s-0", "s-2"), kind=Kind.OTHER, sender="rev@x")
    fix = mail("fix", 40, refs=("s-0", "s-2", "r"), numbered=False, sender="fixer@x", subject="fixup")
    sel = select([*series("s", 0), reply, fix])
    assert [(f.mail.msgid, f.of) for f in sel.followups] == [("fix", "s-2")]
    assert roots(sel) == [("s-0", [0, 1, 2], True)]


def test_a_versioned_single_patch_in_reply_is_a_new_revision_not_a_followup() -> None:
    v1 = mail("v1", 0, numbered=False)
    v2 = mail("v2", 60, refs=("v1",), numbered=False, versioned=True, revision=2)
    sel = select([v1, v2])
    assert sel.followups == () and sorted(p.revision for p in sel.postings) == [1, 2]


def test_unversioned_patches_below_a_versioned_cover_take_its_revision() -> None:
    mails = [mail("c", 0, 0, 2, kind=Kind.COVER, revision=3, versioned=True),
             mail("p1", 0, 1, 2, refs=("c",)), mail("p2", 0, 2, 2, refs=("c",))]
    (posting,) = select(mails).postings
    assert posting.revision == 3 and sorted(posting.slots) == [0, 1, 2]


def test_reference_cycles_do_not_hang() -> None:
    a = mail("a", 0, 1, 2, refs=("b",))
    b = mail("b", 1, 2, 2, refs=("a",))
    sel = select([a, b])
    assert sum(len(p.slots) for p in sel.postings) == 2


def test_format_patch_output_is_one_posting_though_each_patch_is_from_its_author() -> None:
    """git format-patch: the cover letter From: whoever ran it (dated now), each patch From: its author."""
    mails = [mail("c", 600, 0, 2, kind=Kind.COVER, sender="runner@x"),
             mail("p1", 0, 1, 2, refs=("c",), sender="ana@x"), mail("p2", 1, 2, 2, refs=("c",), sender="bo@x")]
    assert roots(select(mails)) == [("c", [0, 1, 2], True)]
    unthreaded = [mail("c", 600, 0, 2, kind=Kind.COVER), mail("p1", 0, 1, 2), mail("p2", 1, 2, 2)]
    assert roots(select(unthreaded)) == [("c", [0, 1, 2], True)]


def test_an_unnumbered_patch_of_another_sender_is_not_the_authors_posting() -> None:
    sel = select([*series("s", 0), mail("x", 5, refs=("s-0",), sender="other@x", numbered=False, subject="other")])
    assert [f.mail.msgid for f in sel.followups] == ["x"] and roots(sel) == [("s-0", [0, 1, 2], True)]


def test_prefixes_are_made_readable_for_b4() -> None:
    assert plain_prefixes("[net,v2,1/2] a: b") == "[net v2 1/2] a: b"
    assert plain_prefixes("[PATCH 1 of 2] a: b") == "[PATCH 1/2] a: b"
    assert plain_prefixes("[PATCH v2 1/2] a, b: c") is None
    assert plain_prefixes("Re: [net,v2,1/2] a") is None
