"""The build directories of a kernel cache are pruned: the least recently used go beyond KEEP_BUILDS."""
from __future__ import annotations

import os
from pathlib import Path

from reviewer.compile import steps


def test_prune_keeps_the_current_and_the_most_recently_used(tmp_path: Path) -> None:
    dirs = []
    for n in range(steps.KEEP_BUILDS + 3):
        d = tmp_path / f"check-x86_64-{n:012x}"
        d.mkdir()
        (d / ".reviewer-used").touch()
        os.utime(d / ".reviewer-used", (1000 + n, 1000 + n))
        dirs.append(d)
    (tmp_path / f"{dirs[1].name}.building").touch()
    (tmp_path / "src").mkdir()  # the source checkout and ccache are not build directories
    (tmp_path / "ccache").mkdir()
    steps._prune(tmp_path, keep=dirs[0])  # the oldest, but the one just used
    left = sorted(d.name for d in tmp_path.glob("check-*"))
    assert left == sorted([dirs[0].name, *(d.name for d in dirs[-(steps.KEEP_BUILDS - 1):])])
    assert (tmp_path / "src").is_dir() and (tmp_path / "ccache").is_dir()
