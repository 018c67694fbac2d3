"""The registry (reviewer/kernel/arches.py) against the 6.12 tree: every architecture's arch/ directory, vDSO
directories (the make targets --build asks for) and guest image paths are where the tree has them."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.kernel import arches

pytestmark = [pytest.mark.slow]  # the 6.12 repository: made once (about a minute), then cached


@pytest.mark.parametrize("a", arches.ARCHES, ids=[a.name for a in arches.ARCHES])
def test_the_registrys_paths_are_the_trees(linux: Path, a: arches.Arch) -> None:
    assert (linux / "arch" / a.srcarch / "Makefile").is_file()
    for d in a.vdso:
        assert (linux / d / "Makefile").is_file(), d
    if a.bootable and a.image != "vmlinux":  # boot/ holds the image's Makefile rules
        assert (linux / Path(a.image).parent).is_dir(), a.image
