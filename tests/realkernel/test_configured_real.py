"""An incremental kernel build keeps its configuration only when `make` alone would give the same one
(boot/configured.py), on the real 6.12 tree: a commit changing C only builds without tinyconfig +
olddefconfig, one changing a Kconfig default configures again and gets the new default, which `make`
alone (syncconfig keeps a value .config already has) would not."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

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


def test_a_c_change_keeps_the_configuration_and_a_kconfig_default_change_does_not(linux: Path, linux_head: str) -> None:
    lines = kconfig.fragment(symbols([BUILTIN[0]]), "plain")  # the dmapool kernel's: the build directory the boot tests use
    cmdline, printk, init = (show(linux, linux_head, p) for p in ("lib/cmdline.c", "kernel/printk/printk.c", "init/Kconfig"))
    assert init.count(DEFAULT) == 1
    token = f"{time.time_ns()}"  # new commits every run: never an image the cache already has
    first = commit(linux, linux_head, {"lib/cmdline.c": cmdline + f"/* {token} */\n"}, f"lib/cmdline: a comment {token}\n", AUTHOR)
    second = commit(linux, first, {"kernel/printk/printk.c": printk + f"/* {token} */\n"}, f"printk: a comment {token}\n", AUTHOR)
    third = commit(linux, second, {"init/Kconfig": init.replace(DEFAULT, "\trange 12 25\n\tdefault 16\n")},
                   f"init/Kconfig: a smaller log buffer {token}\n", AUTHOR)
    git_dir, out = common_dir(linux), CACHE / "build-plain"
    with srctree.locked(CACHE):
        built = {c: images.build(git_dir, c, "plain", lines, CACHE, kconfig.BUILD_TIMEOUT) for c in (first, second)}
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
