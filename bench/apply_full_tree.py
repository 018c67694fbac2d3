#!/usr/bin/env python3
"""The apply check on the full 6.12 tree (~87,000 files): `review --tree` vs b4's sparse apply
(`b4 shazam -H`: a sparse temporary worktree, git am, fetched into FETCH_HEAD) vs a full
`git worktree add` + `git am` (the baseline). A 20-patch series of real code; everything runs in a
`git clone --shared --no-checkout` of the cached tree, so the cache is never touched.
Target: review's apply no slower than b4's sparse apply. `--no-cache`: every run applies for
real (a cached apply outcome would need no worktree at all)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from _common import BIN, RUNS, env, kernel, median, real_series, scratch, sh, table

from bench._cli import usage


def main() -> None:
    runs = min(RUNS, 3)  # a full checkout of the tree takes ~15 s
    with scratch("apply") as tmp:
        work = Path(tmp)
        environ = env(work / "home")
        linux = kernel()
        base, mbox = real_series(linux, 20, work / "series.mbox", "--thread=shallow")
        clone = work / "linux"
        sh(["git", "clone", "-q", "--shared", "--no-checkout", linux, clone], environ)
        wt = work / "wt"

        def full() -> None:
            sh(["git", "-C", clone, "worktree", "add", "-q", "--detach", wt, base], environ)
            sh(["git", "-C", wt, "am", "-q", mbox], environ)
            sh(["git", "-C", clone, "worktree", "remove", "--force", wt], environ)

        stages: list[float] = []

        def ours() -> None:
            out = sh([BIN / "review", mbox, "--tree", clone, "--no-tests", "--no-checkpatch", "--no-cache", "--format", "json"], environ,
                     ok=(0, 1))
            stages.append(next(s["seconds"] for s in json.loads(out)["stages"] if s["name"] == "apply"))

        baseline = median(full, runs)
        b4 = median(lambda: sh([BIN / "b4", "--offline-mode", "-q", "shazam", "-m", mbox, "-H"], environ, cwd=clone), runs)
        review = median(ours, runs)
        shutil.rmtree(wt, ignore_errors=True)
    stage = sorted(stages)[len(stages) // 2]
    table("Apply check of a 20-patch series on the full 6.12 tree", [
        ("git worktree add + git am + worktree remove", baseline, 1.0, "baseline: full checkout"),
        ("b4 shazam -m MBOX -H (sparse worktree, FETCH_HEAD)", b4, b4 / baseline, "b4's sparse apply"),
        ("review --tree --no-tests --no-checkpatch (whole command)", review, review / baseline, f"{review / b4:.2f}x b4 shazam"),
        ("  of which the apply stage", stage, stage / baseline, f"{stage / b4:.2f}x b4 shazam; target <= 1.0x"),
    ], runs)


if __name__ == "__main__":
    usage(__doc__)
    main()
