"""`review --boot` end to end on the real 6.12 tree: a dmapool series that slows dma_pool_alloc()
down is built and booted on base and patched, and the report shows the per-size ratios.

The base kernel image is shared with test_boot_real.py through REVIEWER_BOOT_CACHE (same
commit, same config), so only the patched side is (incrementally) built here.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from tests.helpers import review
from tests.realkernel.kernel import BOOT_CACHE as CACHE
from tests.realkernel.kernel import commit, format_patch, show

pytestmark = [pytest.mark.slow, pytest.mark.boot]
AUTHOR = "Slow Poke <slow@example.org>"


def test_review_boot_dmapool(linux: Path, linux_head: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = show(linux, linux_head, "mm/dmapool.c")
    old = "\t}\n\tspin_unlock_irqrestore(&pool->lock, flags);\n\n\t*handle = block->dma;"
    assert old in src
    slow = src.replace(old, "\t}\n\tfor (int i = 0; i < 400; i++)\n\t\tbarrier();\n\tspin_unlock_irqrestore(&pool->lock, "
                            "flags);\n\n\t*handle = block->dma;", 1)
    tip = commit(linux, linux_head, {"mm/dmapool.c": slow},
                 f"mm/dmapool: Spin before handing out a block\n\nOn purpose.\n\nSigned-off-by: {AUTHOR}\n", AUTHOR)
    mbox = format_patch(linux, linux_head, tip, tmp_path / "slow.mbox")
    listed = review(mbox, "--tree", linux, "--no-tests", "--no-checkpatch", "--format", "json", tmp=tmp_path / "t0").json()
    stage = next(st for st in listed["stages"] if st["name"] == "boot")
    assert stage["status"] == "skipped" and "would boot dmapool_test" in stage["detail"] and "--boot" in stage["detail"]
    assert "boot:dmapool_test" in [c["test"] for c in listed["selftests_chosen"]]

    monkeypatch.setenv("REVIEWER_BOOT_CACHE", CACHE)
    result = review(mbox, "--tree", linux, "--no-tests", "--no-checkpatch", "--boot", "--format", "json", tmp=tmp_path / "t1")
    assert result.rc in (ExitStatus.OK, ExitStatus.FINDINGS), result.stderr
    doc = result.json()
    assert next(st for st in doc["stages"] if st["name"] == "boot")["status"] == "ok"
    ratios = [b for b in doc["benchmarks"] if b["name"] == "dmapool_test" and b["env"] == "plain"]
    assert ratios and all(b["base"] > 0 and b["patched"] > 0 and b["ratio"] > 0 for b in ratios)
    assert any(b["ratio"] > 1.25 for b in ratios)  # 400 spins per allocation show
    assert any(f["rule"] == "benchmarks" and "dmapool_test" in f["message"] for f in doc["findings"])
    assert doc["boot"]["accel"] in ("kvm", "tcg") and "DMAPOOL_TEST" in " ".join(doc["boot"]["config"]["plain"])
    # Each row names the kernel it ran on: its side's own commit, booted (not the host's kernel).
    where = {r["tree"]: r["where"] for r in doc["selftests"] if r["name"] == "boot:dmapool_test"}
    accel = doc["boot"]["accel"]
    assert where["base"] == f"booted {linux_head[:12]} x86_64 {accel}"
    assert where["patched"].startswith("booted ") and where["patched"].endswith(f" x86_64 {accel}") and where["patched"] != where["base"]
    assert all(b["where"].startswith(f"booted x86_64 {accel}: base {linux_head[:12]}, patched ") for b in ratios)
    result.assert_nothing_left()
