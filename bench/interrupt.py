#!/usr/bin/env python3
"""The first Ctrl-C on the full 6.12 tree: from the signal to the exit of `review --tests vDSO`, when it
comes during the patched worktree's checkout (apply) and during the selftests' build (two broad
sparse worktrees, make running), against the baseline of what the old clean-up waited for:
`git worktree remove --force` of the same two worktrees (the issue measured 11-48 s for the whole
old clean-up). Also: when the background deletion is done ($TMPDIR empty again). Everything runs in
a `git clone --shared` of the cached tree (its top-level files checked out), so the cache is never touched.
Target (issue 13): the first Ctrl-C ends within 5 s. Printed, not asserted."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from _common import BIN, RUNS, commit, env, format_patch, git, kernel, scratch, show, table

from bench._cli import usage
from bench._procs import making, our_worktrees, processes_in
from reviewer.apply import worktree

TEST = "tools/testing/selftests/vDSO/vdso_test_getrandom.c"


def _series(repo: Path, where: Path) -> Path:
    base = git(repo, "rev-parse", "HEAD").strip()
    tip = commit(repo, base, {TEST: "/* Interrupted on purpose. */\n" + show(repo, base, TEST)},
                 "selftests/vDSO: Say so\n\nSigned-off-by: Bench Author <bench@example.org>\n")
    return format_patch(repo, base, tip, where)


def interrupted(clone: Path, mbox: Path, tmp: Path, environ: dict[str, str], moment: Callable[[int], bool]) -> tuple[float, float, float]:
    """(seconds from SIGINT to the line, to the exit, to an empty $TMPDIR) for a review signalled when MOMENT(pid)."""
    tmp.mkdir(exist_ok=True)
    proc = subprocess.Popen([BIN / "python", "-m", "reviewer", mbox, "--tree", clone, "--tests", "vDSO", "--no-checkpatch", "--format",
                             "json"],
                            env={**environ, "TMPDIR": str(tmp)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    until = time.monotonic() + 600
    while not moment(proc.pid):
        if proc.poll() is not None or time.monotonic() > until:
            raise RuntimeError(f"review ended (exit {proc.returncode}) before the moment to signal: {proc.stderr.read().decode()}")
        time.sleep(0.02)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.stderr.readline()  # "review: interrupted, cleaning up"
    said = time.monotonic() - sent
    if proc.wait(timeout=300) != 130:
        raise RuntimeError(f"exit {proc.returncode}")
    ended = time.monotonic() - sent
    while any(tmp.iterdir()) and time.monotonic() < sent + 300:
        time.sleep(0.05)
    return said, ended, time.monotonic() - sent


def remove_force(clone: Path, tmp: Path) -> tuple[float, int]:
    """(seconds, files) of `git worktree remove --force` of two worktrees like the review's (broad sparse, on HEAD)."""
    touched = [TEST]
    made = []
    for _ in range(2):
        wt = tmp / f"wt{len(made)}"
        worktree.git(clone, "worktree", "add", "--detach", "--no-checkout", "--quiet", str(wt), "HEAD")
        worktree._set_sparse(wt, worktree.sparse_patterns(touched))
        worktree.git(wt, *worktree.options(wt), "checkout", "--quiet", "--detach", "HEAD")
        made.append(wt)
    files = sum(len(f) for wt in made for _, _, f in os.walk(wt))
    start = time.monotonic()
    for wt in made:
        worktree.git(clone, "worktree", "remove", "--force", str(wt))
    return time.monotonic() - start, files


def median3(samples: list[tuple[float, ...]], i: int) -> float:
    return sorted(s[i] for s in samples)[len(samples) // 2]


def main() -> None:
    runs = min(RUNS, 3)  # each run checks out two worktrees of ~25,000 files
    with scratch("interrupt") as work_dir:
        work = Path(work_dir)
        environ = env(work / "home")
        linux = kernel()
        clone = work / "linux"
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(linux), str(clone)], env=environ, check=True)
        # A kernel tree has Makefile, MAINTAINERS and arch/ at its top (--tree checks): the top's files and one small
        # directory of arch/, 67 files, are enough, and take 0.2 s instead of a whole checkout.
        git(clone, "sparse-checkout", "set", "arch/x86/entry/vdso")
        git(clone, "checkout", "-q")
        mbox = _series(clone, work / "series.mbox")
        tmp = work / "tmp"

        def checking_out(_: int) -> bool:
            return bool(our_worktrees(clone, tmp)) and any(
                Path(f"/proc/{p}/comm").read_text().strip() == "git" for p in processes_in(tmp) if os.path.exists(f"/proc/{p}"))

        build = [interrupted(clone, mbox, tmp, environ, lambda _: making(tmp)) for _ in range(runs)]
        apply = [interrupted(clone, mbox, tmp, environ, checking_out) for _ in range(runs)]
        tmp.mkdir(exist_ok=True)
        baseline, checked_out = sorted(remove_force(clone, tmp) for _ in range(runs))[runs // 2]
        files = git(clone, "ls-tree", "-r", "--name-only", "HEAD").count("\n")
    rows = [("baseline: git worktree remove --force, both worktrees", baseline, 1.0, f"{checked_out} files; the old clean-up's least")]
    for name, samples in (("build", build), ("apply", apply)):
        rows += [(f"Ctrl-C during {name}: to 'interrupted, cleaning up'", median3(samples, 0), None, ""),
                 (f"Ctrl-C during {name}: to the exit", median3(samples, 1), median3(samples, 1) / baseline, "target: < 5 s"),
                 (f"Ctrl-C during {name}: until $TMPDIR is empty", median3(samples, 2), None, "the rest deleted in the background")]
    table(f"First Ctrl-C on the 6.12 tree ({files} files), --tests vDSO", rows, runs)


if __name__ == "__main__":
    usage(__doc__)
    main()
