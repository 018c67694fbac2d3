"""The selftests of one tree, run inside that tree's own kernel (kernel/guest.py): one boot per tree and round.

The programs were built on the host, in the sandbox, in the tree's worktree; the guest sees the
worktree and runs each one as kselftest's runner would (from its directory, under the settings
timeout that --test-timeout caps, in the plain or timens environment), as root of the guest.
What the guest's console shows of the kernel itself (a panic, an oops, a hang) is the Boot's.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import ktap
from reviewer.kernel import console, guest
from reviewer.kernel.arches import X86_64, Arch
from reviewer.kernel.jobs import Job
from reviewer.model import Finding, Level, TestRun
from reviewer.run.sandbox import MAX_TEST_SECONDS, Sandbox
from reviewer.selftests.choose import SELFTESTS, TestRef
from reviewer.selftests.run import Start, left_note, on_test, outcome, prepare

RULE = "vm"
NOT_RUN = "not run: "  # the reason of a test its guest never ran (the guest's finding says why)


@dataclass(frozen=True)
class Kernels:
    """The trees' guest kernels: per tree its image (None: it did not build) and where its rows ran."""

    images: dict[str, Path | None]
    where: dict[str, str]  # "base" -> "booted c4bac1c88685 x86_64 tcg"
    both: str = ""  # a benchmark's: "booted x86_64 tcg: base c4bac1c88685, patched 0b91cda56707"
    logs: Path | None = None  # the guests' consoles go here, one file per boot
    boot_timeout: float | None = None  # seconds to reach the first test (None: guest.BOOT_ALLOWANCE)
    arch: Arch = X86_64  # what the kernels and the tests are built for
    accel: str = ""  # kvm | tcg: what booted them (the benchmarks' default threshold follows it)


@dataclass(frozen=True)
class Item:
    ref: TestRef
    env: str
    args: tuple[str, ...] = ()
    timeout: float | None = None  # the tool's own (a benchmark); else the directory's settings, capped


@dataclass(frozen=True)
class Batch:
    runs: tuple[TestRun, ...]
    findings: tuple[Finding, ...]
    accel: str = ""
    kinds: frozenset[str] = frozenset()  # its guest's faults, as kinds(): what the patched side is compared with


@dataclass(frozen=True)
class Booted:
    """One tree's boot, before its faults are judged against the base's: what each item started as, and the guest's run."""

    label: str
    starts: tuple[Start | TestRun, ...]
    items: tuple[Item, ...]
    guest: guest.GuestRun | None  # None: no job to run, or no kernel
    image: bool  # the tree's kernel built
    tag: str = ""


def boot(kernels: Kernels, label: str, wt: Path, items: Sequence[Item], sandbox: Sandbox, cap: float = MAX_TEST_SECONDS,
         tag: str = "") -> Booted:
    """ITEMS on the tree LABEL (worktree WT) in its kernel: one boot running every item that could start."""
    image = kernels.images.get(label)
    starts = tuple(prepare(wt, i.ref, tree=label, env=i.env, args=i.args, timeout=i.timeout, cap=cap) for i in items)
    ready = [s for s in starts if isinstance(s, Start)]
    if image is None or not ready:
        return Booted(label, starts, tuple(items), None, image is not None, tag)
    jobs = [Job(s.cwd, s.argv, s.env, s.limit) for s in ready]
    log = kernels.logs / f"guest-{label}{tag}.log" if kernels.logs is not None else None
    booted = guest.run(image, jobs, [wt], sandbox, boot_timeout=kernels.boot_timeout, log=log, arch=kernels.arch)
    return Booted(label, starts, tuple(items), booted, image=True, tag=tag)


def judge(kernels: Kernels, b: Booted, known: frozenset[str] = frozenset()) -> Batch:
    """A run per item of B, and its guest's own faults as findings (KNOWN: the kinds of fault the base's guest
    showed, which on the patched side are not the series')."""
    if not b.image:
        return Batch(tuple(_not_run(s, i, b.label, "its kernel did not build") for s, i in zip(b.starts, b.items, strict=True)), ())
    ready = [s for s in b.starts if isinstance(s, Start)]
    got = dict(zip((id(s) for s in ready), b.guest.ran if b.guest else (), strict=False))
    runs, seen = [], []
    for s, item in zip(b.starts, b.items, strict=True):
        if isinstance(s, TestRun):
            runs.append(s)
        elif (r := got.get(id(s))) is not None:
            run, notes = _left(outcome(s, r.output, r.returncode, r.seconds, timed_out=r.timed_out), r)
            runs.append(run)
            seen += [on_test(run.test, b.label, run.env, f"{SELFTESTS}/{item.ref.dir}/{item.ref.name}", note) for note in notes]
        else:
            assert b.guest is not None
            runs.append(TestRun(s.name, b.label, s.env, ktap.Result.ERROR, 0.0, f"{NOT_RUN}{fault(b.guest)}"))
    where = kernels.where.get(b.label, "")
    findings = (*(faults(b.guest, b.label, b.tag, known) if b.guest else ()), *seen)
    return Batch(tuple(replace(r, where=where) for r in runs), findings, b.guest.accel if b.guest else "",
                 run_kinds(b.guest) if b.guest else frozenset())


def run(kernels: Kernels, label: str, wt: Path, items: Sequence[Item], sandbox: Sandbox, cap: float = MAX_TEST_SECONDS,
        tag: str = "", known: frozenset[str] = frozenset()) -> Batch:
    """ITEMS on the tree LABEL (worktree WT) in its kernel: a run per item, and the guest's own faults as findings
    (KNOWN: the kinds of fault the base's guest showed, which on the patched side are not the series')."""
    return judge(kernels, boot(kernels, label, wt, items, sandbox, cap, tag), known)


def _left(run: TestRun, ran: guest.Ran) -> tuple[TestRun, list[str]]:
    """RUN, saying so when it left processes running in the guest (which killed them), and the warning's text."""
    if not ran.left_count:
        return run, []
    short, long = left_note(ran.left, ran.left_count, "the guest")
    if run.result is ktap.Result.TIMEOUT:
        return run, [long]
    return replace(run, reason="; ".join(x for x in (run.reason, f"guest: {short}") if x)), [long]


def parallel() -> int:
    """How many guests may run at once: one per core, two at most (base and patched), each on one vCPU."""
    return max(1, min(2, os.cpu_count() or 1))


def _not_run(start: Start | TestRun, item: Item, label: str, why: str) -> TestRun:
    if isinstance(start, TestRun):
        return start
    return TestRun(start.name, label, item.env, ktap.Result.ERROR, 0.0, f"{NOT_RUN}{why}")


def fault(booted: guest.GuestRun) -> str:
    """Why the guest did not finish a job: it was killed at its timeout, the kernel died, or vng failed."""
    if booted.timed_out:
        return f"the guest was killed after {booted.seconds:.0f}s (hung?): last line: {console.last_line(booted.console)}"
    if splats := console.splats(booted.console):
        return f"the kernel died: {splats[0].first}"
    if booted.returncode is None:
        return console.last_line(booted.console)
    return f"{booted.runner} exited ({booted.returncode}) before it: {console.last_line(booted.console)}"


def faults(booted: guest.GuestRun, label: str, tag: str = "", known: frozenset[str] = frozenset()) -> list[Finding]:
    """What went wrong with the kernel itself on one side: a splat (panic, oops, BUG, WARNING), a hang, vng
    ending early, quoting the console. On the patched side a fault of a kind the base's guest did not show
    (KNOWN) is the series' doing: an error; the base's own, and the patched one's that the base shares
    (a TCG stall, a guest that does not work here at all), are warnings."""
    what = f"the {label} kernel{tag}"
    return [Finding(RULE, Level.ERROR if label == "patched" and kind not in known else Level.WARNING, f"{what}{text}", quote=quote)
            for kind, text, quote in _faults(booted)]


def run_kinds(booted: guest.GuestRun) -> frozenset[str]:
    """The kinds of fault one guest showed (what faults() compares the patched side with)."""
    return frozenset(kind for kind, _, _ in _faults(booted))


_NUMBERS = re.compile(r"0x[0-9a-f]+|\d+", re.I)


def _faults(booted: guest.GuestRun) -> list[tuple[str, str, tuple[str, ...]]]:
    """(kind, message after "the <tree> kernel", quote) per fault; a splat's kind is its first line less
    the numbers in it (CPU, PID, offsets), so the same WARNING on both sides is one kind."""
    out = [("splat " + _NUMBERS.sub("#", s.first), f": {s.first}", s.quote) for s in console.splats(booted.console)]
    tail = tuple(console.lines(booted.console)[-8:])
    if booted.timed_out:
        out.append(("hung", f" hung: the guest did not finish its tests within {booted.seconds:.0f}s and was killed", tail))
    elif not out and booted.returncode is None:  # never started (guest.run says why)
        out.append(("start", f": {console.last_line(booted.console).removeprefix('reviewer: ')}", ()))
    elif not out and any(r is None for r in booted.ran):
        out.append((booted.runner, f": {booted.runner} exited ({booted.returncode}) before the tests ended: "
                                   f"{console.last_line(booted.console)}", tail))
    return out
