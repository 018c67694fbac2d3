"""Base vs patched, per environment: what each boot's console says, as runs, per-case ratios and findings."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reviewer.boot.intests import InTest
from reviewer.hostload import HostLoad
from reviewer.kernel import console
from reviewer.kernel.kconfig import Build, build_finding
from reviewer.kernel.qemu import Boot
from reviewer.ktap import Result, TestCase
from reviewer.model import BenchResult, Finding, Level, TestRun

RULE = "boot"
BAD = (Result.FAIL, Result.TIMEOUT, Result.ERROR)


@dataclass(frozen=True)
class BootedKernel:
    """One side of an A/B: a tree's kernel as built and its boots."""

    tree: str  # base | patched
    env: str  # plain | debug
    build: Build
    boots: tuple[Boot, ...] = ()  # none when the build failed


def runs(tests: Sequence[InTest], side: BootedKernel) -> list[TestRun]:
    """One run for the build, then one per test (from the first boot)."""
    b = side.build
    out = [TestRun("boot:kernel-build", side.tree, side.env, Result.PASS if b.ok else Result.ERROR, b.seconds, b.error, b.log)]
    if side.boots:
        out += [_test_run(t, side.boots[0], side) for t in tests]
    return out


def _test_run(test: InTest, boot: Boot, side: BootedKernel) -> TestRun:
    name, log, secs = f"boot:{test.name}", boot.console, boot.seconds
    if test.kind == "dmapool":
        times = console.dmapool_times(log)
        subs = tuple(TestCase(i, case, Result.PASS, f"time:{us:g}us") for i, (case, us) in enumerate(times.items(), 1))
        result, reason = (Result.PASS, "") if times else (Result.ERROR, "dmapool_test printed no time")
    else:
        suite = _suite(test, log)
        subs = suite.subtests if suite else ()
        result, reason = (suite.result, suite.reason) if suite else (Result.ERROR, "the suite printed no KTAP result")
    missing = [p for p in side.build.problems for s in test.symbols if p.startswith(f"CONFIG_{s}=y ")]
    if missing:
        result, reason = Result.ERROR, f"not built: {missing[0]}"
    elif boot.timed_out:
        result, reason = Result.TIMEOUT, f"the boot did not end within {boot.seconds:.0f}s; last line: {console.last_line(log)}"
    elif splats := console.splats(log):
        result, reason = Result.FAIL, splats[0].first
    return TestRun(name, side.tree, side.env, result, secs, reason, log, subs)


def _suite(test: InTest, log: str) -> TestCase | None:
    parsed = console.kunit(log)
    want = test.name.removeprefix("kunit:")
    return next((t for t in parsed.tests if t.name == want), None) if parsed else None


def clean(boot: Boot) -> bool:
    """The boot reached its expected end with no splat on the way."""
    return not boot.timed_out and console.expected_end(boot.console) and not console.splats(boot.console)


def side_findings(side: BootedKernel) -> Iterable[Finding]:
    """Whatever went wrong on one side, on its own: no build, a hang, a splat, QEMU dying early."""
    what = f"the {side.tree} kernel ({side.env})"
    if not side.build.ok:
        yield build_finding(side.build, side.tree, side.env)
    for p in side.build.problems:
        yield Finding(RULE, Level.WARNING, f"{what}: {p}")
    for boot in side.boots[:1]:
        if boot.timed_out:
            yield Finding(RULE, Level.ERROR, f"{what} hung: the boot did not end within {boot.seconds:.0f}s and the VM was killed",
                          quote=tuple(console.lines(boot.console)[-8:]))
        for s in console.splats(boot.console):
            yield Finding(RULE, Level.ERROR, f"{what}: {s.first}", quote=s.quote)
        if not boot.timed_out and not console.expected_end(boot.console) and not console.splats(boot.console):
            yield Finding(RULE, Level.ERROR, f"{what}: QEMU exited ({boot.returncode}) before the boot ended: "
                                             f"{console.last_line(boot.console)}")


def compare(tests: Sequence[InTest], base: BootedKernel, patched: BootedKernel, slower_than: float,
            load: HostLoad | None = None) -> tuple[list[BenchResult], list[Finding]]:
    """dmapool_test's times judged as the selftest benchmarks are (verdict.py), LOAD being the machine while the sides
    booted (a busy host gives no verdict); a warning per test judged slower; the KUnit suites that regressed."""
    results = [r.judged(slower_than) for t in tests if t.kind == "dmapool" for r in _dmapool(t, base, patched, load)]
    slow = [r for r in results if r.slower]
    findings = [_slower(t, patched.env, [r for r in slow if r.name == t.name], slower_than) for t in tests
                if any(r.name == t.name for r in slow)]
    return results, findings + list(_regressions(tests, base, patched))


def _dmapool(test: InTest, base: BootedKernel, patched: BootedKernel, load: HostLoad | None) -> list[BenchResult]:
    b = [console.dmapool_times(x.console) for x in base.boots]
    p = [console.dmapool_times(x.console) for x in patched.boots]
    if not any(b) or not any(p):
        return []  # nothing to compare: the side without numbers has its own finding (no build, a splat, a hang)
    cases = dict.fromkeys(c for side in (*b, *p) for c in side)
    return [_bench(test.name, patched.env, c, [s[c] for s in b if c in s], [s[c] for s in p if c in s], load) for c in cases]


def _bench(name: str, env: str, case: str, base: list[float], patched: list[float], load: HostLoad | None) -> BenchResult:
    note = "" if base and patched else f"no time on the {'base' if not base else 'patched'} side"
    return BenchResult.of(name, env, case, "us", base, patched, max(len(base), len(patched)), note, load=load)


def _slower(test: InTest, env: str, slow: list[BenchResult], limit: float) -> Finding:
    """The cases judged slower (verdict.py: beyond the threshold and beyond the noise), each with the test that says so."""
    cases = "; ".join(f"{r.metric} {r.ratio:.2f}x ({r.base:g}us -> {r.patched:g}us, {r.verdict.test if r.verdict else ''})" for r in slow)
    return Finding("benchmarks", Level.WARNING, f"{test.name} is slower on the patched tree ({env}): {cases} (threshold {limit:g}x)")


def _regressions(tests: Sequence[InTest], base: BootedKernel, patched: BootedKernel) -> Iterable[Finding]:
    """A KUnit suite that passes on base and fails on patched (hangs and splats are reported per side)."""
    if not base.boots or not patched.boots:
        return
    for t in (t for t in tests if t.kind == "kunit"):
        b, p = _test_run(t, base.boots[0], base), _test_run(t, patched.boots[0], patched)
        if p.result is Result.FAIL and b.result not in BAD:
            failed = ", ".join(s.name for s in p.subtests if s.result is Result.FAIL) or p.reason
            yield Finding(RULE, Level.ERROR, f"{t.name} fails on the patched tree ({patched.env}), {b.result} on base: {failed}")
