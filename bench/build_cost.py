#!/usr/bin/env python3
"""The build stage's cost per patch (issue 16: "bench/ prints the per-patch build cost for a 4-patch
series on 2 cores: cold, warm (ccache), and incremental, against `make W=1 <objects>` done by hand
once per patch (the floor)").

The series: four patches of real 6.12 code, one comment each in four files x86_64's tinyconfig
always compiles (lib/sort.c, lib/cmdline.c, kernel/panic.c, kernel/notifier.c: obj-y/lib-y, so the
configuration is plain tinyconfig). As a command, with interpreter start-up:
`review SERIES --tree LINUX --build --no-tests --no-checkpatch --format json`, in three states of its
kernel cache (REVIEWER_BOOT_CACHE, a temporary directory; the user's is never touched):
- cold: an empty cache: a new source checkout, an empty ccache, configure and kbuild's prepare;
- warm: a fresh build directory (the cache's check-* removed) but the source checkout and the ccache kept;
- incremental: the same review again, everything kept.
The seconds per patch are the JSON's steps 1-4 (`builds[].steps[].seconds`: checkout of the commit,
then make of the series' objects); the base step, the build stage and the whole command are shown too.
The floor, by hand: a `git clone --shared` of the tree, its base written out with
`git --work-tree=DIR checkout -f COMMIT -- .`, `make O=OUT ARCH=x86_64 tinyconfig` once, then for the
base and each patch the same checkout and `make W=1 -j2 <the four objects>` (no ccache: make's own
timestamps rebuild just the patch's object). Each state and the floor run once: kernel builds
take minutes, so the numbers are as noisy as the machine is busy (the load average is printed).
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import AUTHOR, BIN, env, kernel, scratch, sh, table

from bench._cli import usage
from bench._kernel import commit, format_patch, git, show

FILES = ("lib/sort.c", "lib/cmdline.c", "kernel/panic.c", "kernel/notifier.c")
OBJECTS = tuple(p[:-2] + ".o" for p in FILES)
JOBS = 2


def series(repo: Path, where: Path) -> tuple[list[str], Path]:
    """The four patches on HEAD, one file each; (the base and the four commits, the mbox)."""
    shas = [git(repo, "rev-parse", "HEAD").strip()]
    for i, path in enumerate(FILES, 1):
        text = show(repo, shas[-1], path)
        at = text.rindex("\n\nstatic ") + 2  # after a blank line, before the last top-level static definition
        text = text[:at] + f"/* Build bench {i}: a comment for readers. */\n" + text[at:]
        msg = f"{path.rsplit('/', 1)[0]}: {Path(path).stem}: Add a comment\n\nA comment for readers.\n\nSigned-off-by: {AUTHOR}\n"
        shas.append(commit(repo, shas[-1], {path: text}, msg, author=AUTHOR))
    return shas, format_patch(repo, shas[0], shas[-1], where, "--thread=shallow")


@dataclass(frozen=True)
class Floor:
    setup: float  # clone + full checkout of the base
    configure: float  # make tinyconfig
    steps: list[float]  # checkout + make, the base first
    checkouts: list[float]


@dataclass(frozen=True)
class State:
    steps: list[float]  # the JSON's, the base first
    stage: float  # the build stage
    wall: float  # the whole command
    ccache: str
    detail: str  # the build stage's


def floor(repo: Path, shas: list[str], work: Path, environ: dict[str, str]) -> Floor:
    """By hand: setup (clone + full checkout), tinyconfig once, then checkout + make per step."""
    clone, src, out = work / "floor.git", work / "floor-src", work / "floor-out"
    start = time.perf_counter()
    sh(["git", "clone", "-q", "--shared", "--no-checkout", repo, clone], environ)
    src.mkdir()
    sh(["git", "-C", clone, f"--work-tree={src}", "checkout", "-q", "-f", shas[0], "--", "."], environ)
    setup = time.perf_counter() - start
    make: list[str | Path] = ["make", "-s", "-C", src, f"O={out}", "ARCH=x86_64"]
    start = time.perf_counter()
    sh([*make, "tinyconfig"], environ)
    configure = time.perf_counter() - start
    steps, checkouts = [], []
    for sha in shas:
        start = time.perf_counter()
        sh(["git", "-C", clone, f"--work-tree={src}", "checkout", "-q", "-f", sha, "--", "."], environ)
        checkouts.append(time.perf_counter() - start)
        sh([*make, "W=1", f"-j{JOBS}", *OBJECTS], environ)
        steps.append(time.perf_counter() - start)
    if missing := [o for o in OBJECTS if not (out / o).is_file()]:
        raise RuntimeError(f"the floor's make built no {', '.join(missing)}")
    return Floor(setup, configure, steps, checkouts)


def review(mbox: Path, repo: Path, cache: Path, environ: dict[str, str], work: Path) -> tuple[dict[str, Any], float]:
    """One `review --build` with CACHE as the kernel cache: (its JSON, its wall time)."""
    cmd: list[str | Path] = [BIN / "review", mbox, "--tree", repo, "--build", "--no-tests", "--no-checkpatch", "--format", "json"]
    start = time.perf_counter()
    out = sh(cmd, {**environ, "REVIEWER_BOOT_CACHE": str(cache)}, cwd=work, ok=(0, 1))
    return json.loads(out), time.perf_counter() - start


def steps_of(doc: dict[str, Any], state: str) -> list[float]:
    """The five steps' seconds (base first), after checking that the build did what the floor does."""
    builds = doc["builds"]
    stage = next(s for s in doc["stages"] if s["name"] == "build")
    problem = ""
    if stage["status"] != "ok" or len(builds) != 1 or builds[0]["target"] != "x86_64":
        problem = f"build stage {stage['status']}: {stage['detail']}; targets {[b['target'] for b in builds]}"
    else:
        steps = builds[0]["steps"]
        wrong = [s for s in steps if s["status"] != "built" or sorted(s["goals"]) != sorted(OBJECTS)]
        if len(steps) != len(FILES) + 1 or wrong:
            problem = f"steps {[(s['patch'], s['status'], s['goals'], s['detail']) for s in steps]}"
    found = [f for f in doc["findings"] if str(f["rule"]).startswith("build/")]
    if problem:
        raise RuntimeError(f"{state}: {problem}\nfindings: {found}")
    if found:
        print(f"{state}: unexpected build findings: {found}")
    return [float(s["seconds"]) for s in builds[0]["steps"]]


def ccache_stats(cache: Path) -> str:
    """Hits and misses since the last zeroing, from the cache's ccache."""
    store = cache / "ccache"
    if not store.is_dir() or shutil.which("ccache") is None:
        return "no ccache"
    text = subprocess.run(["ccache", "--print-stats"], env={**os.environ, "CCACHE_DIR": str(store)},
                          capture_output=True, text=True, check=True).stdout
    stats = dict(ln.split("\t", 1) for ln in text.splitlines() if "\t" in ln)
    hits = int(stats.get("direct_cache_hit", 0)) + int(stats.get("preprocessed_cache_hit", 0))
    return f"ccache {hits} hits, {stats.get('cache_miss', '0')} misses"


def zero(cache: Path) -> None:
    if (cache / "ccache").is_dir() and shutil.which("ccache"):
        subprocess.run(["ccache", "-z"], env={**os.environ, "CCACHE_DIR": str(cache / "ccache")}, capture_output=True, check=True)


def main() -> None:
    linux = kernel()
    load = os.getloadavg()
    with scratch("build") as tmp:
        work = Path(tmp)
        environ = env(work / "home")
        shas, mbox = series(linux, work / "series.mbox")
        cache = work / "kernel-cache"
        results: dict[str, State] = {}
        for state in ("cold", "warm", "incremental"):
            if state == "warm":  # a fresh build directory, the source checkout and ccache kept
                for p in cache.glob("check-*"):
                    if p.is_dir() and not p.is_symlink():
                        shutil.rmtree(p)
                    else:
                        p.unlink()
            zero(cache)
            doc, wall = review(mbox, linux, cache, environ, work)
            stage = next(s for s in doc["stages"] if s["name"] == "build")
            results[state] = State(steps_of(doc, state), float(stage["seconds"]), wall, ccache_stats(cache), stage["detail"])
            if state == "cold":
                b = doc["builds"][0]
                print(f"review's build: {b['toolchain']}, config on top of tinyconfig: {b['config'] or 'nothing'}")
        size = subprocess.run(["du", "-sh", cache], capture_output=True, text=True, check=False).stdout.split("\t")[0]
        hand = floor(linux, shas, work, environ)
    end = os.getloadavg()
    print(f"series: {len(FILES)} patches ({', '.join(FILES)}), x86_64 tinyconfig, -j{JOBS} on {os.cpu_count()} cores; "
          f"load average {load[0]:.2f} before, {end[0]:.2f} after (others' builds share the cores: noisy, one run each)")
    print(f"review's kernel cache after the three runs: {size}")
    show_results(hand, results)


def show_results(hand: Floor, results: dict[str, State]) -> None:
    """The per-step lines and the three tables (per patch, the base step, the whole)."""
    per_patch = statistics.mean(hand.steps[1:])
    base = hand.configure + hand.steps[0]
    whole = hand.setup + hand.configure + sum(hand.steps)
    print("floor steps (checkout + make W=1): " + ", ".join(f"{_step(i)} {s:.1f} s (checkout {c:.1f})"
                                                           for i, (s, c) in enumerate(zip(hand.steps, hand.checkouts, strict=True))))
    for state, r in results.items():
        print(f"{state} steps (JSON): " + ", ".join(f"{_step(i)} {s:.1f} s" for i, s in enumerate(r.steps)) + f"; {r.ccache}; "
              f"stage: {r.detail}")

    table(f"Build cost per patch: review --build, 4-patch series, x86_64, {JOBS} jobs", [
        ("floor: checkout + make W=1 -j2 <4 objects>, patches 1-4", per_patch, 1.0, "baseline (mean)"),
        *((f"review, {state}: steps 1-4 (JSON)", statistics.mean(r.steps[1:]), statistics.mean(r.steps[1:]) / per_patch,
           f"mean; max {max(r.steps[1:]):.1f} s") for state, r in results.items()),
    ], runs=1)
    table("The base step: configuration, kbuild's prepare and the 4 objects", [
        ("floor: make tinyconfig + checkout + make W=1 (base)", base, 1.0, f"baseline; tinyconfig {hand.configure:.1f} s"),
        *((f"review, {state}: step 0 (JSON)", r.steps[0], r.steps[0] / base,
           "configures" if state != "incremental" else "configured before") for state, r in results.items()),
    ], runs=1)
    table("The whole: base + 4 patches", [
        ("floor: clone, checkout, tinyconfig, base, 4 patches", whole, 1.0, f"baseline; clone + checkout {hand.setup:.1f} s"),
        *(row for state, r in results.items() for row in (
            (f"review, {state}: the build stage (JSON)", r.stage, r.stage / whole, f"{r.stage / len(FILES):.1f} s per patch"),
            (f"review, {state}: the whole command (wall)", r.wall, r.wall / whole, f"{r.wall / len(FILES):.1f} s per patch"),
        )),
    ], runs=1)


def _step(i: int) -> str:
    return "base" if not i else f"{i}"


if __name__ == "__main__":
    usage(__doc__)
    main()
