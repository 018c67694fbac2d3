"""How busy the machine was while a benchmark ran, with our own work told apart from everyone else's.

A benchmark's figures mean something only if the host gave it the CPU it asked for. On a shared
machine other work (another user's build, a CPU hog, a hypervisor stealing time from this VM)
stretches some runs and not others, and a few stretched runs can look like a slowdown. So the
benchmark stages read the machine before and after their runs (`read()`, then `since()`):

- /proc/stat: the CPU time the whole machine spent busy (user, nice, system, irq, softirq; a
  guest's time is already inside user) and the time the hypervisor stole from it;
- getrusage(): the CPU time of this process and of its waited-for descendants; plus what ran in the
  sandbox (the benchmark programs, the QEMU guests: count_ours()), which getrusage() never sees: bwrap
  exits before its PID namespace's init is reaped, and init's reaper is not us;
- /proc/pressure/cpu: the time some task waited for a CPU (PSI; ours included, so a figure only);
- /proc/loadavg: the 1-minute load average, a figure only (it counts our own runnable tasks).

Other work = machine busy time minus ours. The host was busy when other work (plus stolen time)
took at least OTHERS_BUSY CPUs on average AND left less than FREE_BUSY CPUs idle: then the
benchmark competed for a CPU. Our own load never counts, however much it is (two guests at once,
bench-multi's 256 threads): it is subtracted before anything is compared. A machine with idle
CPUs left over is not busy either, however much else runs there.
"""
from __future__ import annotations

import os
import resource
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

# Other work (and stolen time) of at least this many CPUs, on average over the runs, with fewer than FREE_BUSY CPUs
# left idle: the benchmark had to share. Measured on the 2-core CI machine (bench/false_verdicts.py): a review alone
# leaves others at 0.0-0.1 CPU; one CPU hog makes it ~1, two ~1.3, with no CPU left idle.
OTHERS_BUSY = 0.5
FREE_BUSY = 0.5
PROC = Path("/proc")


@dataclass(frozen=True)
class Reading:
    """One look at the machine: monotonic seconds, CPU seconds busy / stolen on the whole machine, ours, PSI's some."""
    at: float
    busy: float
    steal: float
    ours: float
    pressure: float | None  # seconds some task waited for a CPU, since boot (None: no PSI here)
    load: float  # the 1-minute load average


@dataclass(frozen=True)
class HostLoad:
    """The machine between two readings: seconds of wall clock, and in CPUs (CPU seconds per second) on average:
    what other work used, what the hypervisor stole, what was left idle; the share of the time some task waited
    for a CPU; the load average before and after."""
    seconds: float
    cpus: int
    others: float
    stolen: float
    idle: float
    waiting: float | None
    load: tuple[float, float]

    @property
    def busy(self) -> bool:
        """Other work competed with ours for the CPUs (the module's doc)."""
        return self.others + self.stolen >= OTHERS_BUSY and self.idle < FREE_BUSY

    def text(self) -> str:
        """The figures, as the verdict quotes them: "other work used 1.3 of 2 CPUs, 0.0 idle, CPU pressure 97%, ..."."""
        waiting = f", tasks waited for a CPU {self.waiting:.0%} of the time" if self.waiting is not None else ""
        stolen = f", {self.stolen:.1f} stolen by the hypervisor" if self.stolen >= 0.05 else ""
        return (f"other work used {self.others:.1f} of {self.cpus} CPUs{stolen}, {self.idle:.1f} left idle{waiting}, "
                f"load {self.load[0]:.1f} -> {self.load[1]:.1f}, over {self.seconds:.0f} s")

    def document(self) -> dict[str, object]:
        return {"seconds": round(self.seconds, 1), "cpus": self.cpus, "others": round(self.others, 2), "stolen": round(self.stolen, 2),
                "idle": round(self.idle, 2), "waiting": round(self.waiting, 3) if self.waiting is not None else None,
                "load": list(self.load), "busy": self.busy}


@dataclass
class _Tally:
    """CPU seconds our sandboxed programs used (a process-wide count, as getrusage()'s are); threads add to it."""
    seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


_SANDBOXED = _Tally()


def count_ours(seconds: float) -> None:
    """Add SECONDS of CPU time that a program of ours used out of getrusage()'s sight (the sandbox's)."""
    with _SANDBOXED.lock:
        _SANDBOXED.seconds += seconds


def cpu_of(proc_dir: str) -> float:
    """The CPU seconds of the process at PROC_DIR (a /proc/PID directory) and of the children it waited for."""
    line = Path(proc_dir, "stat").read_text()
    fields = line[line.rindex(")") + 2 :].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime (fields 14-17)


def read() -> Reading:
    """The machine now (see the module's doc)."""
    busy, steal = _cpu_seconds()
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with _SANDBOXED.lock:
        ours = me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime + _SANDBOXED.seconds
    return Reading(time.monotonic(), busy, steal, ours, _pressure(), _load())


def since(before: Reading, after: Reading | None = None) -> HostLoad:
    """The machine from BEFORE to AFTER (default: now). Descendants still running at AFTER are not counted as ours
    yet (getrusage() knows of a child once it was waited for): a benchmark's programs and guests have all ended then."""
    after = after or read()
    wall = max(after.at - before.at, 1e-6)
    cpus = cpu_count()
    busy, stolen = (after.busy - before.busy) / wall, (after.steal - before.steal) / wall
    others = max(0.0, busy - (after.ours - before.ours) / wall)
    waiting = (after.pressure - before.pressure) / wall if after.pressure is not None and before.pressure is not None else None
    return HostLoad(wall, cpus, others, stolen, max(0.0, cpus - busy - stolen), waiting, (before.load, after.load))


def cpu_count() -> int:
    """The CPUs /proc/stat counts (the machine's, not this process's affinity: other work may run on any of them)."""
    lines = _stat_lines()
    return sum(1 for ln in lines if ln.startswith("cpu") and ln[3:4].isdigit()) or os.cpu_count() or 1


def _cpu_seconds() -> tuple[float, float]:
    """(busy, stolen) CPU seconds of the whole machine since boot, from /proc/stat's first line."""
    fields = [int(x) for x in _stat_lines()[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    hz = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / hz, steal / hz


def _stat_lines() -> list[str]:
    return (PROC / "stat").read_text().splitlines()


def _pressure() -> float | None:
    """PSI's `some total=` for the CPU, in seconds; None where the kernel has no PSI (CONFIG_PSI off, psi=0)."""
    try:
        text = (PROC / "pressure" / "cpu").read_text()
    except OSError:
        return None
    some = next((ln for ln in text.splitlines() if ln.startswith("some ")), "")
    total = next((f.removeprefix("total=") for f in some.split() if f.startswith("total=")), None)
    return int(total) / 1e6 if total is not None and total.isdigit() else None


def _load() -> float:
    return float((PROC / "loadavg").read_text().split()[0])
