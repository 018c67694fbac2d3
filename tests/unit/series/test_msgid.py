from __future__ import annotations

import pytest

from reviewer.series.msgid import MsgRef, looks_like_range, parse

FULL = "20240816110717.10249-1-xry111@xry111.site"


@pytest.mark.parametrize(
    "text",
    [
        f"<{FULL}>",
        FULL,
        f"id:{FULL}",
        f"mid:{FULL}",
        f"https://lore.kernel.org/loongarch/{FULL}/",
        f"https://lore.kernel.org/all/{FULL}/T/#u",
        f"https://lore.kernel.org/r/{FULL}",
        f"https://lore.kernel.org/all/{FULL.replace('@', '%40')}/raw",
        f"https://lore.kernel.org/loongarch/{FULL}/t.mbox.gz",
        f"https://patchwork.kernel.org/project/linux-mm/patch/{FULL}/",
    ],
)
def test_every_pasted_form_gives_the_same_id(text: str) -> None:
    ref = parse(text)
    assert ref is not None and ref.msgid == FULL and not ref.truncated


def test_lore_url_keeps_inbox_and_host() -> None:
    assert parse(f"https://lore.kernel.org/loongarch/{FULL}/") == MsgRef(FULL, inbox="loongarch", base_url="https://lore.kernel.org/")


@pytest.mark.parametrize("text", ["20240816110717.10249-1-xry111", "https://lore.kernel.org/loongarch/20240816110717.10249-1-xry111/"])
def test_truncated_ids_are_recognised(text: str) -> None:
    ref = parse(text)
    assert ref == MsgRef("20240816110717.10249-1-xry111", truncated=True, inbox=ref.inbox if ref else None,
                         base_url=ref.base_url if ref else None)
    assert ref is not None and ref.truncated


@pytest.mark.parametrize("text", ["HEAD", "HEAD~3", "master", "v6.11", "origin/master", "1234-5", ""])
def test_git_revisions_are_not_message_ids(text: str) -> None:
    assert parse(text) is None


@pytest.mark.parametrize("text,expected", [("origin/master..HEAD", True), ("HEAD~3..", True), ("a...b", True),
                                           ("HEAD~3", False), (f"https://x/{FULL}/..", False)])
def test_ranges(text: str, *, expected: bool) -> None:
    assert looks_like_range(text) is expected
