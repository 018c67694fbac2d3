"""Every relative link in README.md and docs/*.md resolves: the file exists, and an `#anchor`
(in the same page or `file.md#anchor`) names a heading of the target as GitHub makes its ids
(https://docs.github.com/en/get-started/writing-on-github/getting-started-with-writing-and-formatting-on-github/basic-writing-and-formatting-syntax#section-links):
lower case, punctuation other than `-` and `_` dropped, each space a `-`, and `-1`, `-2`, ...
after a heading that repeats an earlier one.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...
_CITED = re.compile(r"\bdocs/([\w-]+\.md)(?:#([\w-]+))?")  # the manual as code comments cite it
SOURCES = sorted(p for d in ("reviewer", "bench", "tests") for p in (ROOT / d).rglob("*.py") if p != Path(__file__))


def slug(heading: str) -> str:
    """GitHub's id for a heading's text."""
    text = re.sub(r"[^\w\- ]", "", heading.lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The ids of a page's headings (headings inside fenced code are not headings)."""
    seen: dict[str, int] = {}
    out = set()
    for m in _HEADING.finditer(_FENCE.sub("", page.read_text())):
        base = slug(m[1])
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken(page: Path) -> list[str]:
    """The relative links of a markdown page that do not resolve, with why."""
    text = _CODE.sub("", _FENCE.sub("", page.read_text()))
    out = []
    for target in _LINK.findall(text):
        if _EXTERNAL.match(target):
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        if not path.exists():
            out.append(f"{page.name}: {target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            out.append(f"{page.name}: {target}: no heading #{anchor} in {path.name}")
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == []


def test_code_cites_the_manual_not_outside_notes() -> None:
    """Comments that cite a measured fact point into docs/ (a heading that exists), never at notes outside the repository."""
    bad = []
    for source in SOURCES:
        text = source.read_text()
        bad += [f"{source.relative_to(ROOT)}: cites {m[0]}" for m in re.finditer(r"KERNEL-NOTES|\.\./shared/", text)]
        for m in _CITED.finditer(text):
            page = ROOT / "docs" / m[1]
            if not page.is_file() or (m[2] and m[2] not in anchors(page)):
                bad.append(f"{source.relative_to(ROOT)}: {m[0]} does not resolve")
    assert bad == []


def test_the_manual_is_linked_from_the_readme() -> None:
    linked = {Path(t.partition("#")[0]).name for t in _LINK.findall((ROOT / "README.md").read_text())}
    assert {p.name for p in PAGES[1:]} <= linked


def test_slugs_as_github_makes_them() -> None:
    assert slug("Build test (`--build`)") == "build-test---build"
    assert slug("The kernel's own checkers") == "the-kernels-own-checkers"
    assert slug("b4 integration") == "b4-integration"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A page\n\n## Same\n\n## Same\n\n```\n# not a heading\n```\n"
                                   "[ok](#a-page) [ok](b.md#b) [ok](#same-1) [ok](https://example.org/x#y) `[code](nowhere.md)`\n"
                                   "[bad](nowhere.md) [bad](b.md#nope) [bad](#not-a-heading) [bad](#same-2)\n")
    (tmp_path / "b.md").write_text("# B\n")
    assert broken(tmp_path / "a.md") == ["a.md: nowhere.md: no such file", "a.md: b.md#nope: no heading #nope in b.md",
                                         "a.md: #not-a-heading: no heading #not-a-heading in a.md",
                                         "a.md: #same-2: no heading #same-2 in a.md"]
