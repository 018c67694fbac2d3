"""The HTML page without a browser (issue 33): what it holds, that it loads nothing, that series text stays text,
and the chart's geometry. tests/report/test_html_browser.py renders the same pages in chromium."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markupsafe import escape

from reviewer.model import BenchResult, Review
from reviewer.report import chart, html
from reviewer.tree.plainrepo import build_base_repo
from tests.conftest import FIXTURES
from tests.report import gitseries, htmlcases


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Review, str]]:
    root = tmp_path_factory.mktemp("html")
    repo = root / "linux"
    build_base_repo(FIXTURES / "kernel-mini", repo)
    demo = htmlcases.reviewed(htmlcases.DEMO, repo)
    results = htmlcases.with_results(demo)
    hostile = htmlcases.reviewed(gitseries.html_hostile(repo, root / "hostile.mbox"), repo)
    return {name: (r, html.page(r)) for name, r in (("demo", demo), ("results", results), ("hostile", hostile))}


class _Elements(HTMLParser):
    """Every start tag with its attributes, as a browser's tokenizer reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(page)
    return parser.tags


def test_the_page_holds_the_conclusion_series_and_findings(pages: dict[str, tuple[Review, str]]) -> None:
    review, page = pages["demo"]
    assert review.series is not None
    assert "No errors or warnings: the series applies to 6bbeb48ebf41." in page
    assert "LoongArch: vDSO: Wire up getrandom() vDSO implementation" in page
    assert "https://lore.kernel.org/all/20240816110717.10249-1-xry111@example.org/" in page
    assert "subject is 80 characters (at most 75)" in page and "the series&#39; base-commit: line" in page


def test_the_base_and_where_it_came_from_are_said_once(pages: dict[str, tuple[Review, str]]) -> None:
    """Each fact once: the facts list names the base commit and its source; the apply section does not again."""
    review, page = pages["demo"]
    assert review.apply is not None
    assert page.count(review.apply.base) == 1 and page.count(f"(from {escape(html._base_from(review))})") == 1
    assert page.count("Base from") == 0


def test_the_page_loads_nothing_and_runs_nothing(pages: dict[str, tuple[Review, str]]) -> None:
    for name, (_, page) in pages.items():
        tags = _tags(page)
        assert not [t for t, _ in tags if t in ("script", "link", "img", "iframe", "object", "embed", "base", "form")], name
        assert not [(t, a) for t, a in tags for k in a if k.startswith("on") or k in ("src", "srcset", "action")], name
        hrefs = [a["href"] for t, a in tags if t == "a"]
        assert all(h and h.startswith("https://lore.kernel.org/all/") for h in hrefs), (name, hrefs)
        csp = [a["content"] for t, a in tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
        assert csp == ["default-src 'none'; style-src 'unsafe-inline'; img-src data:"], name


def test_series_text_stays_text(pages: dict[str, tuple[Review, str]]) -> None:
    _, page = pages["hostile"]
    assert [t for t, _ in _tags(page) if t in ("img", "svg", "b", "script")] == []
    assert "&lt;img src=x onerror=alert(1)&gt; &lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert "lib/vdso/&#34;&gt;&lt;svg onload=alert(3)&gt;.c" in page
    assert "\u202e" not in page and "\\342\\200\\256gnp.exe" in page  # the bidi override is shown, not obeyed


def test_a_tests_output_is_escaped_too(pages: dict[str, tuple[Review, str]]) -> None:
    _, page = pages["results"]
    assert "# &lt;script&gt;alert(5)&lt;/script&gt; the vDSO returned \\033[2J garbage" in page
    assert "\x1b" not in page


def test_the_template_marks_nothing_safe() -> None:
    """Autoescape is the only escaping: a `|safe` or Markup would let a series' text through as markup."""
    sources = [html.TEMPLATES / "review.html", Path(html.__file__), Path(chart.__file__)]
    assert not [p for p in sources if re.search(r"\|\s*safe\b|Markup\(|autoescape false", p.read_text())]


def test_one_mark_per_run(pages: dict[str, tuple[Review, str]]) -> None:
    review, page = pages["results"]
    figures = re.findall(r'<figure class="bench".*?</figure>', page, re.S)
    assert len(figures) == len(review.benchmarks) == 7
    for b, fig in zip(review.benchmarks, figures, strict=True):
        assert fig.count('<circle class="run base"') == len(b.base_samples) == 5
        assert fig.count('<circle class="run patched"') == len(b.patched_samples) == 5
    assert "slower (95% interval" in figures[-1] and 'class="verdict slower"' in figures[-1]


def test_the_chart_starts_at_zero_and_draws_the_threshold() -> None:
    b = BenchResult.of("bench", "plain", "vdso", "s", [1.0, 1.1, 0.9], [2.0, 2.2], 3)
    c = chart.chart(b, 1.25)
    assert [m.value for m in c.marks] == [1.0, 1.1, 0.9, 2.0, 2.2] and [m.run for m in c.marks] == [1, 2, 3, 1, 2]
    assert c.ticks[0].value == 0 and c.ticks[0].y == c.bottom and c.ticks[-1].value >= 2.2
    assert c.threshold is not None and c.threshold.value == 1.25 and c.threshold.label == "1.25x"
    base, patched = (m for m in c.medians)
    assert (base.label, patched.label) == ("base", "patched") and patched.y < c.threshold.y < base.y  # higher is slower
    xs = [m.x for m in c.marks if m.side == "base"]
    assert xs == sorted(xs) and all(c.panels[0].x < x < c.panels[0].x + c.panels[0].width for x in xs)


def test_a_side_without_runs_draws_none() -> None:
    c = chart.chart(BenchResult.of("bench", "plain", "vdso", "s", [1.0], [], 1), 1.25)
    assert [m.side for m in c.marks] == ["base"] and [m.label for m in c.medians] == ["base"]


def test_where_git_am_stopped(tmp_path: Path) -> None:
    repo = tmp_path / "linux"
    build_base_repo(FIXTURES / "kernel-mini", repo)
    page = html.page(htmlcases.reviewed(gitseries.not_applying(repo, tmp_path / "na.mbox"), repo))
    assert "The series does not apply to 6bbeb48ebf41: patch 2/3 fails on arch/x86/entry/vdso/vdso.lds.S." in page
    hunk = re.search(r'<pre class="quote" id="stopped">(.*?)</pre>', page, re.S)
    assert hunk is not None and '<span class="hdr">@@ -22,7 +22,7 @@ VERSION {</span>' in hunk[1]
    assert '<span class="add">+\t\t__vdso_getrandom_v3;</span>' in hunk[1]
    said = re.search(r'<pre class="quote" id="git-said">(.*?)</pre>', page, re.S)
    assert said is not None and "CONFLICT (content): Merge conflict in arch/x86/entry/vdso/vdso.lds.S" in said[1]
