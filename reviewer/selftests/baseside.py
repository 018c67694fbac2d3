"""The base side's test results, once per base (issue 34): a second series on the same base boots only its own kernel.

The base's results in a guest depend on the base kernel (its cached image's name: the tree without the
selftests, the fragment, make's variables), the base's selftest build (its kept key: the tree, the
directories, the toolchain), the architecture, the accelerator, and what was run (each test, its
environment, arguments and time limit). Under the sha256 of all that, with our version (store/results.py,
kind "base-tests"), a run of the base whose guest ran every test and showed no fault of its own (no panic,
no hang, no early exit: those may be this machine's moment) is kept; a later review with the same key
takes its rows instead of booting the base, and each row says from when (its `where`). The key's lock
makes a second review (a second bot worker) wait for the first's base run rather than boot it too.

Benchmarks never come from here: a comparison needs both sides' runs in the same time window.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from reviewer.ktap import Result, TestCase
from reviewer.model import Finding, Level, TestRun
from reviewer.store import kept, results

KIND = "base-tests"


@dataclass(frozen=True)
class Reuse:
    """The base side's key, and what the review may do with the store (--no-cache: write only)."""

    digest: str
    read: bool = True
    write: bool = True


def digest(build_key: str, image: str, arch: str, accel: str, items: Sequence[tuple[str, str, Sequence[str], float | None]],
           cap: float, boot_timeout: float | None) -> str:
    """The key of the base's results (see the module's docstring)."""
    return results.key(KIND, [build_key, image, arch, accel, [[r, e, list(a), t] for r, e, a, t in items], cap, boot_timeout])


@contextlib.contextmanager
def claimed(reuse: Reuse) -> Iterator[None]:
    with kept.locked(results.directory() / KIND / "locks", reuse.digest):
        yield


@dataclass(frozen=True)
class Kept:
    runs: tuple[TestRun, ...]
    findings: tuple[Finding, ...]
    when: float


def load(reuse: Reuse) -> Kept | None:
    """The kept base results of REUSE, their rows saying when they ran; None if there are none (or they do not read)."""
    doc = results.get(KIND, reuse.digest) if reuse.read else None
    if not isinstance(doc, dict):
        return None
    try:
        when = float(doc["when"])
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(when))
        runs = tuple(replace(_run(r), where=f"{r['where']}; kept from {stamp}") for r in doc["runs"])
        return Kept(runs, tuple(_finding(f) for f in doc["findings"]), when)
    except (KeyError, TypeError, ValueError):
        return None


def store(reuse: Reuse, runs: Sequence[TestRun], findings: Sequence[Finding]) -> None:
    if reuse.write:
        results.put(KIND, reuse.digest, {"when": time.time(), "runs": [_run_doc(r) for r in runs],
                                         "findings": [_finding_doc(f) for f in findings]})


def _case(d: dict[str, Any]) -> TestCase:
    return TestCase(d["number"], d["name"], Result(d["result"]), d["reason"], tuple(_case(s) for s in d["subtests"]),
                    tuple(d["diagnostics"]))


def _case_doc(c: TestCase) -> dict[str, Any]:
    return {"number": c.number, "name": c.name, "result": str(c.result), "reason": c.reason,
            "subtests": [_case_doc(s) for s in c.subtests], "diagnostics": list(c.diagnostics)}


def _run(d: dict[str, Any]) -> TestRun:
    return TestRun(d["test"], d["tree"], d["env"], Result(d["result"]), float(d["seconds"]), d["reason"], d["log"],
                   tuple(_case(c) for c in d["subtests"]), d["where"])


def _run_doc(r: TestRun) -> dict[str, Any]:
    return {"test": r.test, "tree": r.tree, "env": r.env, "result": str(r.result), "seconds": r.seconds, "reason": r.reason,
            "log": r.log, "subtests": [_case_doc(c) for c in r.subtests], "where": r.where}


def _finding(d: dict[str, Any]) -> Finding:
    return Finding(d["rule"], Level(d["level"]), d["message"], d["patch"], d["path"], d["line"], d["hint"], tuple(d["quote"]))


def _finding_doc(f: Finding) -> dict[str, Any]:
    return {"rule": f.rule, "level": str(f.level), "message": f.message, "patch": f.patch, "path": f.path, "line": f.line,
            "hint": f.hint, "quote": list(f.quote)}
