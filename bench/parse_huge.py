#!/usr/bin/env python3
"""Time the diff parser on a 50,000-line patch, against reading the same text line by line.

Prints the median of several runs and the ratio to the baseline measured in this process.
Target: well under a second of parser time on the project's 2-core machines.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._cli import usage
from reviewer.series.patchparse import parse_diff

RUNS = 5


def huge_diff(lines: int) -> str:
    """One new file of LINES added lines (tests/unit/series/test_patchparse.py parses the same shape)."""
    body = "".join(f"+int v{i} = {i};\n" for i in range(lines))
    return ("diff --git a/big.c b/big.c\nnew file mode 100644\nindex 0000000..1111111\n"
            f"--- /dev/null\n+++ b/big.c\n@@ -0,0 +1,{lines} @@\n{body}")


def timed(fn, arg) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn(arg)
    return time.perf_counter() - start


def main() -> None:
    text = huge_diff(50_000)
    baseline = statistics.median(timed(lambda t: [ln.split(" ") for ln in t.splitlines()], text) for _ in range(RUNS))
    parse = statistics.median(timed(parse_diff, text) for _ in range(RUNS))
    print(f"{'what':<34}{'median s':>10}{'ratio':>8}")
    print(f"{'baseline: split 50,000 lines':<34}{baseline:>10.3f}{1.0:>8.1f}")
    print(f"{'parse_diff, 50,000 added lines':<34}{parse:>10.3f}{parse / baseline:>8.1f}")


if __name__ == "__main__":
    usage(__doc__)
    main()
