#!/usr/bin/env python3
"""A second, different series on the same base, with --run-on vm (issue 34: "costs <= 0.55x the first").

On the 6.12 tree, two one-patch series on the same base, each changing lib/vdso/getrandom.c (so each
has its own patched kernel to build and boot), reviewed one after the other with one cache, as a
maintainer or a bot worker does:
  `review SERIES --tree LINUX --tests vDSO:vdso_test_getrandom --env plain,timens --run-on vm --bench-runs 0`
- first: the first series on its base, so the whole base side is its own: the base's kernel (the base is a new
  commit each round, one comment line in lib/vdso/getrandom.c with the run's time: its image is in no cache, and
  is built incrementally in the kernel cache's build directory, as a list's new base is), the base's and the
  series' selftests built, both kernels booted;
- second: the base's kernel image, selftest build and rows kept from the first (the report's `where` says from
  when), the second series' selftests built on top of the base's, only its own kernel built and booted.
With WORKTREES=kept (the default) the reviews keep their worktrees (`git config reviewer.reuseWorktrees true`, as
a maintainer reviewing a list or a bot worker would set it): the second series' apply resets the first's worktree to
the base instead of checking out some 20,000 files of the tree again (3-18 s here, where creating a file on this
machine's file system costs 60-900 us); WORKTREES=throwaway measures the default of a one-off review.
The kernel cache is the real tier's (REVIEWER_BOOT_CACHE, default /var/tmp/reviewer-boot-6.12: its x86_64 guest
build directory and ccache are warm once the tier, bench/vm_cost.py or this bench ran), so no review pays for a
cold kernel build. With BASE=cached the base is the tree's HEAD instead, whose image the cache already holds
(the first measurement of 2026-12-06): then the first review's base side is its selftests and its boot only.
Cost is shown as wall time and as CPU time (each review in a cgroup of its own, bench/_meter.py: make, gcc and
QEMU in the sandbox counted), since on 2 cores the two guests of the first review boot side by side: the base
guest costs a core, not wall time. The bench checks that both reports give the same base results. Each pair
runs ROUNDS times (default 2) with fresh caches (a new HOME) and new series; medians are printed.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from _common import BIN, env, kernel, scratch

from bench._cli import usage
from bench._kernel import BOOT_CACHE, commit, edit_series, git, show
from bench._meter import STEP, Meter

ROUNDS = int(os.environ.get("ROUNDS", "2"))
SRC = "lib/vdso/getrandom.c"
FLAGS = "\t/* Handle unexpected flags by falling back to the kernel. */\n"
TEST = "vDSO:vdso_test_getrandom"
NEW_BASE = os.environ.get("BASE", "new") != "cached"
KEPT = os.environ.get("WORKTREES", "kept") != "throwaway"


def review(meter: Meter, mbox: Path, linux: Path, environ: dict[str, str]) -> tuple[float, float, dict[str, object]]:
    """(wall seconds, CPU seconds of the review and everything it started, the JSON report)."""
    argv = [str(BIN / "review"), str(mbox), "--tree", str(linux), "--tests", TEST, "--env", "plain,timens",
            "--run-on", "vm", "--bench-runs", "0", "--no-checkpatch", "--format", "json"]
    start, clock = time.perf_counter(), time.time()
    done = subprocess.run(meter.wrap("review", argv), env=environ, capture_output=True, text=True, check=False, timeout=7200)
    wall, end = time.perf_counter() - start, time.time()
    time.sleep(2 * STEP)  # a sample after the end
    if done.returncode not in (0, 1, 6):  # 6: the first series fails the test on purpose (a slower, syscall-only getrandom())
        raise RuntimeError(f"review exited {done.returncode}: {done.stderr[-2000:]}")
    return wall, meter.cpu("review", clock, end), json.loads(done.stdout)


def new_base(linux: Path, head: str, stamp: str) -> str:
    """A commit on HEAD that only this round's reviews have seen: a comment line at the top of SRC."""
    text = show(linux, head, SRC)
    first, rest = text.split("\n", 1)
    return commit(linux, head, {SRC: f"{first}\n/* The base of bench/base_reuse.py's {stamp}. */\n{rest}"},
                  f"vdso: getrandom: A base of its own ({stamp})")


def listed(doc: dict[str, object], key: str) -> list[dict[str, Any]]:
    """The report's list KEY (selftests: its rows; stages)."""
    out = doc[key]
    assert isinstance(out, list)
    return out


def base_rows(doc: dict[str, object]) -> dict[str, tuple[str, str]]:
    return {r["env"]: (r["result"], r["reason"]) for r in listed(doc, "selftests") if r["tree"] == "base" and r["name"] == TEST}


def kept_rows(doc: dict[str, object]) -> int:
    return sum("; kept from " in r["where"] for r in listed(doc, "selftests") if r["tree"] == "base")


def main() -> None:
    usage(__doc__)
    linux = kernel()
    head = git(linux, "rev-parse", "HEAD").strip()
    firsts, seconds, cpu1, cpu2 = [], [], [], []
    run = time.strftime("%Y%m%dT%H%M%S")  # in every edit: no kernel image or apply of an earlier run of this bench is reused
    meter = Meter(["review"], "reuse")
    meter.start()
    try:
        for n in range(ROUNDS):
            base = new_base(linux, head, f"run {run} round {n}") if NEW_BASE else head
            w1, c1, w2, c2 = pair(meter, linux, base, f"{run} round {n}", n)
            firsts.append(w1), seconds.append(w2), cpu1.append(c1), cpu2.append(c2)
    finally:
        meter.close()
    m1, m2, k1, k2 = (statistics.median(x) for x in (firsts, seconds, cpu1, cpu2))
    said = ("a new base each round" if NEW_BASE else "the base's kernel image already cached (BASE=cached)") + (
        ", worktrees kept" if KEPT else ", throw-away worktrees (WORKTREES=throwaway)")
    print(f"\n## A second series on the same base, --run-on vm ({said}; median of {ROUNDS} rounds; load {os.getloadavg()[0]:.1f})")
    print(f"  {'':<34} {'first':>9} {'second':>9} {'ratio':>7}  target")
    print(f"  {'wall seconds':<34} {m1:>9.1f} {m2:>9.1f} {m2 / m1:>6.2f}x  <= 0.55x")
    cpu = f"{k1:>9.1f} {k2:>9.1f} {k2 / k1:>6.2f}x" if meter.grouped else "(no cgroup could be made here)"
    print(f"  {'CPU seconds (review + children)':<34} {cpu}  <= 0.55x")


def pair(meter: Meter, linux: Path, base: str, stamp: str, n: int) -> tuple[float, float, float, float]:
    """The two series of round N on BASE: (first's wall, first's CPU, second's wall, second's CPU)."""
    with scratch("reuse") as tmp:
        work = Path(tmp)
        environ = {**env(work / "home"), "REVIEWER_BOOT_CACHE": BOOT_CACHE, "TMPDIR": str(work)}
        if KEPT:  # the reviews' global git config (HOME is the round's own)
            (work / "home" / ".gitconfig").write_text("[reviewer]\n\treuseWorktrees = true\n")
        one, _ = edit_series(linux, base, SRC, FLAGS, f"\t/* {stamp}: all to the kernel. */\n\tgoto fallback_syscall;\n\n"
                             + FLAGS, "vdso: getrandom: Always use the syscall", "A slower vDSO getrandom().", work / "one.mbox")
        two, _ = edit_series(linux, base, SRC, FLAGS, f"\t/* {stamp}: unknown flags go to the kernel. */\n",
                             "vdso: getrandom: Reword a comment", "Words only.", work / "two.mbox")
        w1, c1, d1 = review(meter, one, linux, environ)
        w2, c2, d2 = review(meter, two, linux, environ)
        same = base_rows(d1) == base_rows(d2)
        print(f"  round {n + 1}: first {w1:.1f} s ({c1:.1f} s CPU), second {w2:.1f} s ({c2:.1f} s CPU): "
              f"{w2 / w1:.2f}x wall, {c2 / c1:.2f}x CPU; base rows kept in the second: {kept_rows(d2)}; "
              f"same base results: {'yes' if same else 'NO'}", flush=True)
        if not same:
            raise SystemExit(f"the base results differ: {base_rows(d1)} != {base_rows(d2)}")
        for label, d in (("first", d1), ("second", d2)):
            said = (f"{st['name']} {st['seconds']:.1f} s" for st in listed(d, "stages") if st["seconds"] >= 0.1)
            ran = (f"{r['tree']}/{r['env']} {r['seconds']:.1f} s" for r in listed(d, "selftests"))
            print(f"    {label}: {', '.join(said)}; rows: {', '.join(ran)}", flush=True)
        return w1, c1, w2, c2


if __name__ == "__main__":
    main()
