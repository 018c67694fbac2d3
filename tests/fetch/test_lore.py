"""`review <Message-ID>` against a real public-inbox on 127.0.0.1: every id form, truncated ids,
revisions, replies, a partial reroll, the cache, and a server that goes away."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from reviewer.errors import ExitStatus
from tests.fetch.conftest import Httpd, Inbox, start_httpd
from tests.helpers import Result, review

LA = "20240816110717.10249-1-xry111@example.org"
DMA_V1 = "20240819091500.4242-1-dma@example.org"
DMA_V2 = "20240822101010.5151-1-dma@example.org"
REROLL = "20240902080000.7070-1-reroll@example.org"
ANA = "20240910081500.31337-1-ana@example.org"
ANTON = "20240910081500.31337-1-anton@example.org"


def _json(res: Result) -> dict[str, Any]:
    assert res.rc == ExitStatus.OK, res.stderr
    doc: dict[str, Any] = res.json()
    doc["series"].pop("source")
    doc["stages"] = [{k: v for k, v in st.items() if k != "seconds"} for st in doc["stages"]]
    return doc


def _review(tmp_path: Path, *args: str) -> Result:
    return review(*args, "--format", "json", tmp=tmp_path / "tmp")


def test_every_form_gives_the_same_series(lore: Httpd, tmp_path: Path) -> None:
    full = _json(_review(tmp_path, LA, "--lore-url", lore.url))
    assert full["series"]["msgid"] == LA and full["series"]["version"] == 4
    forms = [
        (f"<{LA}>", "--lore-url", lore.url),
        (f"id:{LA}", "--lore-url", lore.url, "--no-cache"),
        (f"{lore.url}{LA}/", "--no-cache"),  # the server named by the link itself
        (f"{lore.url}{LA}/T/#t", "--no-cache"),
        (f"https://lore.kernel.org/loongarch/{LA}/", "--lore-url", lore.url, "--no-cache"),  # --lore-url wins
    ]
    for form in forms:
        assert _json(_review(tmp_path, *form)) == full, form
    res = _review(tmp_path, LA.split("@")[0], "--lore-url", lore.url, "--no-cache")
    assert _json(res) == full
    assert res.stderr == f"review: resolved {LA.split('@')[0]} to {LA}\n"


def test_git_config_names_the_server(lore: Httpd, tmp_path: Path) -> None:
    subprocess.run(["git", "config", "--global", "reviewer.loreUrl", lore.url], check=True)
    assert _json(_review(tmp_path, LA))["series"]["msgid"] == LA


def test_replies_carry_trailers(lore: Httpd, tmp_path: Path) -> None:
    doc = _json(_review(tmp_path, LA, "--lore-url", lore.url))
    first = {(t["name"], t["source"]) for t in doc["patches"][0]["trailers"]}
    assert ("Reviewed-by", "followup") in first
    assert [t["name"] for t in doc["series"]["cover"]["trailers"]] == ["Tested-by"]


@pytest.mark.parametrize("given", [DMA_V1, DMA_V2])
def test_newest_revision_by_default_and_on_request(lore: Httpd, tmp_path: Path, given: str) -> None:
    """v1 and v2 are separate threads: the other one is found by searching lore, as b4 does."""
    newest = _json(_review(tmp_path, given, "--lore-url", lore.url))
    assert (newest["series"]["version"], newest["series"]["msgid"], newest["series"]["revisions"]) == (2, DMA_V2, [1, 2])
    res = _review(tmp_path, given, "--lore-url", lore.url, "--revision", "1")
    older = _json(res)
    assert (older["series"]["version"], older["series"]["msgid"], older["series"]["revisions"]) == (1, DMA_V1, [1, 2])
    assert "a newer revision of this series exists (v2); reviewing v1" in res.stderr
    assert older["patches"][1]["trailers"][-1]["name"] == "Reviewed-by"  # the v1 review of 2/3


def test_no_such_revision(lore: Httpd, tmp_path: Path) -> None:
    _review(tmp_path, DMA_V2, "--lore-url", lore.url, "--revision", "3").assert_one_line_error(ExitStatus.FETCH, "there is no v3")


def test_partial_reroll(lore: Httpd, tmp_path: Path) -> None:
    """v2 resends only 2/3, in reply to v1's 2/3: 1/3 and 3/3 come from v1."""
    doc = _json(_review(tmp_path, REROLL, "--lore-url", lore.url))
    assert (doc["series"]["version"], doc["series"]["total"], doc["series"]["missing"]) == (2, 3, [])
    assert [p["msgid"].split("@")[0] for p in doc["patches"]] == [
        "20240902080000.7070-2-reroll", "20240904073000.8080-1-reroll", "20240902080000.7070-4-reroll"]
    followups = [(t["name"], t["msgid"]) for t in doc["patches"][1]["trailers"] if t["source"] == "followup"]
    assert [name for name, _ in followups] == ["Reviewed-by"]  # once, though b4 threads v1 and v2


def test_ambiguous_prefix_lists_both_series(lore: Httpd, tmp_path: Path) -> None:
    for prefix in ("20240910081500.31337-1-an", "20240910081500.31337-"):
        res = _review(tmp_path, prefix, "--lore-url", lore.url)
        res.assert_one_line_error(ExitStatus.FETCH, "is ambiguous: 2 series match")
        assert ANA in res.stderr and ANTON in res.stderr
        assert "-2-anton" not in res.stderr  # 1/2 belongs to Anton's cover letter, listed once


def test_longer_prefix_picks_the_cover_letter(lore: Httpd, tmp_path: Path) -> None:
    res = _review(tmp_path, "20240910081500.31337-1-ant", "--lore-url", lore.url)
    assert _json(res)["series"]["msgid"] == ANTON
    assert res.stderr == f"review: resolved 20240910081500.31337-1-ant to {ANTON}\n"


def test_prefix_of_a_reply_only(lore: Httpd, tmp_path: Path) -> None:
    res = _review(tmp_path, "20240903061500.GA4040", "--lore-url", lore.url)
    res.assert_one_line_error(ExitStatus.FETCH, "no patch or cover letter")


def test_nothing_matches(lore: Httpd, tmp_path: Path) -> None:
    _review(tmp_path, "20200101000000.9999-1-nobody", "--lore-url", lore.url).assert_one_line_error(
        ExitStatus.FETCH, "no message matches '20200101000000.9999-1-nobody'")
    res = _review(tmp_path, "nobody.1234@example.org", "--lore-url", lore.url)
    res.assert_one_line_error(ExitStatus.FETCH, "no message <nobody.1234@example.org>")
    assert f"{lore.url}nobody.1234@example.org/t.mbox.gz: 404" in res.stderr


def test_server_goes_away_and_the_cache_remains(inbox: Inbox, tmp_path: Path) -> None:
    own = start_httpd(inbox, tmp_path / "httpd.log")
    try:
        fetched = _json(_review(tmp_path, LA, "--lore-url", own.url))
    finally:
        own.stop()
    assert _json(_review(tmp_path, LA, "--lore-url", own.url)) == fetched  # fresh in the cache: no request
    res = _review(tmp_path, LA.split("@")[0], "--lore-url", own.url)  # a truncated id too: no request to resolve it
    assert _json(res) == fetched
    assert res.stderr == f"review: resolved {LA.split('@')[0]} to {LA} (a thread cached in the last 10 minutes)\n"
    assert _json(_review(tmp_path, LA, "--offline")) == fetched
    res = _review(tmp_path, "20240816110717.10249-1-xry", "--offline")
    assert _json(res) == fetched
    res = _review(tmp_path, LA, "--lore-url", own.url, "--no-cache")
    res.assert_one_line_error(ExitStatus.FETCH, f"{own.url}{LA}/t.mbox.gz: cannot connect: connection refused")
    assert "hint: " in res.stderr and "--offline" in res.stderr
    res = _review(tmp_path, DMA_V1, "--offline")
    res.assert_one_line_error(ExitStatus.FETCH, f"<{DMA_V1}> is not in the cache")
    assert "run once without --offline" in res.stderr
    subprocess.run(["git", "config", "--global", "reviewer.cacheMinutes", "0"], check=True)
    _review(tmp_path, LA, "--lore-url", own.url).assert_one_line_error(ExitStatus.FETCH, "connection refused")
