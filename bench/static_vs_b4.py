#!/usr/bin/env python3
"""Static review (parse + rules + JSON, no tree) of a local mbox vs `b4 am -m MBOX -o DIR` on the
same mbox: both as the commands a user runs, interpreter start-up included.
Target: review within 1.5x of b4 am."""
from __future__ import annotations

from pathlib import Path

from _common import BIN, ROOT, env, kernel, median, real_series, scratch, sh, table

from bench._cli import usage


def main() -> None:
    with scratch("static") as tmp:
        work = Path(tmp)
        environ = env(work / "home")
        mboxes = {"demo series, 4 patches": ROOT / "fixtures/series/loongarch-vdso-getrandom-v4.mbox",
                  "real 6.12 code, 20 patches": real_series(kernel(), 20, work / "twenty.mbox", "--thread=shallow")[1]}
        rows = []
        out = work / "am"
        for name, mbox in mboxes.items():
            b4 = median(lambda m=mbox: sh([BIN / "b4", "--offline-mode", "-q", "am", "-m", m, "-o", out], environ, cwd=work))
            ours = median(lambda m=mbox: sh([BIN / "review", m, "--format", "json"], environ, cwd=work, ok=(0, 1)))
            rows += [(f"b4 am -m ({name})", b4, 1.0, "baseline"),
                     (f"review --format json ({name})", ours, ours / b4, "target <= 1.5x")]
        table("Static review vs b4 am on the same mbox", rows)


if __name__ == "__main__":
    usage(__doc__)
    main()
