#!/usr/bin/env python3
"""The check stage (every Python check, then every rule) on generated series of 10, 100 and 500
patches (bench/rules_500.py's realistic patches: Kconfig, Makefile, a new .c file, a header).
The baseline is the 10-patch series; growth must be linear, so the time per patch must stay flat.

What is timed, so that the sizes compare fairly:
- not the series generation and not load_rules(): loading the rules costs the same for any
  series (~1.5 ms, a third of a 10-patch stage), so it is timed alone and printed as its own row;
- a cold `re` cache before every stage, as in a `review` process, which checks one series: re
  keeps 512 compiled patterns, enough for all the interpolated regexes of 10 or 100 patches
  from one run to the next but not for 500, so warm runs flattered the small series only;
- each sample repeats the stage until it has checked at least 500 patches, so that the 10-patch
  samples (a few ms each) are not mostly timer and scheduler noise.
"""
from __future__ import annotations

import dataclasses
import re

from _common import median, table
from rules_500 import patch_diff, series

from bench._cli import usage
from reviewer.checks import run_checks
from reviewer.model import Series
from reviewer.rules import RULES_DIR, Rule, evaluate, load_rules

SIZES = (10, 100, 500)


def check_stage(part: Series, rules: tuple[Rule, ...], repeat: int) -> int:
    """REPEAT cold check stages of PART; the number of findings of the last one."""
    found = 0
    for _ in range(repeat):
        re.purge()
        found = len(list(run_checks(part, None))) + len(list(evaluate(rules, part, None)))
    return found


def main() -> None:
    full = series([patch_diff(i) for i in range(1, max(SIZES) + 1)])
    rules = load_rules(RULES_DIR)
    rows = [("load_rules (once per stage, any size)", median(lambda: load_rules(RULES_DIR)), None, "fixed cost, not in the rows below")]
    first: float | None = None
    for n in SIZES:
        part = dataclasses.replace(full, total=n, patches=tuple(dataclasses.replace(p, total=n) for p in full.patches[:n]))
        repeat = max(1, max(SIZES) // n)
        secs = median(lambda part=part, repeat=repeat: check_stage(part, rules, repeat)) / repeat  # type: ignore[misc]
        first = first or secs / n
        rows.append((f"{n} patches", secs, (secs / n) / first, f"{1000 * secs / n:.3f} ms per patch"))
    table("Check stage vs series size (ratio: time per patch against the 10-patch series; linear = ~1)", rows)


if __name__ == "__main__":
    usage(__doc__)
    main()
