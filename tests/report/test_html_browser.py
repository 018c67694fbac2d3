"""The HTML page in a real browser (issue 33): Debian's chromium, headless, driven by Playwright for Python.

One browser per test session. Each page is opened from a file, as a saved page is; every request, console
message, page error and dialog is recorded. A screenshot of each page goes to the screenshots directory
($REVIEWER_SCREENSHOTS, else `screenshots/` in pytest's temporary directory); `--update-screenshots` also copies
the page with benchmarks to docs/img/review-page.png, the picture docs/html.md shows.
"""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reviewer.model import Level, Review
from reviewer.report import conclusion, html
from reviewer.tree.plainrepo import build_base_repo
from tests import browsing
from tests.conftest import FIXTURES, ROOT
from tests.helpers import review as run_review
from tests.report import gitseries, htmlcases

playwright = pytest.importorskip("playwright.sync_api", reason="the test extra installs playwright")
DOCS_PICTURE = ROOT / "docs" / "img" / "review-page.png"
WIDTH = browsing.WIDTH


@pytest.fixture(scope="module")
def reviews(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Review]:
    root = tmp_path_factory.mktemp("pages")
    repo = root / "linux"
    build_base_repo(FIXTURES / "kernel-mini", repo)
    demo = htmlcases.reviewed(htmlcases.DEMO, repo)
    return {"demo": demo, "results": htmlcases.with_results(demo),
            "hostile": htmlcases.reviewed(gitseries.html_hostile(repo, root / "hostile.mbox"), repo)}


@dataclass
class Opened:
    """A page as the browser loaded it, and everything it did meanwhile."""

    page: Any
    url: str
    requests: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def count(self, selector: str) -> int:
        return int(self.page.locator(selector).count())

    def quiet(self) -> None:
        """It fetched nothing but itself, said nothing on the console, raised nothing and opened no dialog."""
        assert self.requests == [self.url] and self.console == [] and self.errors == [] and self.dialogs == [], self


def _open(browser: Any, path: Path, *, bypass_csp: bool = False) -> Iterator[Opened]:
    context = browser.new_context(viewport={"width": WIDTH, "height": 900}, bypass_csp=bypass_csp, java_script_enabled=True)
    page = context.new_page()
    opened = Opened(page, path.as_uri())
    page.on("request", lambda r: opened.requests.append(r.url))
    page.on("console", lambda m: opened.console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    page.on("dialog", lambda d: (opened.dialogs.append(d.message), d.dismiss()))
    page.goto(opened.url, wait_until="load")
    try:
        yield opened
    finally:
        context.close()


def _page(tmp: Path, name: str, review: Review) -> Path:
    path = tmp / f"{name}.html"
    path.write_text(html.page(review), encoding="utf-8")
    return path


def _shoot(opened: Opened, shots: Path, name: str) -> Path:
    path = shots / f"{name}.png"
    opened.page.screenshot(path=str(path), full_page=True)
    return path


def test_the_demo_page_shows_the_conclusion_and_the_findings(browser: Any, reviews: dict[str, Review], tmp_path: Path, shots: Path) -> None:
    review = reviews["demo"]
    assert review.series is not None
    for opened in _open(browser, _page(tmp_path, "demo", review)):
        opened.quiet()
        _, said = conclusion.line(review, [f for f in review.findings if f.level is not Level.INFO])
        assert opened.page.inner_text("#conclusion") == said
        assert opened.page.inner_text("h1") == f"[PATCH v4] {review.series.subject}"
        assert opened.count("article.finding") == len(review.findings) > 0
        assert "subject is 80 characters (at most 75)" in opened.page.inner_text("#findings")
        assert opened.count("#patches tbody tr") == review.series.total
        assert opened.page.locator("#patches a").first.get_attribute("href") == html.lore(html.DEFAULT_URL, review.series.patches[0].msgid)
        _shoot(opened, shots, "review-demo")


def test_each_benchmark_run_is_one_mark(browser: Any, reviews: dict[str, Review], tmp_path: Path, shots: Path,
                                        request: pytest.FixtureRequest) -> None:
    review = reviews["results"]
    for opened in _open(browser, _page(tmp_path, "results", review)):
        opened.quiet()
        figures = opened.page.locator("figure.bench")
        assert figures.count() == len(review.benchmarks) == 7
        for i, b in enumerate(review.benchmarks):
            svg = figures.nth(i).locator("svg.runs")
            assert svg.locator("circle.run.base").count() == len(b.base_samples) == 5
            assert svg.locator("circle.run.patched").count() == len(b.patched_samples) == 5
            assert svg.locator("circle").count() == len(b.base_samples) + len(b.patched_samples)  # nothing else is a mark
            assert svg.locator("line.threshold").count() == 1 and svg.locator("line.median").count() == 2
            box = svg.bounding_box()
            assert box is not None and box["width"] > 300 and box["height"] > 150  # drawn, at its size
        last = figures.nth(6)
        threshold = float(last.locator("line.threshold").get_attribute("y1"))
        tops = [float(y) for y in last.locator("circle.run.patched").evaluate_all("els => els.map(e => e.getAttribute('cy'))")]
        assert all(y < threshold for y in tops)  # the runs made 1.4 times slower stand above the 1.25x line
        assert last.locator(".verdict").inner_text().startswith("slower (95% interval")
        assert "output of the patched run" in opened.page.inner_text("#tests")
        assert opened.count("#logs li") == 3 and opened.count("#builds tbody tr") == 4
        picture = _shoot(opened, shots, "review-results")
        if request.config.getoption("--update-screenshots"):
            DOCS_PICTURE.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(picture, DOCS_PICTURE)


@pytest.mark.parametrize("bypass_csp", [True, False], ids=["escaping-alone", "with-csp"])
def test_a_hostile_series_runs_nothing(browser: Any, reviews: dict[str, Review], tmp_path: Path, shots: Path, *, bypass_csp: bool) -> None:
    """With the Content-Security-Policy bypassed, only the escaping stands between the markup and the browser;
    with it, the browser is not even asked to block anything (no violation is reported on the console)."""
    review = reviews["hostile"]
    for opened in _open(browser, _page(tmp_path, "hostile", review), bypass_csp=bypass_csp):
        opened.quiet()  # no alert(), no request for `x`, no CSP violation
        assert opened.count("img") == opened.count("script") == opened.count("svg") == opened.count("b") == 0
        handlers = "els => els.filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length"
        assert opened.page.locator("*").evaluate_all(handlers) == 0
        title = opened.page.inner_text("h1")
        assert "<img src=x onerror=alert(1)> </script><script>alert(2)</script> \\342\\200\\256gnp.exe" in title
        assert gitseries.HTML_NAME in opened.page.inner_text("#findings")
        assert opened.page.title().startswith("Review: vdso: <img src=x")
        if bypass_csp:
            _shoot(opened, shots, "review-hostile")


@pytest.mark.slow
def test_review_demo_format_html(browser: Any, tmp_path: Path, shots: Path) -> None:
    """`review demo --format html`: the real demo, its selftests and benchmarks run, as the page a user gets."""
    done = run_review("demo", "--format", "html", tmp=tmp_path / "tmp")
    assert done.rc == 0, done.stderr
    path = tmp_path / "demo.html"
    path.write_text(done.stdout, encoding="utf-8")
    for opened in _open(browser, path):
        opened.quiet()
        assert opened.page.inner_text("#conclusion").startswith("No errors or warnings: the series applies to")
        figures = opened.page.locator("figure.bench")
        assert figures.count() >= 6
        for i in range(figures.count()):
            runs = figures.nth(i).locator("dd").nth(4).inner_text()  # "5 a side, spread 4%"
            assert figures.nth(i).locator("circle.run").count() == 2 * int(runs.split()[0])
        _shoot(opened, shots, "review-demo-real")
