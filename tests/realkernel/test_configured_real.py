"""An incremental kernel build keeps its configuration only when `make` alone would give the same one
(boot/configured.py), on the real 6.12 tree: a commit changing C only builds without tinyconfig +
olddefconfig, one changing a Kconfig default configures again and gets the new default, which `make`
alone (syncconfig keeps a value .config already has) would not. The first commit is made as a review's patched
commit is, in a shadow repository (apply/worktree.py) that is removed before the next build: what is kept is
compared by what Kconfig reads, not by a diff from a commit that is gone."""
from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from reviewer.apply import worktree
from reviewer.boot.intests import BUILTIN, symbols
from reviewer.kernel import configured, images, kconfig, srctree
from reviewer.tree.git import common_dir
from tests.realkernel.kernel import BOOT_CACHE, commit, show

pytestmark = [pytest.mark.slow, pytest.mark.boot]
CACHE = Path(BOOT_CACHE)
AUTHOR = "Kernel Fixture <kernel-fixture@example.org>"
DEFAULT = "\trange 12 25\n\tdefault 17\n"  # init/Kconfig's LOG_BUF_SHIFT: an int tinyconfig sets to its default


def _shift(config: str) -> str:
    m = re.search(r"^CONFIG_LOG_BUF_SHIFT=(\d+)$", config, re.M)
    assert m, "no CONFIG_LOG_BUF_SHIFT in .config"
    return m[1]


def test_a_c_change_keeps_the_configuration_and_a_kconfig_default_change_does_not(linux: Path, linux_head: str, tmp_path: Path) -> None:
    lines = kconfig.fragment(symbols([BUILTIN[0]]), "plain")  # the dmapool kernel's: the build directory the boot tests use
    cmdline, printk, init = (show(linux, linux_head, p) for p in ("lib/cmdline.c", "kernel/printk/printk.c", "init/Kconfig"))
    assert init.count(DEFAULT) == 1
    token = f"{time.time_ns()}"  # new commits every run: never an image the cache already has
    shadow = worktree.shadow(linux, tmp_path / "shadow.git")
    first = commit(shadow, linux_head, {"lib/cmdline.c": cmdline + f"/* {token} */\n"}, f"lib/cmdline: a comment {token}\n", AUTHOR)
    both = {"lib/cmdline.c": cmdline + f"/* {token} */\n", "kernel/printk/printk.c": printk + f"/* {token} */\n"}
    second = commit(linux, linux_head, both, f"lib, printk: comments {token}\n", AUTHOR)
    third = commit(linux, second, {"init/Kconfig": init.replace(DEFAULT, "\trange 12 25\n\tdefault 16\n")},
                   f"init/Kconfig: a smaller log buffer {token}\n", AUTHOR)
    git_dir, out = common_dir(linux), CACHE / "build-plain"
    with srctree.locked(CACHE):
        built = {first: images.build(shadow, first, "plain", lines, CACHE, kconfig.BUILD_TIMEOUT)}
        shutil.rmtree(shadow)  # the review that made it has ended
        built[second] = images.build(git_dir, second, "plain", lines, CACHE, kconfig.BUILD_TIMEOUT)
        kept_config = (out / ".config").read_text()
        changed = images.build(git_dir, third, "plain", lines, CACHE, kconfig.BUILD_TIMEOUT)
    builds = (*built.values(), changed)
    assert all(b.ok and b.image is not None and b.image.is_file() for b in builds), [b.error for b in builds]
    assert not built[second].configured and built[second].problems == built[first].problems
    assert _shift(kept_config) == "17"
    assert changed.configured and _shift((out / ".config").read_text()) == "16"
    # the next build compares with the third's Kconfig inputs (what Kconfig reads changed: the stamp's changed too)
    stamp = json.loads(configured.stamp_path(out).read_text())
    assert stamp["inputs"] == configured.inputs(git_dir, third) != configured.inputs(git_dir, second)
