"""In-process checks of the pieces: which server, which candidates count, the cache round trip."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.series import fetch, lore, msgid
from reviewer.store import threads as cache
from tests.conftest import SERIES


@pytest.mark.parametrize(("subject", "head"), [
    ("[PATCH 0/3] mm: x", True), ("[PATCH v2 1/3] mm: x", True), ("[PATCH] mm: x", True),
    ("[RFC PATCH net-next v3 01/12] net: x", True), ("[PATCH 2/3] mm: x", False),
    ("Re: [PATCH 0/3] mm: x", False), ("mm: a question", False),
])
def test_series_head(subject: str, *, head: bool) -> None:
    assert lore._is_series_head(subject) is head


def test_a_first_patch_under_a_listed_cover_counts_once() -> None:
    raw = {
        "c@x": b"Subject: [PATCH 0/2] a\n\n",
        "p1@x": b"Subject: [PATCH 1/2] a\nIn-Reply-To: <c@x>\n\n",
        "p2@x": b"Subject: [PATCH 2/2] a\nIn-Reply-To: <c@x>\n\n",
        "other@x": b"Subject: [PATCH] b\n\n",
    }
    assert lore._series_heads(raw) == ["c@x", "other@x"]


def test_which_server(tmp_path: Path) -> None:
    pasted = msgid.parse("https://lore.kernel.org/loongarch/a.b-1@x/")
    plain = msgid.parse("a.b-1@x")
    assert pasted is not None and plain is not None
    assert lore.base_url(pasted, "http://127.0.0.1:1/mirror", tmp_path) == "http://127.0.0.1:1/mirror/"
    assert lore.base_url(pasted, None, tmp_path) == "https://lore.kernel.org/loongarch/"
    assert lore.base_url(plain, None, tmp_path) == "http://127.0.0.1:9/nowhere/"  # git config, from conftest
    patchwork = msgid.parse("https://patchwork.kernel.org/project/linux-mm/patch/a.b-1@x/")
    assert patchwork is not None and lore.base_url(patchwork, None, tmp_path) == "http://127.0.0.1:9/nowhere/"


def test_cache_round_trip() -> None:
    msgs = fetch.read_mbox(SERIES / "loongarch-vdso-getrandom-v4.mbox")
    cache.write("a.b-1@x", fetch.to_mbox(msgs))
    back = fetch.split_thread(cache.read("a.b-1@x") or b"")
    assert fetch.to_mbox(back) == fetch.to_mbox(msgs)
    assert cache.starting_with("a.b") == ["a.b-1@x"]
    assert cache.read("a.b-1@x", max_age=-1) is None  # stale
