#!/usr/bin/env python3
"""Isolated worktree creation on the full 6.12 tree: our sparse worktree, and a reused one
(git config reviewer.reuseWorktrees), vs a plain `git worktree add` (+ remove); medians of
several runs, ratios against the plain one.

Needs Debian's linux-source-6.12 (the real-kernel test tier builds the repository once).
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._cli import usage
from bench._kernel import ensure_repo  # noqa: E402
from reviewer.apply import worktree

RUNS = 3
TOUCHED = ["arch/loongarch/vdso/vdso.lds.S", "arch/loongarch/Kconfig", "tools/testing/selftests/vDSO/Makefile"]


def plain(repo: Path) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "--detach", f"{tmp}/wt", "HEAD"], check=True)
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", f"{tmp}/wt"], check=True)
        return time.perf_counter() - start


def sparse(repo: Path) -> float:
    start = time.perf_counter()
    with worktree.isolated(repo, "HEAD", TOUCHED):
        pass
    return time.perf_counter() - start


def reused(repo: Path, root: Path) -> float:
    start = time.perf_counter()
    with worktree.cached(repo, "HEAD", TOUCHED, root):
        pass
    return time.perf_counter() - start


def main() -> None:
    repo = ensure_repo()
    files = int(subprocess.run(["git", "-C", str(repo), "ls-files"], capture_output=True, text=True, check=True).stdout.count("\n"))
    base = statistics.median(plain(repo) for _ in range(RUNS))
    ours = statistics.median(sparse(repo) for _ in range(RUNS))
    with tempfile.TemporaryDirectory() as root:
        first = reused(repo, Path(root))
        again = statistics.median(reused(repo, Path(root)) for _ in range(RUNS))
        for slot in Path(root).glob("*/*"):
            if slot.is_dir():
                subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", "--force", str(slot)], check=True)
    print(f"tree: {repo} ({files} files), {RUNS} runs each, create + remove")
    print(f"{'what':<46}{'median s':>10}{'ratio':>8}")
    print(f"{'baseline: git worktree add + remove (full)':<46}{base:>10.2f}{1.0:>8.2f}")
    print(f"{'reviewer: sparse isolated worktree':<46}{ours:>10.2f}{ours / base:>8.2f}")
    print(f"{'reviewer: reused worktree, first run':<46}{first:>10.2f}{first / base:>8.2f}")
    print(f"{'reviewer: reused worktree, later runs':<46}{again:>10.2f}{again / base:>8.2f}")


if __name__ == "__main__":
    usage(__doc__)
    main()
