"""In-kernel tests on the real 6.12 tree: tinyconfig kernels built and booted under QEMU (issue 8).

Budget (2 cores): one full tinyconfig build per environment for the base, incremental
rebuilds for every patched side (the private checkout rewrites only the changed files), and
boots of seconds under KVM. The base images are cached by commit, so the panic, hang and
second-environment cases rebuild only their patched side. REVIEWER_BOOT_CACHE moves the cache.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewer import boot
from reviewer.boot import runner
from reviewer.ktap import Result
from reviewer.model import Level
from tests.realkernel.kernel import BOOT_CACHE, commit, git, show

# qemu-system-x86 comes with ./dev deps (.ci/run): a missing QEMU fails these tests, it does not skip them.
pytestmark = [pytest.mark.slow, pytest.mark.boot]
CACHE = Path(BOOT_CACHE)
FIXTURES = os.environ.get("REVIEWER_BOOT_FIXTURES")
AUTHOR = "Slow Poke <slow@example.org>"
# A bound, not a target: TCG-sized even where /dev/kvm answers its ioctls, since the first boot may
# still find that KVM does not boot guests (qemu.kvm_works) and fall back to TCG (CI: debug dmapool, 120 s cut it).
BOOT_TIMEOUT = 300.0
HANG_TIMEOUT = 30.0


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


@pytest.fixture(scope="session")
def trees(linux: Path, linux_head: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Worktrees (sparse, as the pipeline makes them) at the base and at one commit per series."""
    dmapool, dtest, cmdline = (show(linux, linux_head, p) for p in ("mm/dmapool.c", "mm/dmapool_test.c", "lib/cmdline.c"))
    slow = _edit(_edit(dmapool, "\tunsigned long flags;\n\n\tmight_alloc",
                       "\tunsigned long flags;\n\tunsigned int spins;\n\n\tmight_alloc"),
                 "\t}\n\tspin_unlock_irqrestore(&pool->lock, flags);\n\n\t*handle = block->dma;",
                 "\t}\n\t/* Give a concurrent free a chance to land first. */\n\tfor (spins = 0; spins < 200; spins++)\n\t\tbarrier();\n"
                 "\tspin_unlock_irqrestore(&pool->lock, flags);\n\n\t*handle = block->dma;")
    checks = "\tret = dev_set_name(&test_dev, \"dmapool-test\");"
    commits = {
        "base": linux_head,
        "slow": commit(linux, linux_head, {"mm/dmapool.c": slow}, "mm/dmapool: spin a little before handing out a block\n", AUTHOR),
        "panic": commit(linux, linux_head, {"mm/dmapool_test.c": _edit(dtest, checks, "\tBUG_ON(ARRAY_SIZE(pool_parms) > 0);\n" + checks)},
                        "mm/dmapool_test: assert something false\n", AUTHOR),
        "hang": commit(linux, linux_head, {"mm/dmapool_test.c": _edit(dtest, checks, "\tfor (;;)\n\t\tcpu_relax();\n" + checks)},
                       "mm/dmapool_test: spin forever\n", AUTHOR),
        "broken": commit(linux, linux_head, {"mm/dmapool.c": _edit(dmapool, "\t*handle = block->dma;", "\t*handle = blok->dma;")},
                         "mm/dmapool: a typo\n", AUTHOR),
        "cmdline": commit(linux, linux_head,
                          {"lib/cmdline.c": _edit(cmdline, " * Helper functions generally used", " * Helper functions commonly used")},
                          "lib/cmdline: reword the licence comment\n", AUTHOR),
    }
    root = tmp_path_factory.mktemp("boot-trees")
    made = {}
    try:
        for name, rev in commits.items():
            wt = root / name
            git(linux, "worktree", "add", "--detach", "--no-checkout", "--quiet", str(wt), rev)
            git(wt, "sparse-checkout", "set", "--no-cone", "/*", "!/*/", "/mm/", "/lib/")
            git(wt, "checkout", "--quiet", "--detach", rev)
            made[name] = wt
        yield made
    finally:
        for wt in made.values():
            git(linux, "worktree", "remove", "--force", str(wt))


def _no_qemu_left() -> None:
    """No VM of ours runs on (a zombie is not a VM; another session's VMs boot from another cache)."""
    ps = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True, check=True).stdout
    assert not [ln for ln in ps.splitlines() if "qemu-system" in ln and f"{CACHE}/" in ln and not ln.startswith("Z")]


def _run(trees: dict[str, Path], name: str, touched: list[str], envs: tuple[str, ...], timeout: float, tmp_path: Path,
         save: dict[str, str] | None = None) -> runner.BootResults:
    start = time.monotonic()
    out = boot.run_intests(trees["base"], trees[name], touched, envs, CACHE, timeout, log_dir=tmp_path)
    print(f"\n{name} {envs}: {time.monotonic() - start:.1f}s, accel {out.accel}")
    for r in out.runs:
        print(f"  {r.tree:8} {r.env:6} {r.test:22} {r.result:8} {r.seconds:7.1f}s {r.reason[:100]}")
    for b in out.benchmarks:
        print(f"  {b.env:6} {b.metric:32} {b.base}us -> {b.patched}us  x{b.ratio:.2f}" if b.ratio else f"  {b}")
    for f in out.findings:
        print(f"  [{f.level}] {f.message[:200]}")
    _no_qemu_left()
    if FIXTURES:  # REVIEWER_BOOT_FIXTURES=fixtures/boot refreshes the consoles tests/unit/boot/test_console.py reads
        for side, fixture in (save or {}).items():
            shutil.copyfile(out.logs[side], Path(FIXTURES) / fixture)
    return out


@pytest.mark.parametrize("env", ["plain", "debug"])
def test_dmapool_ratios(trees: dict[str, Path], env: str, tmp_path: Path) -> None:
    save = {"base/plain": "dmapool-base.log", "patched/plain": "dmapool-slow.log"} if env == "plain" else {}
    out = _run(trees, "slow", ["mm/dmapool.c"], (env,), BOOT_TIMEOUT, tmp_path, save)
    assert [t.name for t, _ in out.tests] == ["dmapool_test"]
    assert out.config[env][-1] == "CONFIG_DMAPOOL_TEST=y"
    runs = {(r.tree, r.test): r for r in out.runs}
    assert runs["base", "boot:dmapool_test"].result is Result.PASS
    assert runs["patched", "boot:dmapool_test"].result is Result.PASS
    assert len(runs["base", "boot:dmapool_test"].subtests) == 6
    cases = {b.metric: b for b in out.benchmarks}
    assert "size:16 align:16 blocks:8192" in cases and len(cases) == 6
    assert all(b.ratio is not None and b.env == env for b in cases.values())
    if env == "plain":  # 200 more steps on every allocation: several times slower in each case
        assert all(b.ratio > 1.5 for b in cases.values()), cases  # type: ignore[operator]
        assert any(f.rule == "benchmarks" and f.level is Level.WARNING for f in out.findings)
    # In debug, SLUB_DEBUG_ON turns on DMAPOOL_DEBUG, whose poisoning of every block dwarfs the spin.
    assert not [f for f in out.findings if f.level is Level.ERROR]
    assert Path(out.logs[f"patched/{env}"]).read_text().count("dmapool test:") == 6


def test_panic_in_test_is_an_error(trees: dict[str, Path], tmp_path: Path) -> None:
    start = time.monotonic()
    out = _run(trees, "panic", ["mm/dmapool_test.c"], ("plain",), BOOT_TIMEOUT, tmp_path, {"patched/plain": "panic.log"})
    errors = [f for f in out.findings if f.level is Level.ERROR]
    assert any("patched" in f.message and re.search(r"kernel BUG at mm/dmapool_test\.c|invalid opcode", f.message + "\n".join(f.quote))
               for f in errors), errors
    assert not [f for f in errors if "base" in f.message]
    patched = next(r for r in out.runs if r.tree == "patched" and r.test == "boot:dmapool_test")
    assert patched.result is Result.FAIL and patched.reason == "kernel BUG at mm/dmapool_test.c:109!"
    assert time.monotonic() - start < 600


def test_hang_is_killed_at_the_timeout(trees: dict[str, Path], tmp_path: Path) -> None:
    out = _run(trees, "hang", ["mm/dmapool_test.c"], ("plain",), HANG_TIMEOUT, tmp_path, {"patched/plain": "hang.log"})
    hung = [f for f in out.findings if f.level is Level.ERROR and "hung" in f.message]
    assert len(hung) == 1 and "patched" in hung[0].message
    patched = next(r for r in out.runs if r.tree == "patched" and r.test == "boot:dmapool_test")
    assert patched.result is Result.TIMEOUT
    assert HANG_TIMEOUT <= patched.seconds < HANG_TIMEOUT + 30


def test_kunit_suite_beside_the_touched_file(trees: dict[str, Path], tmp_path: Path) -> None:
    assert [t.name for t, _ in boot.relevant(["lib/cmdline.c"], trees["base"])] == ["kunit:cmdline"]
    out = _run(trees, "cmdline", ["lib/cmdline.c"], ("plain",), BOOT_TIMEOUT, tmp_path, {"base/plain": "kunit-cmdline.log"})
    runs = {(r.tree, r.test): r for r in out.runs}
    # The suite's cases as the tree declares them (Debian's 6.12.118 has 8, the first 6.12 tarballs 4).
    cases = re.findall(r"^\s*KUNIT_CASE\((\w+)\)", show(trees["base"], "HEAD", "lib/cmdline_kunit.c"), re.M)
    assert len(cases) >= 4
    for tree in ("base", "patched"):
        run = runs[tree, "boot:kunit:cmdline"]
        assert run.result is Result.PASS, run.reason
        assert [s.name for s in run.subtests] == cases and all(s.result is Result.PASS for s in run.subtests)
    assert not [f for f in out.findings if f.level is Level.ERROR]


def test_build_failure_names_file_and_line(trees: dict[str, Path], tmp_path: Path) -> None:
    out = _run(trees, "broken", ["mm/dmapool.c"], ("plain",), BOOT_TIMEOUT, tmp_path)
    failed = [f for f in out.findings if f.rule == "boot-build"]
    assert len(failed) == 1 and failed[0].level is Level.ERROR
    line = show(trees["base"], "HEAD", "mm/dmapool.c").splitlines().index("\t*handle = block->dma;") + 1
    assert (failed[0].path, failed[0].line) == ("mm/dmapool.c", line)
    assert "'blok' undeclared" in failed[0].message and "the patched kernel (plain) does not build" in failed[0].message
    runs = {(r.tree, r.test): r.result for r in out.runs}
    assert runs["base", "boot:dmapool_test"] is Result.PASS and runs["patched", "boot:kernel-build"] is Result.ERROR
    assert ("patched", "boot:dmapool_test") not in runs
