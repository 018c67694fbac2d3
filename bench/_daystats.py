"""bench/list_day.py's figures: read from the bot's jobs table (each build job's JSON review) and the CPU meter,
then printed as the other benches print theirs."""
from __future__ import annotations

import contextlib
import json
import sqlite3
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from bench._meter import MACHINE, Meter

BUILD_POOL = "build-x86_64"


class Planned(Protocol):
    base: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class BaseStep:
    """A build job's step 0: its base and build configuration, what it did, when (time.time) and its CPU seconds."""

    base: str
    config: tuple[str, ...]
    status: str
    seconds: float
    start: float
    cpu: float
    configured: bool  # Kconfig ran (the build directory's .config was written during the step)

    @property
    def compiled(self) -> bool:
        """make ran for it (a reused base step would take no time)."""
        return self.status in ("built", "failed") and self.seconds > 0


@dataclass
class Day:
    wall: float
    cpu: dict[str, float]  # per cgroup, and MACHINE
    grouped: bool
    base_steps: list[BaseStep] = field(default_factory=list)
    patch_steps: list[float] = field(default_factory=list)  # the seconds of each patch step built or failed
    build_other: float = 0.0  # the build stages' seconds outside their steps (the first source checkout, the goals)
    stage_seconds: Counter[str] = field(default_factory=Counter)  # pool/stage -> the reviews' stage seconds
    jobs: Counter[str] = field(default_factory=Counter)  # "stage state" -> count
    failed: list[str] = field(default_factory=list)
    kconfig_elsewhere: int = 0  # .config writes seen outside every base step
    findings: Counter[str] = field(default_factory=Counter)  # build findings by rule
    samples: dict[str, str] = field(default_factory=dict)  # a message of each build rule


def read(home: Path, meter: Meter, start: float, end: float) -> Day:
    day = Day(end - start, {n: meter.cpu(n, start, end) for n in (*meter.names, MACHINE)}, meter.grouped)
    with contextlib.closing(sqlite3.connect(f"file:{home / 'jobs.db'}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT stage, arch, state, updated, result, error FROM jobs WHERE stage != 'report'").fetchall()
    for stage, arch, state, updated, result, error in rows:
        pool = f"{stage}-{arch}" if arch else stage
        day.jobs[f"{pool} {state}"] += 1
        if state != "done":
            day.failed.append(f"{pool} {state}: {error or ''}"[:300])
            continue
        doc: dict[str, Any] = json.loads(result)["review"]
        for st in doc["stages"]:
            day.stage_seconds[f"{pool}: {st['name']}"] += st["seconds"]
        if stage == "build":
            _build_job(day, doc, float(updated), meter)
    day.base_steps.sort(key=lambda s: s.start)
    writes = meter.writes()
    day.base_steps = [replace(s, configured=any(s.start <= w <= s.start + s.seconds for w in writes)) for s in day.base_steps]
    day.kconfig_elsewhere = sum(not any(s.start <= w <= s.start + s.seconds for s in day.base_steps) for w in writes)
    return day


def _build_job(day: Day, doc: dict[str, Any], done: float, meter: Meter) -> None:
    """The job's base step, placed in time back from the job's end: the stages after build, then the patch steps."""
    names = [st["name"] for st in doc["stages"]]
    if "build" not in names:
        return
    after = sum(st["seconds"] for st in doc["stages"][names.index("build") + 1:])
    for target in doc["builds"]:
        steps = target["steps"]
        patches = [s for s in steps if s["patch"]]
        day.patch_steps += [s["seconds"] for s in patches if s["status"] in ("built", "failed")]
        day.build_other += doc["stages"][names.index("build")]["seconds"] - sum(s["seconds"] for s in steps)
        base = next((s for s in steps if s["patch"] == 0), None)
        if base is None:
            continue
        end = done - after - sum(s["seconds"] for s in patches)
        cpu = meter.cpu(BUILD_POOL, end - base["seconds"], end)
        day.base_steps.append(BaseStep(doc["apply"]["base"], tuple(target["config"]), base["status"], base["seconds"],
                                       end - base["seconds"], cpu, configured=False))
    for f in doc["findings"]:
        if f["rule"].startswith("build/"):
            day.findings[f["rule"]] += 1
            day.samples.setdefault(f["rule"], f"{f['path']}: {f['message']}"[:200])


def show(day: Day, plan: Sequence[Planned], heads: list[str], load: str) -> None:
    count, patches = len(plan), sum(len(s.files) for s in plan)
    cpu_all = sum(day.cpu[n] for n in day.cpu if n != MACHINE) if day.grouped else day.cpu[MACHINE]
    base_wall = sum(s.seconds for s in day.base_steps)
    base_cpu = sum(s.cpu for s in day.base_steps)
    firsts = _firsts(day.base_steps)
    once_wall, once_cpu = sum(s.seconds for s in firsts), sum(s.cpu for s in firsts)
    print(f"\n## A list's day through the bot: {count} series, {patches} patches, 3 bases, static + apply + build (x86_64), "
          f"mail off; one run; load before: {load}")
    print(f"  {'what':<66} {'seconds':>9} {'ratio':>7}  note")
    rows: list[tuple[str, float, float | None, str]] = [
        ("the day: bot start -> every series reported (wall)", day.wall, None, f"{count * 3600 / day.wall:,.0f} series/hour"),
        ("CPU, the bot's processes and all they started" if day.grouped else "CPU, the whole machine (no cgroup here)", cpu_all,
         cpu_all / day.wall, f"CPUs used on average; the machine's busy time {day.cpu[MACHINE]:.0f} s"),
    ]
    rows += [(f"  CPU of {name}", day.cpu[name], day.cpu[name] / cpu_all, "share of the bot's CPU") for name in day.cpu
             if day.grouped and name != MACHINE]
    rows += [
        (f"base side: the build jobs' base steps ({len(day.base_steps)}), wall", base_wall, base_wall / day.wall,
         "share of the day's wall"),
        ("  their CPU (the build pool's, over each step)", base_cpu, base_cpu / cpu_all, "share of the bot's CPU"),
        (f"  the first on each base and configuration ({len(firsts)}: the ideal), wall", once_wall, once_wall / day.wall, ""),
        ("    CPU", once_cpu, once_cpu / cpu_all, ""),
        (f"  repeated on a base and configuration built before ({len(day.base_steps) - len(firsts)}), wall", base_wall - once_wall,
         (base_wall - once_wall) / day.wall, ""),
        ("    CPU", base_cpu - once_cpu, (base_cpu - once_cpu) / cpu_all, "share of the bot's CPU"),
        (f"patch steps built ({len(day.patch_steps)}), wall", sum(day.patch_steps), sum(day.patch_steps) / day.wall, ""),
        ("the build stages outside their steps (first source checkout, goals), wall", day.build_other, day.build_other / day.wall, ""),
    ]
    for what, secs, ratio, note in rows:
        r = f"{ratio:.2f}x" if ratio is not None else "-"
        print(f"  {what:<66} {secs:>9.1f} {r:>7}  {note}")
    _stages(day)
    _per_base(day, plan, heads)
    _verdict(day, firsts, base_cpu - once_cpu, cpu_all)


def _firsts(steps: list[BaseStep]) -> list[BaseStep]:
    """The first base step of each (base, configuration), in time order (STEPS are sorted)."""
    seen: dict[tuple[str, tuple[str, ...]], BaseStep] = {}
    for s in steps:
        seen.setdefault((s.base, s.config), s)
    return list(seen.values())


def _stages(day: Day) -> None:
    wanted = ("static: check", "apply: apply", "apply: check", "build-x86_64: apply", "build-x86_64: check", "build-x86_64: build")
    print("  the reviews' stage seconds, summed (sequential within a job):")
    print("    " + "; ".join(f"{k} {day.stage_seconds[k]:.0f} s" for k in wanted if k in day.stage_seconds))
    print(f"  jobs: {', '.join(f'{k} {v}' for k, v in sorted(day.jobs.items()))}; build findings: "
          f"{', '.join(f'{k} {v}' for k, v in sorted(day.findings.items())) or 'none'}")
    for line in [*day.samples.values(), *day.failed[:5]]:
        print(f"    {line}")


def _per_base(day: Day, plan: Sequence[Planned], heads: list[str]) -> None:
    secs = sorted(s.seconds for s in day.base_steps if s.compiled)
    if secs and day.patch_steps:
        print(f"  base steps that ran make: median {statistics.median(secs):.1f} s, max {secs[-1]:.1f} s, "
              f"{sum(x > 5 for x in secs)} over 5 s; patch steps: median {statistics.median(day.patch_steps):.1f} s; "
              f"Kconfig runs seen outside base steps: {day.kconfig_elsewhere} .config writes")
    for n, head in enumerate(heads):
        steps = [s for s in day.base_steps if s.base == head]
        configs = Counter(s.config for s in steps)
        desc = "; ".join(f"{' '.join(c) or 'tinyconfig'}: {k}" for c, k in configs.items())
        print(f"  base {n} ({head[:12]}): {sum(s.base == head for s in plan)} series; base steps {len(steps)}, of which Kconfig ran in "
              f"{sum(s.configured for s in steps)} and make in {sum(s.compiled for s in steps)}; ideal {len(configs)} (one per "
              f"configuration: {desc or 'none'}); {sum(s.seconds for s in steps):.0f} s, {sum(s.cpu for s in steps):.0f} s CPU")


def _verdict(day: Day, firsts: list[BaseStep], repeated_cpu: float, cpu_all: float) -> None:
    configured = sum(s.configured for s in day.base_steps)
    made = sum(s.compiled for s in day.base_steps)
    goals = f"make ran in {made} base steps (the series' own objects at the base: {repeated_cpu:.0f} s CPU in repeats, " \
            f"{repeated_cpu / cpu_all:.0%} of the bot's)"
    if configured <= len(firsts):
        print(f"  verdict: the base's configuration made at most once per base and configuration ({configured} Kconfig runs for "
              f"{len(firsts)}): target met for it; {goals}")
    else:
        print(f"  verdict: target NOT met: Kconfig ran in {configured} base steps for {len(firsts)} bases and configurations; {goals}")
