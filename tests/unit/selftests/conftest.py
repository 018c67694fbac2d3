"""What the selftest stage's tests share: the demo tree (fixtures/kernel-mini) with its vDSO selftests built."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.run.sandbox import Sandbox
from reviewer.selftests.run import build
from reviewer.tree.plainrepo import build_base_repo

KERNEL_MINI = Path(__file__).resolve().parents[3] / "fixtures" / "kernel-mini"


@pytest.fixture(scope="module")
def built_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tree of the module's own (a test may add programs to its vDSO folder) with the vDSO selftests built."""
    tree = tmp_path_factory.mktemp("wt") / "linux"
    build_base_repo(KERNEL_MINI, tree)
    ok, log = build(tree, ["vDSO"], Sandbox(tree.parent / "scratch"))
    assert ok, log
    return tree
