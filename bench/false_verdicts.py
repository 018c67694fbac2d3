#!/usr/bin/env python3
"""How often a review says "slower" or "faster" where there is nothing to find (issue 30).

`review demo --format json` is an A/A review: the demo's LoongArch series cannot be booted here, so
both sides' benchmarks (vdso_test_getrandom bench-single, plain and timens: 6 rows a review) run the
same program on this machine's kernel. Any slower/faster verdict in it is false. The script runs
REVIEWS such reviews under each load: 0, 1, 2 ... CPU hogs (python busy loops, started before the
review and stopped by PID after it; other work as far as the review can tell) and prints per load
how the rows were judged, and what two other rules would have said of the same figures:
- "stats only": the statistics without the busy-host rule (p < alpha and the interval beyond the threshold);
- "old rule": the rule before issue 30, on the first 3 runs a side: the ranges apart and the median ratio
  beyond the threshold.

    python3 bench/false_verdicts.py [--reviews 4] [--hogs 0,1,2] [--save rows.json]

The issue's criterion: with two hogs, 4 reviews give no slower/faster verdict.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, env  # noqa: E402

HOG = "while True: pass"


def hogs(count: int) -> list[subprocess.Popen[bytes]]:
    """COUNT CPU hogs in sessions of their own: not the review's children, so other work to it."""
    return [subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True) for _ in range(count)]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()


def review(home: Path) -> tuple[dict[str, Any], float]:
    """One `review demo --format json` of this checkout's code, its report and wall time."""
    args = [sys.executable, "-m", "reviewer", "demo", "--format", "json"]
    start = time.monotonic()
    done = subprocess.run(args, env={**env(home), "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"review demo: exit {done.returncode}\n{done.stderr[-2000:]}")
    return json.loads(done.stdout), time.monotonic() - start


def old_rule(b: dict[str, Any]) -> bool:
    """The verdict before issue 30, on the first 3 runs a side: every patched run beyond every base run, and the
    ratio of the medians beyond the threshold (either way)."""
    base, patched, limit = b["base_runs"][:3], b["patched_runs"][:3], b["threshold"] or 1.25
    if len(base) < 2 or len(patched) < 2:
        return False
    ratio = statistics.median(patched) / statistics.median(base)
    return bool((min(patched) > max(base) and ratio > limit) or (max(patched) < min(base) and ratio < 1 / limit))


def stats_only(b: dict[str, Any]) -> bool:
    """What the statistics alone say, the busy-host rule aside."""
    if b["p"] is None or b["interval"] is None:
        return False
    lo, hi = b["interval"]
    return bool(b["p"] < b["alpha"] and (lo > b["threshold"] or hi < 1 / b["threshold"]))


def tally(docs: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [b for d in docs for b in d["benchmarks"]]
    loads = [d["benchmarks"][0]["host_load"] for d in docs if d["benchmarks"] and d["benchmarks"][0]["host_load"]]
    return {"rows": len(rows), "verdicts": Counter(b["verdict"] for b in rows), "stats": sum(map(stats_only, rows)),
            "old": sum(map(old_rule, rows)), "others": [ld["others"] for ld in loads], "idle": [ld["idle"] for ld in loads],
            "false_reviews": sum(any(b["verdict"] in ("slower", "faster") for b in d["benchmarks"]) for d in docs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reviews", type=int, default=4, help="reviews per load")
    ap.add_argument("--hogs", default="0,1,2", help="CPU hogs per load, comma-separated")
    ap.add_argument("--save", type=Path, help="write every review's benchmark rows to this JSON file")
    opts = ap.parse_args()
    print(f"# false verdicts: {opts.reviews} A/A reviews (review demo --format json) per load, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    print(f"{'hogs':>4} {'reviews':>7} {'rows':>5} {'false':>5} {'slower':>6} {'faster':>6} {'busy':>5} {'no-chg':>6} "
          f"{'stats only':>10} {'old rule':>8} {'others CPUs':>14} {'idle CPUs':>12} {'s/review':>8}")
    saved: dict[str, list[Any]] = {}
    for count in (int(h) for h in opts.hogs.split(",")):
        docs, secs = [], []
        with tempfile.TemporaryDirectory(prefix="false-verdicts-") as tmp:
            for i in range(opts.reviews):
                procs = hogs(count)
                try:
                    time.sleep(1.0 if count else 0)  # the hogs at full speed before the review starts
                    doc, took = review(Path(tmp) / f"home-{i}")
                finally:
                    stop(procs)
                docs.append(doc)
                secs.append(took)
        t = tally(docs)
        saved[str(count)] = [d["benchmarks"] for d in docs]
        v = t["verdicts"]
        print(f"{count:>4} {opts.reviews:>7} {t['rows']:>5} {t['false_reviews']:>5} {v['slower']:>6} {v['faster']:>6} "
              f"{v['busy-host']:>5} {v['no-change']:>6} {t['stats']:>10} {t['old']:>8} {_span(t['others']):>14} "
              f"{_span(t['idle']):>12} {statistics.median(secs):>8.1f}", flush=True)
    if opts.save:
        opts.save.write_text(json.dumps(saved, indent=1))
    print("\nfalse: reviews with a slower/faster verdict; busy: rows not judged (the machine was busy); stats only: rows the "
          "statistics alone would have judged; old rule: rows the pre-issue-30 rule (3 runs a side, ranges) would have judged")


def _span(values: list[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}" if values else "-"


if __name__ == "__main__":
    main()
