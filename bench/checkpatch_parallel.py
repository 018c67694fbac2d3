#!/usr/bin/env python3
"""The tree's checkpatch.pl on a 20-patch series of real 6.12 code: patches in parallel (one
thread per core, each around a perl process) vs one after the other (the baseline)."""
from __future__ import annotations

import os
from pathlib import Path

from _common import kernel, median, real_series, scratch, table

from bench._cli import usage
from reviewer.kernelscripts import Options, review
from reviewer.series import fetch
from reviewer.store.results import OFF  # the scripts themselves, every time: not the results cache


def main() -> None:
    linux = kernel()
    with scratch("checkpatch") as tmp:
        _, mbox = real_series(linux, 20, Path(tmp) / "series.mbox", "--thread=shallow")
        series = fetch.build_series(fetch.read_mbox(mbox), str(mbox))
    cores = os.cpu_count() or 1
    serial = median(lambda: review(series, linux, Options(get_maintainer=False, jobs=1, cache=OFF)))
    parallel = median(lambda: review(series, linux, Options(get_maintainer=False, jobs=cores, cache=OFF)))
    both = median(lambda: review(series, linux, Options(jobs=cores, cache=OFF)))
    table(f"checkpatch.pl on 20 patches, {cores} cores", [
        ("serial (1 job)", serial, 1.0, "baseline"),
        (f"parallel ({cores} jobs)", parallel, parallel / serial, f"{serial / parallel:.2f}x faster"),
        (f"checkpatch.pl + get_maintainer.pl, parallel ({cores} jobs)", both, both / serial, "what a --tree review runs"),
    ])


if __name__ == "__main__":
    usage(__doc__)
    main()
