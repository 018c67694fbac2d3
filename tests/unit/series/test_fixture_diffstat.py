"""On every fixture patch, our diffstat equals `git apply --numstat` on the same diff."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.series import fetch
from reviewer.series.patchparse import parse_diff
from tests.conftest import FIXTURES
from tests.unit.series.test_patchparse import numstat_of

SOURCES = sorted([*(p for p in (FIXTURES / "series").rglob("*.mbox") if p.parent.name != "bad"), *(FIXTURES / "format-patch").glob("*/")])


def _messages(source: Path) -> list[fetch.Message]:
    if source.is_dir():
        return [m for f in sorted(source.glob("*.patch")) for m in fetch.read_mbox(f)]
    return fetch.read_mbox(source)


def _all_patches(source: Path) -> list[tuple[str, str]]:
    first = fetch.build_series(_messages(source), str(source))
    found = []
    for rev in first.revisions:
        series = fetch.build_series(_messages(source), str(source), rev)
        found += [(f"v{rev} {p.index}/{p.total}", p.diff) for p in series.patches]
    return found


def test_there_are_fixtures() -> None:
    assert len(SOURCES) >= 8, SOURCES


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_diffstat_equals_git_apply_numstat(source: Path, tmp_path: Path) -> None:
    patches = _all_patches(source)
    assert patches
    for where, diff in patches:
        ours = [None if f.binary else (f.added, f.removed) for f in parse_diff(diff, where)]
        assert ours == numstat_of(diff, tmp_path), where
