#!/usr/bin/env python3
"""Every benchmark, one after the other: `python3 bench/run_all.py` (RUNS=N for N runs each;
default 5, the full-tree apply at most 3). Needs the real 6.12 tree (Debian's linux-source-6.12,
built into a git repository once, as the real-kernel tests do) and public-inbox for the cache
benchmark; build_cost builds x86_64 kernels once per state (about 5 minutes on 2 cores); list_day replays a
list's day of SERIES series (default 100) through the review bot with x86_64 builds (15 to 30 minutes on 2 cores;
SERIES=10 for a short run). Prints one table per benchmark; docs/benchmarks.md records them."""
from __future__ import annotations

import datetime as dt
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import apply_full_tree  # noqa: E402
import build_cost  # noqa: E402
import cache_second_review  # noqa: E402
import checkpatch_parallel  # noqa: E402
import interrupt  # noqa: E402
import list_day  # noqa: E402
import rules_scaling  # noqa: E402
import static_vs_b4  # noqa: E402

from bench._cli import usage  # noqa: E402

BENCHES = (static_vs_b4, apply_full_tree, rules_scaling, cache_second_review, checkpatch_parallel, interrupt, build_cost, list_day)


def main() -> None:
    print(f"# reviewer benchmarks, {dt.date.today()}, {os.cpu_count()} cores, {platform.machine()}, "
          f"Python {platform.python_version()}, {platform.system()} {platform.release()}")
    start = time.perf_counter()
    for bench in BENCHES:
        bench.main()
    print(f"\n(all benchmarks: {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    usage(__doc__)
    main()
