#!/usr/bin/env python3
"""The check stage (load the rules, every Python check, evaluate every rule) on generated series of
10, 100 and 500 patches (bench/rules_500.py's realistic patches: Kconfig, Makefile, a new .c file,
a header). The baseline is the 10-patch series; growth must be linear, so the time per patch
must stay flat."""
from __future__ import annotations

import dataclasses

from _common import median, table
from rules_500 import patch_diff, series

from reviewer.checks import run_checks
from reviewer.rules import RULES_DIR, evaluate, load_rules

SIZES = (10, 100, 500)


def main() -> None:
    diffs = [patch_diff(i) for i in range(1, max(SIZES) + 1)]
    full = series(diffs)
    rows = []
    first: float | None = None
    for n in SIZES:
        part = dataclasses.replace(full, total=n, patches=tuple(dataclasses.replace(p, total=n) for p in full.patches[:n]))

        def stage(s=part) -> int:  # type: ignore[no-untyped-def]
            rules = load_rules(RULES_DIR)
            return len(list(run_checks(s, None))) + len(list(evaluate(rules, s, None)))

        secs = median(stage)
        first = first or secs / n
        rows.append((f"{n} patches", secs, (secs / n) / first, f"{1000 * secs / n:.2f} ms per patch"))
    table("Check stage vs series size (ratio: time per patch against the 10-patch series; linear = ~1)", rows)


if __name__ == "__main__":
    main()
