"""The dashboard in a real browser (issue 33): Debian's chromium, headless, driven by Playwright for Python, as
tests/report/test_html_browser.py drives it (its `browser` and `shots` fixtures), against `review bot serve`'s
server on 127.0.0.1 with the bot home of tests/bot/webhome.py. Every request, console message, page error and
dialog is recorded. `--update-screenshots` copies the list, series and queue pages' screenshots to docs/img/."""
from __future__ import annotations

import shutil
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reviewer.bot import web
from tests.bot import webhome
from tests.browsing import WIDTH
from tests.conftest import ROOT

DOCS = ROOT / "docs" / "img"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> webhome.Home:
    return webhome.make(tmp_path_factory.mktemp("web-home"))


@pytest.fixture(scope="module")
def site(home: webhome.Home) -> Iterator[str]:
    with web.running(web.make(home.cfg, "127.0.0.1", 0)) as url:
        yield url


@dataclass
class Tab:
    """A browser tab and everything it did: the pages it was sent to are the only requests allowed."""

    page: Any
    requests: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def count(self, selector: str) -> int:
        return int(self.page.locator(selector).count())

    def quiet(self, *pages: str) -> None:
        """It fetched PAGES and nothing else, said nothing on the console, raised nothing, opened no dialog."""
        assert self.requests == list(pages) and self.console == [] and self.errors == [] and self.dialogs == [], self

    def inert(self) -> None:
        """No element the hostile text would make (no img, script, svg; no on* attribute anywhere)."""
        assert self.count("img") == self.count("script") == self.count("svg") == 0
        handlers = "els => els.filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length"
        assert self.page.locator("*").evaluate_all(handlers) == 0


def _tab(browser: Any, url: str, *, bypass_csp: bool = False) -> Iterator[Tab]:  # noqa: F811 (the fixture's value)
    context = browser.new_context(viewport={"width": WIDTH, "height": 900}, bypass_csp=bypass_csp)
    page = context.new_page()
    tab = Tab(page)
    page.on("request", lambda r: tab.requests.append(r.url))
    page.on("console", lambda m: tab.console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: tab.errors.append(str(e)))
    page.on("dialog", lambda d: (tab.dialogs.append(d.message), d.dismiss()))
    page.goto(url, wait_until="load")
    try:
        yield tab
    finally:
        context.close()


def _series(site: str, root: str) -> str:
    return f"{site}/lists/test/series/{urllib.parse.quote(root, safe='@')}"


def _shoot(tab: Tab, shots: Path, name: str, request: pytest.FixtureRequest) -> None:  # noqa: F811
    path = shots / f"{name}.png"
    tab.page.screenshot(path=str(path), full_page=True)
    if request.config.getoption("--update-screenshots"):
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS / f"{name}.png")


def test_from_the_list_to_a_series_and_its_previous_revision(browser: Any, site: str, home: webhome.Home, shots: Path,  # noqa: F811
                                                             request: pytest.FixtureRequest) -> None:
    for tab in _tab(browser, site + "/lists/test"):
        assert tab.count("#series tbody tr") == 3
        assert tab.page.locator("h1").inner_text() == "List test (3 series)"
        first = tab.page.locator("#series tbody tr").nth(1)
        assert "lib: rework the api" in first.inner_text() and "v2" in first.inner_text() and "apply: done" in first.inner_text()
        _shoot(tab, shots, "bot-list", request)
        first.locator("a").first.click()
        tab.page.wait_for_load_state("load")
        assert tab.page.url == _series(site, home.v2)
        assert tab.page.locator("h1").inner_text() == f"[PATCH v2] {webhome.SUBJECT}"
        assert "author-signoff" not in tab.page.inner_text("#findings") and "no changelog" in tab.page.inner_text("#findings")
        assert tab.page.inner_text("#fixed") == "Fixed (1)" and "no Signed-off-by at all" in tab.page.inner_text("#changes")
        assert "git range-diff" in tab.page.inner_text("#diff-why") and "++new 1 v2" in tab.page.inner_text("#diff")
        assert tab.count("#diff span.add") > 0 and tab.count("#diff span.del") > 0
        _shoot(tab, shots, "bot-series", request)
        tab.page.locator("#previous").click()
        tab.page.wait_for_load_state("load")
        assert tab.page.url == _series(site, home.v1)
        assert "no Signed-off-by at all" in tab.page.inner_text("#findings") and tab.count("#changes") == 0
        tab.page.locator("#to-list").click()
        tab.page.wait_for_load_state("load")
        tab.quiet(site + "/lists/test", _series(site, home.v2), _series(site, home.v1), site + "/lists/test")


def test_the_queue_page_shows_the_pools(browser: Any, site: str, shots: Path, request: pytest.FixtureRequest) -> None:  # noqa: F811
    for tab in _tab(browser, site + "/queue"):
        tab.quiet(site + "/queue")
        rows = {r.get_attribute("data-pool"): r.inner_text().split("\t") for r in tab.page.locator("#pools tbody tr").all()}
        assert set(rows) == {"test/static", "test/apply", "test/report"}
        assert rows["test/static"][2:5] == ["0", "0", "3"]  # queued, running, done
        assert tab.page.inner_text("#errors") == "No failed jobs."
        _shoot(tab, shots, "bot-queue", request)


@pytest.mark.parametrize("bypass_csp", [True, False], ids=["escaping-alone", "with-csp"])
def test_a_hostile_series_runs_nothing(browser: Any, site: str, home: webhome.Home, shots: Path, *, bypass_csp: bool) -> None:  # noqa: F811
    """With the Content-Security-Policy bypassed only the escaping stands between the markup and the browser; with it,
    the browser is not even asked to block anything (a violation would be a console message)."""
    for path in ("/", "/lists/test", f"/lists/test/series/{home.hostile}", "/lists/test?format=json"):
        url = site + urllib.parse.quote(path, safe="/@?=")
        for tab in _tab(browser, url, bypass_csp=bypass_csp):
            tab.quiet(url)  # no alert(), no request for `x`, no CSP violation
            tab.inert()
            if path == "/lists/test":
                assert webhome.HOSTILE in tab.page.inner_text("#series")
            if "series/" in path:
                assert tab.page.title() == f"Review: {webhome.HOSTILE}"
                assert webhome.HOSTILE_PATH in tab.page.inner_text("#apply")
                if bypass_csp:
                    tab.page.screenshot(path=str(shots / "bot-hostile.png"), full_page=True)
