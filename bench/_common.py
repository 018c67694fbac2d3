"""Shared by the benchmark scripts: timing (median of RUNS), a plain table, the real kernel tree
and series generated from its code, and a hermetic environment for `review` and b4."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._kernel import IDENTITY, commit, ensure_repo, format_patch, git, show  # noqa: E402

RUNS = int(os.environ.get("RUNS", "5"))
BIN = Path(sys.executable).parent
AUTHOR = "Bench Author <bench@example.org>"


def median(fn: Callable[[], object], runs: int = RUNS) -> float:
    """The median wall time of RUNS calls of FN, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def table(title: str, rows: Sequence[tuple[str, float, float | None, str]], runs: int = RUNS) -> None:
    """Print (what, seconds, ratio to the baseline, note) rows under TITLE."""
    print(f"\n## {title} (median of {runs} runs)")
    print(f"{'':2}{'what':<58} {'seconds':>9} {'ratio':>7}  note")
    for what, secs, ratio, note in rows:
        r = f"{ratio:.2f}x" if ratio is not None else "-"
        print(f"  {what:<58} {secs:>9.3f} {r:>7}  {note}")
    sys.stdout.flush()


def env(home: Path) -> dict[str, str]:
    """A private HOME and XDG dirs (fresh caches, no user config) and a pinned git identity."""
    out = {**os.environ, **IDENTITY, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
           "XDG_STATE_HOME": str(home / ".local/state"), "GIT_CONFIG_NOSYSTEM": "1", "NO_COLOR": "1"}
    out["GIT_COMMITTER_NAME"], out["GIT_COMMITTER_EMAIL"] = "Bench", "bench@example.org"
    home.mkdir(parents=True, exist_ok=True)
    return out


def sh(args: Sequence[str | Path], environ: dict[str, str], cwd: Path | None = None, ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run([str(a) for a in args], env=environ, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        raise RuntimeError(f"{' '.join(map(str, args))}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return done.stdout


# Files whose change makes a believable series: one driver each, far apart in MAINTAINERS.
FILES = [
    "drivers/net/dummy.c", "drivers/net/ifb.c", "drivers/net/veth.c", "drivers/net/vxlan/vxlan_core.c", "drivers/net/macvlan.c",
    "drivers/net/tun.c", "drivers/net/geneve.c", "drivers/net/netconsole.c", "drivers/net/loopback.c", "drivers/net/bonding/bond_main.c",
    "drivers/char/mem.c", "drivers/char/random.c", "drivers/block/loop.c", "drivers/block/null_blk/main.c", "mm/dmapool.c",
    "lib/vsprintf.c", "kernel/fork.c", "fs/pipe.c", "fs/eventfd.c", "net/ipv4/tcp.c",
]


def real_series(repo: Path, count: int, where: Path, *extra: str) -> tuple[str, Path]:
    """A COUNT-patch series on HEAD, each patch commenting a real function of a real file; (base, mbox)."""
    base = git(repo, "rev-parse", "HEAD").strip()
    tip = base
    for i in range(count):
        path = FILES[i % len(FILES)]
        text = show(repo, tip, path)
        at = text.index("\nstatic ", len(text) // 2) + 1
        text = text[:at] + f"/* Bench patch {i + 1}: what follows is unchanged. */\n" + text[at:]
        msg = f"{path.rsplit('/', 1)[0].replace('/', ': ')}: Comment patch {i + 1}\n\nA comment for readers.\n\nSigned-off-by: {AUTHOR}\n"
        tip = commit(repo, tip, {path: text}, msg, author=AUTHOR)
    return base, format_patch(repo, base, tip, where, *extra)


def kernel() -> Path:
    return ensure_repo()


def scratch(prefix: str) -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix=f"reviewer-bench-{prefix}-")
