"""CPU seconds of a benchmark's processes and everything they start, sampled over time: one cgroup each.

getrusage() misses what runs in the review's sandbox (bwrap exits before its PID namespace's init is reaped:
reviewer/hostload.py), and a process that moved to a session of its own still belongs to its cgroup. So each
process to measure is started inside a cgroup of its own (`Meter.wrap`, a shell that writes its PID into the
group and execs the command), and a thread reads each group's CPU counter every STEP seconds: cgroup v1's cpuacct
(`cpuacct.usage`, ns) or cgroup v2 (`cpu.stat` `usage_usec`). Where no cgroup can be made (not root, no cgroup
file system), only the whole machine's busy time (/proc/stat) is read, and the groups read 0.

The sampler also notes the modification times of the files WATCH (glob patterns) at each sample: what a run
rewrote, and when (list_day.py: each build directory's .config, which only a Kconfig run writes).

`Meter.close` kills whatever is left in the groups (by PID: they are the benchmark's processes) and removes them.
"""
from __future__ import annotations

import bisect
import contextlib
import glob
import os
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path

V1 = Path("/sys/fs/cgroup/cpuacct")
V2 = Path("/sys/fs/cgroup")
STEP = 0.5
MACHINE = "machine"  # the whole machine's busy CPU seconds, always sampled


class Meter:
    """A cgroup per NAME under one of the benchmark's own, and a sampler thread once start() is called."""

    def __init__(self, names: Sequence[str], tag: str, watch: Sequence[str] = ()) -> None:
        self.names = tuple(names)
        self.watch = tuple(watch)
        self.written: set[tuple[str, float]] = set()  # (path, mtime) of the WATCH files, as seen
        self.root = _make_root(f"reviewer-bench-{tag}-{os.getpid()}")
        for name in self.names if self.root else ():
            (self.root / name).mkdir()
        self.times: list[float] = []
        self.rows: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="meter", daemon=True)

    @property
    def grouped(self) -> bool:
        return self.root is not None

    def wrap(self, name: str, argv: Sequence[str]) -> list[str]:
        """ARGV run inside NAME's group (ARGV itself where there are no groups)."""
        if self.root is None:
            return list(argv)
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.root / name / "cgroup.procs"), *argv]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()

    def cpu(self, name: str, start: float, end: float) -> float:
        """CPU seconds NAME (or MACHINE) used between two time.time() instants, interpolated between samples."""
        return self.at(name, end) - self.at(name, start)

    def at(self, name: str, when: float) -> float:
        if not self.times:
            return 0.0
        i = bisect.bisect_left(self.times, when)
        if i == 0:
            return self.rows[0][name]
        if i == len(self.times):
            return self.rows[-1][name]
        t0, t1 = self.times[i - 1], self.times[i]
        v0, v1 = self.rows[i - 1][name], self.rows[i][name]
        return v0 + (v1 - v0) * (when - t0) / (t1 - t0) if t1 > t0 else v1

    def close(self) -> list[int]:
        """Stop sampling, kill what is left in the groups and remove them; the PIDs that had to be killed."""
        self.stop()
        if self.root is None:
            return []
        killed: list[int] = []
        deadline = time.monotonic() + 30
        while (left := [p for n in self.names for p in _procs(self.root / n)]) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed += [p for p in left if p not in killed]
            time.sleep(0.1)
        for name in self.names:
            with contextlib.suppress(OSError):
                (self.root / name).rmdir()
        with contextlib.suppress(OSError):
            self.root.rmdir()
        return killed

    def _sample(self) -> None:
        while True:
            self._read()
            if self._stop.wait(STEP):
                self._read()
                return

    def _read(self) -> None:
        row = {MACHINE: machine_busy()}
        for name in self.names:
            row[name] = _usage(self.root / name) if self.root else 0.0
        self.times.append(time.time())
        self.rows.append(row)
        for pattern in self.watch:
            for path in glob.glob(pattern):
                with contextlib.suppress(OSError):
                    self.written.add((path, os.stat(path).st_mtime))

    def writes(self) -> list[float]:
        """When the WATCH files were written (time.time), as the samples saw them."""
        return sorted({at for _, at in self.written})


def machine_busy() -> float:
    """CPU seconds the whole machine spent busy since boot (user, nice, system, irq, softirq, steal)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    ticks = sum(int(f) for i, f in enumerate(fields[:8]) if i not in (3, 4))  # not idle, not iowait
    return ticks / os.sysconf("SC_CLK_TCK")


def _make_root(name: str) -> Path | None:
    for base in (V1, V2):
        probe = base / ("cpuacct.usage" if base == V1 else "cgroup.controllers")
        if not probe.exists():
            continue
        try:
            (base / name).mkdir()
        except OSError:
            continue
        return base / name
    return None


def _usage(group: Path) -> float:
    try:
        if (group / "cpuacct.usage").exists():
            return int((group / "cpuacct.usage").read_text()) / 1e9
        stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
        return int(stat["usage_usec"]) / 1e6
    except (OSError, KeyError, ValueError):
        return 0.0


def _procs(group: Path) -> list[int]:
    try:
        return [int(p) for p in (group / "cgroup.procs").read_text().split()]
    except OSError:
        return []
