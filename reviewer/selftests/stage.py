"""The selftest stage: build and run the chosen tests on base and patched, compare, benchmark.

A whole directory runs what `make run_tests` runs there, as make expands its Makefile on each tree
(selftests.run_list: TEST_GEN_PROGS, TEST_CUSTOM_PROGS, TEST_PROGS); a test that a tree's list
lacks is a SKIP on that tree. A single test (`--tests dir:name`, a rule's hint) is run even when
its directory's list lacks it, since someone asked for it by name: then an info finding says
that `make run_tests` would not run it, and what lists it instead (a TEST_GEN_PROGS_EXTENDED
helper, a TEST_FILES file), so that its result is not read as the directory's.

Everything runs in the sandbox (sandbox.py). A test that left processes running, wrote outside its
tree or was cut short by --test-timeout is a `sandbox` warning on that test, on each tree it did so,
and its row's reason says it; in a guest, the guest tells what a test left running (inguest.py).
"""
from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import ktap, private
from reviewer.kernel import guestroot
from reviewer.model import BenchResult, Finding, Level, TestRun
from reviewer.progress import QUIET, Progress
from reviewer.run import ending
from reviewer.run.sandbox import MAX_TEST_SECONDS, Sandbox
from reviewer.selftests import baseside, bench, inguest, kept
from reviewer.selftests.choose import SELFTESTS, Chosen, TestRef
from reviewer.selftests.run import RUN_VARS, Observed, RunList, build, on_test, run_list, run_observed
from reviewer.selftests.trees import Later, Tree, path
from reviewer.selftests.where import Decision, kernel_paths
from reviewer.store.kept import Kept
from reviewer.verdict import BENCH_RUNS

BAD = (ktap.Result.FAIL, ktap.Result.TIMEOUT, ktap.Result.ERROR)
RULE = "selftests"


@dataclass(frozen=True)
class Plan:
    chosen: tuple[Chosen, ...]
    envs: tuple[str, ...] = ("plain",)
    bench_runs: int = BENCH_RUNS
    slower_than: float = 1.25  # patched/base ratio above which a benchmark is a warning
    extra_env: dict[str, str] = field(default_factory=dict)
    benchmarks: tuple[str, ...] = ()  # opt-in benchmarks asked for by name
    test_timeout: float = MAX_TEST_SECONDS  # --test-timeout: caps what a directory's settings file asks for
    kernels: inguest.Kernels | None = None  # --run-on vm: each tree's tests run in its own kernel (else on the host's)
    kept: Kept | None = None  # where builds are kept (selftests/kept.py); None: built afresh, never kept
    touched: tuple[str, ...] = ()  # the series' files: may the patched build start from the base's?
    reuse: bool = True  # read kept builds and results (--no-cache: not)
    write: bool = True  # keep new ones


@dataclass(frozen=True)
class SelftestResults:
    runs: tuple[TestRun, ...]
    benchmarks: tuple[BenchResult, ...]
    findings: tuple[Finding, ...]

    @property
    def regressions(self) -> list[Finding]:
        return [f for f in self.findings if f.level is Level.ERROR]


def run(plan: Plan, trees: dict[str, Tree], scratch: Path, progress: Progress = QUIET) -> SelftestResults:
    """TREES maps "base" and "patched" to worktrees (a Later: made only if its files are needed); both are built and
    tested. PROGRESS hears of each build, test run and benchmark as it starts."""
    sandbox = Sandbox(scratch, plan.extra_env)
    dirs = sorted({c.ref.dir for c in plan.chosen})
    runs: list[TestRun] = []
    built: dict[str, bool] = {}
    progress.expect(len(trees))
    make_vars = plan.kernels.arch.test_vars() if plan.kernels is not None else ()  # built for the guests' architecture
    lists: dict[str, dict[str, RunList]] = {}
    keys: dict[str, str] = {}
    for label, wt in trees.items():
        progress.advance(f"build {' '.join(dirs)} on {label}")
        ok, log, listed = _build(plan, label, wt, dirs, sandbox, make_vars, keys)
        built[label] = ok
        if not ok:
            runs.append(TestRun(f"build {' '.join(dirs)}", label, "-", ktap.Result.ERROR, 0.0, _last_error(log), log))
        elif listed is not None:
            lists[label] = listed
    runs += [TestRun(f"run list {d}", label, "-", ktap.Result.ERROR, 0.0, rl.error, rl.log)
             for label, per in lists.items() for d, rl in per.items() if rl.error]
    refs = _expand(plan.chosen, lists)
    asked = {c.ref: c.why for c in plan.chosen if c.ref.name}
    seen: list[Finding] = []
    if plan.kernels is None:
        progress.expect(len(plan.envs) * len(refs) * len(lists))
        for env in plan.envs:
            for ref in refs:
                for label, per in lists.items():
                    progress.advance(f"{ref} on {label} ({env})")
                    if (o := _run_one(path(trees[label]), ref, label, env, sandbox, per[ref.dir], asked=ref in asked,
                                      cap=plan.test_timeout)) is not None:
                        runs.append(o.run)
                        seen += [on_test(o.run.test, label, env, f"{SELFTESTS}/{ref.dir}/{ref.name}", note) for note in o.notes]
    else:
        asks: dict[str, list[inguest.Item]] = {}
        for label, per in lists.items():
            asks[label] = []
            for env in plan.envs:
                for ref in refs:
                    if (skip := _unlisted_skip(ref, label, env, per[ref.dir], asked=ref in asked)) is not None:
                        runs += [skip] if isinstance(skip, TestRun) else []
                    else:
                        asks[label].append(inguest.Item(ref, env))
        reuse = _base_reuse(plan, plan.kernels, keys.get("base", ""), asks.get("base", []))
        for batch in _in_guests(plan.kernels, plan.test_timeout, asks, trees, sandbox, progress, reuse):
            runs += batch.runs
            seen += batch.findings
    findings = [*_build_findings(built, dirs), *_list_findings(lists), *_unlisted(asked, lists), *_compare(runs), *seen]
    # A benchmark means something only as a comparison: both trees must have built.
    comparable = len(trees) > 1 and all(built.values()) and plan.bench_runs > 0  # --bench-runs 0: none
    benches = bench.for_tests(refs, plan.benchmarks) if comparable else []
    progress.expect(len(benches) * plan.bench_runs * len(trees))
    measured: list[BenchResult] = []
    for b in benches:
        run_one = _in_guest(plan.kernels, b, sandbox, findings) if plan.kernels is not None else None
        measured += bench.measure(b, {label: path(t) for label, t in trees.items()}, plan.envs, sandbox, plan.bench_runs,
                                  on_run=progress.advance, run_one=run_one)
    results, slower = judge_benchmarks(measured, plan.slower_than)
    if plan.kernels is not None:  # each row ran in its tree's kernel, and says which
        here = plan.kernels.where
        built_here = f"host {host_kernel().split()[-1]}, built for {plan.kernels.arch.name}"  # a build or make's run list: not in a guest
        return SelftestResults(tuple(replace(r, where=r.where or (built_here if r.env == "-" else here.get(r.tree, ""))) for r in runs),
                               tuple(replace(b, where=plan.kernels.both) for b in results), tuple(findings + slower))
    # Both columns ran on the machine's own kernel: every row says so.
    where = host_kernel()
    return SelftestResults(tuple(replace(r, where=where) for r in runs), tuple(replace(b, where=where) for b in results),
                           tuple(findings + slower))


def _build(plan: Plan, label: str, tree: Tree, dirs: list[str], sandbox: Sandbox, make_vars: Sequence[str],
           keys: dict[str, str]) -> tuple[bool, str, dict[str, RunList] | None]:
    """Build DIRS on the tree LABEL and read their run lists: (ok, make's log, the lists). With a store (plan.kept): a
    kept build of the same tree is restored instead (into a Later once it is made: trees.py), and the patched tree
    starts from the base's when the series leaves the build's inputs alone (selftests/kept.py); a new build is kept.
    KEYS: each tree's key, as found."""
    store = plan.kept
    k = keys[label] = kept.key(_tree_id(tree), dirs, make_vars, plan.extra_env) if store is not None else ""
    with kept.claimed(store, k or None):
        if store is not None and plan.reuse and (entry := store.lookup(k)) is not None and (listed := kept.lists_of(entry)) is not None:
            said = f"(the build kept from {_stamp(kept.published(entry))} was used: this tree's content was built then)"
            if isinstance(tree, Later) and not tree.made:
                tree.then(functools.partial(_restore, entry, dirs=dirs, sandbox=sandbox, make_vars=make_vars))
                return True, said, listed
            wt = path(tree)
            try:
                kept.restore(entry, wt)
                return True, said, listed
            except OSError:
                kept.clean(wt)
        wt = path(tree)
        start = ""
        base = keys.get("base")
        if (store is not None and plan.reuse and label != "base" and base and (entry := store.lookup(base)) is not None
                and kept.reusable(wt, plan.touched, dirs)):
            try:
                start = f"(make ran on top of the base's build kept from {_stamp(kept.restore(entry, wt, touched=plan.touched))})\n"
            except OSError:
                kept.clean(wt)
        ok, log = build(wt, dirs, sandbox, variables=make_vars)
        if not ok:
            return False, start + log, None
        listed = {d: run_list(wt, d, sandbox, variables=make_vars) for d in dirs}
        if store is not None and plan.write:
            kept.publish(store, k, wt, listed, replace=not plan.reuse)  # --no-cache: this build replaces the kept one
        return True, start + log, listed


def _tree_id(tree: Tree) -> str:
    return tree.tree_id() if isinstance(tree, Later) else kept.tree_of(tree)


def _restore(entry: Path, wt: Path, dirs: list[str], sandbox: Sandbox, make_vars: Sequence[str]) -> None:
    """A kept build into a Later's worktree once it is made; one that cannot be restored (pruned meanwhile, a full
    disk) is built again: whoever asked for the worktree runs what is in it."""
    try:
        kept.restore(entry, wt)
    except OSError:
        kept.clean(wt)
        build(wt, dirs, sandbox, variables=make_vars)


def _stamp(when: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(when))


def _base_reuse(plan: Plan, kernels: inguest.Kernels, build_key: str, items: Sequence[inguest.Item]) -> baseside.Reuse | None:
    """The base side's key, when its results may be kept: the builds are kept (a store) and its kernel built."""
    image = kernels.images.get("base")
    if plan.kept is None or not build_key or image is None or not items:
        return None
    asked = [(str(i.ref), i.env, i.args, i.timeout) for i in items]
    key = baseside.digest(build_key, image.name, kernels.arch.name, kernels.accel, asked, plan.test_timeout, kernels.boot_timeout)
    return baseside.Reuse(key, read=plan.reuse, write=plan.write)


def _base_batch(reuse: baseside.Reuse, kernels: inguest.Kernels, tree: Tree, items: Sequence[inguest.Item], sandbox: Sandbox,
                cap: float) -> inguest.Batch:
    """The base's ITEMS: the results kept for its key, else a boot, kept when its guest ran every item without a fault
    (under the key's lock: a second review of this base waits for the first's results)."""
    with baseside.claimed(reuse):
        if (hit := baseside.load(reuse)) is not None:
            return inguest.Batch(hit.runs, hit.findings, kernels.accel)
        batch = inguest.judge(kernels, inguest.boot(kernels, "base", path(tree), items, sandbox, cap))
        if not batch.kinds and not any(r.reason.startswith(inguest.NOT_RUN) for r in batch.runs):
            baseside.store(reuse, batch.runs, batch.findings)
        return batch


def _boot(kernels: inguest.Kernels, label: str, tree: Tree, items: Sequence[inguest.Item], sandbox: Sandbox, cap: float) -> inguest.Booted:
    return inguest.boot(kernels, label, path(tree), items, sandbox, cap)


def _in_guests(kernels: inguest.Kernels, cap: float, asks: dict[str, list[inguest.Item]], trees: dict[str, Tree], sandbox: Sandbox,
               progress: Progress, reuse: baseside.Reuse | None = None) -> list[inguest.Batch]:
    """Each tree's ITEMS in its own kernel, one boot a tree, the base's and the patched one's at once when the machine
    has the cores (each guest has one vCPU; each gets a scratch of its own); the patched side's faults are then judged
    against the base's. REUSE: the base's key, whose kept results stand for its boot."""
    progress.expect(len(asks))
    pool = ThreadPoolExecutor(max_workers=inguest.parallel(), thread_name_prefix="guest")
    pending: dict[str, Future[inguest.Booted | inguest.Batch]] = {}
    try:
        for label, items in asks.items():
            progress.advance(f"boot the {label} kernel and run {len(items)} test{'s' if len(items) != 1 else ''} in it")
            own = replace(sandbox, scratch=sandbox.scratch / f"guest-{label}")
            if label == "base" and reuse is not None:
                pending[label] = pool.submit(_base_batch, reuse, kernels, trees[label], items, own, cap)
            else:
                pending[label] = pool.submit(_boot, kernels, label, trees[label], items, own, cap)
        booted = {label: f.result() for label, f in pending.items()}
    except BaseException:  # Ctrl-C: the signal stopped what was running; a thread may have started a guest just after
        for f in pending.values():
            f.cancel()
        while ending.interrupted() is not None and wait(pending.values(), timeout=0.5).not_done:
            ending.stop_children(ending.GRACE)
        raise
    finally:
        pool.shutdown(wait=True)
    known: frozenset[str] = frozenset()  # the base guest's faults
    out = []
    for label, b in booted.items():
        batch = b if isinstance(b, inguest.Batch) else inguest.judge(kernels, b, known)
        known |= batch.kinds if label == "base" else frozenset()
        out.append(batch)
    return out


def _in_guest(kernels: inguest.Kernels, b: bench.Benchmark, sandbox: Sandbox, findings: list[Finding]) -> bench.RunOne:
    """A benchmark run in a tree's own kernel: one boot per run, alternating (bench.measure's order), running it in
    every environment; the guests' faults join FINDINGS."""
    count = iter(range(1, 1 << 30))
    known: set[str] = set()  # the faults the base's guests showed

    def run_one(label: str, wt: Path, envs: Sequence[str]) -> dict[str, TestRun]:
        items = [inguest.Item(b.test, env, b.args, b.timeout) for env in envs]
        batch = inguest.run(kernels, label, wt, items, sandbox, tag=f"-bench-{next(count)}", known=frozenset(known))
        known.update(batch.kinds if label == "base" else ())
        findings.extend(f for f in batch.findings if f not in findings)
        return dict(zip(envs, batch.runs, strict=True))

    return run_one


def host_caveat(touched: Iterable[str], runs: Iterable[TestRun], where: Decision | None = None) -> Finding | None:
    """An info when tests ran on the host's kernel while the series changes the kernel: both columns
    tested the same kernel, so what the series does to it cannot show in them. WHERE: why not in a VM: asked
    for (--run-on host), or a guest this machine cannot boot, said with what is missing and what makes it possible."""
    kernel = kernel_paths(touched)
    ran = [r for r in runs if r.where.startswith("host ") and r.env != "-"]
    if not kernel or not ran:
        return None
    more = f" and {len(kernel) - 2} more" if len(kernel) > 2 else ""
    alike = f"the selftests ran on this machine's kernel ({ran[0].where.removeprefix('host ')}) for base and patched alike"
    changes = f"the series' kernel changes ({', '.join(kernel[:2])}{more})"
    if where is not None and where.missing:  # a guest was called for: never a silent fall-back
        return Finding(f"{RULE}/host-kernel", Level.INFO,
                       f"{changes} were not tested: {alike}, not in the series' kernels: {where.missing}",
                       hint=_root_hint(where) if where.root is not None else where.fix or None)
    return Finding(f"{RULE}/host-kernel", Level.INFO, f"{alike}: {changes} are not in the kernel they tested",
                   hint=f"not in the series' kernels: {where.why}" if where is not None
                   else "--run-on vm runs them in kernels built from the series")


def _root_hint(where: Decision) -> str:
    """What makes a guest whose one lack is its root: the command (it downloads Debian's packages), or --run-on vm."""
    assert where.root is not None
    return (f"make it: {where.fix} (it downloads {len(guestroot.PACKAGES)} {where.root.deb} Debian packages, about 15 MB, once); "
            "--run-on vm makes it itself")


def host_kernel() -> str:
    """Where the selftest stage runs its tests: the running kernel, for base and patched alike."""
    u = os.uname()
    return f"host {u.release} {u.machine}"


def judge_benchmarks(results: Iterable[BenchResult], limit: float) -> tuple[list[BenchResult], list[Finding]]:
    """RESULTS with their verdicts against LIMIT (--slower-than), and a warning for each judged slower:
    beyond the threshold and beyond the noise (verdict.py), never from one run per side."""
    judged = [r.judged(limit) for r in results]
    return judged, [_slower(r, limit) for r in judged if r.slower]


def save_logs(runs: Iterable[TestRun], directory: Path) -> int:
    """Keep each run's output (a build's log, a test's KTAP) as DIRECTORY/<tree>-<env>-<test>.log, so
    that the terminal report's reader can open it; DIRECTORY is made only when there is output."""
    saved = 0
    for r in (r for r in runs if r.log):
        private.make_dir(directory)  # a test's output holds whatever it could read: the user's eyes only
        name = re.sub(r"[^\w.+-]+", "_", f"{r.tree}-{r.env}-{r.test}").strip("_")
        private.write_private(directory / f"{name}.log", (r.log if r.log.endswith("\n") else r.log + "\n").encode())
        saved += 1
    return saved


def _expand(chosen: Iterable[Chosen], lists: dict[str, dict[str, RunList]]) -> list[TestRef]:
    """The single tests asked for, and each chosen directory's run list (those of all trees, in order)."""
    refs: list[TestRef] = []
    for c in chosen:
        if c.ref.name:
            refs.append(c.ref)
        else:
            refs += [TestRef(c.ref.dir, n) for per in lists.values() for n in per[c.ref.dir].tests]
    return list(dict.fromkeys(refs))


def _run_one(wt: Path, ref: TestRef, label: str, env: str, sandbox: Sandbox, listed: RunList, *, asked: bool,
             cap: float) -> Observed | None:
    """Run REF on one tree if it was asked for or is in that tree's run list; None if the list could not be read."""
    skip = _unlisted_skip(ref, label, env, listed, asked=asked)
    if skip is None:
        return run_observed(wt, ref, tree=label, env=env, sandbox=sandbox, cap=cap)
    return Observed(skip) if isinstance(skip, TestRun) else None


def _unlisted_skip(ref: TestRef, label: str, env: str, listed: RunList, *, asked: bool) -> TestRun | bool | None:
    """None: REF runs on this tree (asked for, or in its run list); else the SKIP that says why not, or
    False when the list could not be read (the tree's "run list" ERROR says why nothing of it runs)."""
    assert ref.name is not None
    if asked or ref.name in listed.tests:
        return None
    if listed.error:
        return False
    role = listed.role(ref.name)
    return TestRun(str(ref), label, env, ktap.Result.SKIP, 0.0,
                   f"not in the run list of {SELFTESTS}/{ref.dir}/Makefile on this tree" + (f" (it is in {role})" if role else ""))


def _last_error(log: str) -> str:
    errors = [ln.strip() for ln in log.splitlines() if "error" in ln.lower()]
    return (errors or log.strip().splitlines()[-1:] or ["build failed"])[0][:200]


def _build_findings(built: dict[str, bool], dirs: list[str]) -> Iterable[Finding]:
    if built.get("patched") is False:
        level = Level.ERROR if built.get("base", True) else Level.WARNING
        extra = "" if built.get("base", True) else " (it does not build on the base either)"
        yield Finding(RULE, level, f"the selftests in {', '.join(dirs)} do not build on the patched tree{extra}")


def _list_findings(lists: dict[str, dict[str, RunList]]) -> Iterable[Finding]:
    """A directory whose Makefile make could not read after it built: an error if only the series broke it."""
    for label, per in lists.items():
        for d, listed in per.items():
            if listed.error:
                fine_on_base = label == "patched" and "base" in lists and not lists["base"][d].error
                yield Finding(RULE, Level.ERROR if fine_on_base else Level.WARNING,
                              f"the tests of {d} were not run on the {label} tree: {listed.error}")


def _unlisted(asked: dict[TestRef, tuple[str, ...]], lists: dict[str, dict[str, RunList]]) -> Iterable[Finding]:
    """A test asked for by name that `make run_tests` would not run on the tree under review (the
    patched one): say so, what lists it instead, and why it ran."""
    label = "patched" if "patched" in lists else next(iter(lists), None)
    if label is None:
        return
    for ref, why in sorted(asked.items(), key=lambda kv: str(kv[0])):
        listed = lists[label][ref.dir]
        if listed.error or ref.name is None or ref.name in listed.tests:
            continue
        yield Finding(RULE, Level.INFO,
                      f"{ref} is not in the run list of {SELFTESTS}/{ref.dir}/Makefile ({', '.join(RUN_VARS)}) on the {label} tree "
                      f"({_listed_as(listed.role(ref.name))}): it was run because it was asked for ({'; '.join(why)}), "
                      "but `make run_tests` does not run it")


def _listed_as(role: str | None) -> str:
    if role is None:
        return "no kselftest list there names it"
    return f"it is in {role}" + (", for helpers that other tests run" if role == "TEST_GEN_PROGS_EXTENDED" else "")


def _compare(runs: list[TestRun]) -> Iterable[Finding]:
    by_key: dict[tuple[str, str], dict[str, TestRun]] = {}
    for r in runs:
        if r.env != "-":
            by_key.setdefault((r.test, r.env), {})[r.tree] = r
    for (test, env), sides in by_key.items():
        base, patched = sides.get("base"), sides.get("patched")
        if patched is None or patched.reason.startswith(inguest.NOT_RUN):
            continue  # the guest's own finding (a panic, a hang, no kernel) says why: once
        base_ran = base is not None and not base.reason.startswith(inguest.NOT_RUN)
        if patched.result in BAD and base is not None and not base_ran:  # no base to compare with: not known to be the series'
            yield Finding(RULE, Level.WARNING, f"{test} {patched.result}s on the patched tree ({env}) but did not run on base: "
                          f"not known to be the series': {patched.reason}")
        elif patched.result in BAD and (base is None or base.result not in BAD):
            yield Finding(RULE, Level.ERROR, f"{test} {patched.result}s on the patched tree ({env}){_was(base)}: {patched.reason}")
        elif patched.result in BAD:
            yield Finding(RULE, Level.WARNING, f"{test} {patched.result}s on both base and patched ({env}): {patched.reason}")
        elif base is not None and base_ran and base.result in BAD:
            yield Finding(RULE, Level.INFO, f"{test} is fixed by the series ({env}): {base.result} on base, {patched.result} on patched")


def _was(base: TestRun | None) -> str:
    return f", {base.result} on base" if base is not None else ""


def _slower(r: BenchResult, limit: float) -> Finding:
    """A benchmark judged slower (verdict.py: beyond the threshold and beyond the noise), with the test that says so."""
    assert r.ratio is not None and r.base is not None and r.patched is not None and r.verdict is not None
    return Finding(
        "benchmarks", Level.WARNING,
        f"{r.name} [{r.metric}] is {r.ratio:.2f}x slower on the patched tree ({r.env}): {r.base:.3f}{r.unit} -> {r.patched:.3f}{r.unit} "
        f"(medians, threshold {limit:g}x; {r.verdict.test})",
    )


