"""review(ReviewRequest) -> (Review, the error that stopped it): run the stages in order; a failed stage stops the later ones.

Stages: load (read the input, thread it with b4) -> parse (diffs with unidiff) ->
check (rules and checks) -> apply (isolated worktree) -> selftests (base vs patched).
Rules are loaded and validated before anything is fetched. Each stage is timed and
recorded; an error in a stage is recorded as that stage's failure and returned with what
was learned before it. Worktrees live until the last stage ends, and are always removed.
"""
from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from reviewer import config
from reviewer.apply import base as apply_base
from reviewer.checks import CHECKS, merge, noise, run_checks
from reviewer.errors import ApplyError, ConfigError, ReviewerError, SelftestError, UsageError
from reviewer.model import (
    SLOWER_THAN,
    ApplyResult,
    BenchResult,
    BootResult,
    BuiltTarget,
    ChosenTest,
    Finding,
    Level,
    Patch,
    Review,
    Series,
    StageResult,
    StageStatus,
    TestRun,
    slower_than,
)
from reviewer.progress import QUIET, Progress
from reviewer.request import ReviewRequest, SourceOptions
from reviewer.rules import RULES_DIR, Rule, evaluate, load_rules
from reviewer.rules.engine import trigger_hits
from reviewer.run import ending
from reviewer.series import target as targets
from reviewer.series.patchparse import ParsedDiff, read_diff
from reviewer.store import threads as cache
from reviewer.tree import git as tree_git
from reviewer.tree.base import GitBaseTree
from reviewer.tree.maintainers import dirs_after

# The stages that need a kernel tree import their modules when they run: a review without a
# tree (the most common, and b4 am's rival) does not pay for them (docs/design.md, "Imports kept lazy").
if TYPE_CHECKING:
    from reviewer import kernelscripts
    from reviewer.apply import cache as applycache
    from reviewer.kernel.arches import Arch
    from reviewer.selftests import inguest
    from reviewer.selftests import stage as selftest_stage
    from reviewer.selftests.choose import Chosen
    from reviewer.store import results as resultcache



P = TypeVar("P", covariant=True)  # Done[None] (a skip) is a Done[Path | None]
Q = TypeVar("Q")


@dataclass(frozen=True)
class Done(Generic[P]):
    """What a stage's step returns: OK or SKIPPED, the line the reports show, and what the later stages use.
    A failed stage raises its ReviewerError instead."""

    status: StageStatus
    detail: str
    payload: P


def ok(detail: str, payload: Q) -> Done[Q]:
    return Done(StageStatus.OK, detail, payload)


def skipped(detail: str) -> Done[None]:
    return Done(StageStatus.SKIPPED, detail, None)


class _Stopped(Exception):
    """A stage failed (recorded as such): the later stages do not run."""

    def __init__(self, error: ReviewerError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(frozen=True)
class _Base:
    """The check stage's result with a tree: the base commit, where it came from, and its files read with git
    (shared by the checks, the apply stage and the test choice)."""

    commit: str
    source: str  # option | trailer | guess | head (apply.base.choose_base)
    tree: GitBaseTree


@dataclass
class _Run:
    """What the review has learned so far, returned however far it got. What one stage hands the next (the
    series, the base, the patched worktree) travels in the stages' results (Done.payload) instead; the
    optional fields here are the Review's own, set even when a later step of their stage fails."""

    stack: ExitStack
    slower_than: float = SLOWER_THAN
    config: config.Config = field(default_factory=config.Config)
    rules: list[Rule] = field(default_factory=list)
    series: Series | None = None  # set by load, replaced by parse
    findings: list[Finding] = field(default_factory=list)
    stages: list[StageResult] = field(default_factory=list)
    apply: ApplyResult | None = None  # reported with the patch that did not apply
    chosen: list[Chosen] = field(default_factory=list)
    selftests: tuple[TestRun, ...] = ()
    benchmarks: tuple[BenchResult, ...] = ()
    boot: BootResult | None = None  # reported with the in-kernel test problems that fail the stage
    builds: tuple[BuiltTarget, ...] = ()  # the build stage's targets and steps
    head: applycache.Head | None = None  # the patched commit and its repository (apply stage; None when a patch failed)
    progress: Progress = QUIET  # what the selftest and boot stages tell the user of each build and run

    def review(self) -> Review:
        chosen = tuple(ChosenTest(str(c.ref), c.why) for c in self.chosen)
        return Review(self.series, tuple(self.findings), tuple(self.stages), self.apply, chosen, self.selftests,
                      self.benchmarks, self.boot, self.builds, self.slower_than)


def review(request: ReviewRequest, progress: Progress | None = None) -> tuple[Review, ReviewerError | None]:
    """Run every stage; return the review and the error that stopped it, if any."""
    with ExitStack() as stack:
        run = _Run(stack, slower_than(request.selftests.slower_than, ""), progress=progress or QUIET)
        try:
            _configure(run, request)
        except ConfigError as exc:
            return run.review(), exc
        if request.source.tree is not None:  # what killed runs left registered in the tree, before any stage adds to it
            from reviewer.apply import worktree

            worktree.sweep(request.source.tree)
        try:
            _stages(run, request, progress)
        except _Stopped as stop:
            return run.review(), stop.error
        return run.review(), None


def _stages(run: _Run, request: ReviewRequest, progress: Progress | None) -> None:
    """The stages in order, each given what the earlier ones returned; _Stopped at the first that fails."""
    series = _stage(run, "load", lambda: _load(run, request.source, debug=request.run.debug), progress)
    series = _stage(run, "parse", lambda: _parse(run, series), progress)
    base = _stage(run, "check", lambda: _check(run, request, series), progress)
    if base is None:
        run.stages.append(StageResult("apply", StageStatus.SKIPPED, 0.0, "no kernel tree given (--tree)"))
        run.stages.append(StageResult("build", StageStatus.SKIPPED, 0.0, "needs a kernel tree (--tree)"))
        run.stages.append(StageResult("selftests", StageStatus.SKIPPED, 0.0, "needs a kernel tree (--tree)"))
        run.stages.append(StageResult("boot", StageStatus.SKIPPED, 0.0, "needs a kernel tree (--tree)"))
        return
    patched = _stage(run, "apply", lambda: _apply(run, request, series, base), progress)
    _stage(run, "build", lambda: _build(run, request, series, base, patched), progress)
    _stage(run, "selftests", lambda: _selftests(run, request, series, base, patched), progress)
    _stage(run, "boot", lambda: _boot(run, request, series, base, patched), progress)


def _configure(run: _Run, request: ReviewRequest) -> None:
    """Config and rule files are validated before anything is fetched or touched."""
    run.config = config.load(request.source.cwd, request.source.tree)
    for folder in (RULES_DIR, *run.config.rule_dirs, *request.checks.rules_dirs):
        run.rules += load_rules(Path(folder))
    if run.config.disable or run.config.levels:
        from reviewer import kernelscripts

        config.validate_ids(run.config, [*(r.id for r in run.rules), *CHECKS, *kernelscripts.IDS, *PARSE_IDS, BUILD_ID])
    if request.source.tree is not None and (request.selftests.wanted or request.boot.run):
        # Where the selftests and boots keep their logs: a parent that cannot be made or written fails now,
        # not after the fetch and the builds (the run's own directory is made only when there is a log to keep).
        config.run_log_dir(run.config, request.run.log_dir, request.run.stamp)


def _stage(run: _Run, name: str, step: Callable[[], Done[Q]], progress: Progress | None) -> Q:
    """Run one stage's step, record it, and return its payload; its ReviewerError is recorded as the stage's
    failure and stops the review (_Stopped)."""
    start = time.perf_counter()
    with (progress or QUIET).stage(name):
        try:
            done = step()
        except ReviewerError as exc:
            run.stages.append(StageResult(name, StageStatus.FAILED, time.perf_counter() - start, exc.message))
            raise _Stopped(exc) from exc
    assert done.status is not StageStatus.FAILED, f"stage {name}: a failure is a ReviewerError"
    run.stages.append(StageResult(name, done.status, time.perf_counter() - start, done.detail))
    return done.payload


def _load(run: _Run, source: SourceOptions, *, debug: bool) -> Done[Series]:
    """The series SOURCE names (its target already resolved: reviewer.app reads a b4 prep branch)."""
    if source.target is None:
        raise UsageError("no TARGET given", "give an mbox, a directory, a git range or a Message-ID; see review --help")
    target = targets.classify(source.target, source.cwd)
    remote = targets.Remote(source.lore_url, source.no_cache, source.offline, run.config.lore_url, run.config.cache_minutes)
    s = run.series = targets.load(target, source.cwd, source.revision, debug=debug, remote=remote)
    if s.pull_request is not None:
        return ok(f"{target.kind}: a pull request of {s.pull_request.ref}" + ("" if s.patches else ", no diff in the mail"), s)
    of_range = f"; --tree {source.tree}: the kernel tree the range is in" if source.tree_of_range else ""
    return ok(f"{target.kind}: v{s.version}, {len(s.patches)} of {s.total} patches{of_range}", s)


def _parse(run: _Run, series: Series) -> Done[Series]:
    """Every patch's diff, as far as it can be read: a damaged or missing diff is a finding on its patch,
    and the other patches are still reviewed."""
    parsed = [(p, read_diff(p.diff)) for p in series.patches]
    series = run.series = replace(series, patches=tuple(replace(p, files=d.files) for p, d in parsed))
    run.findings.extend(config.apply(run.config, [f for p, d in parsed for f in _diff_findings(p, d)]))
    files = sum(len(d.files) for _, d in parsed)
    damaged = sum(1 for _, d in parsed if d.damage)
    bare = sum(1 for _, d in parsed if not d.files and not d.damage)
    extra = "".join(f"; {n} {what}" for n, what in ((damaged, "damaged"), (bare, "without a diff")) if n)
    return ok(f"{files} files, +{series.added} -{series.removed}{extra}", series)


# The ids the parse stage gives its findings (not checks: the check stage never sees the damage).
PARSE_IDS = ("patch-damaged", "patch-no-diff")
BUILD_ID = "build"  # build/warning, build/error, ... (reviewer/compile/judge.py): git config reviewer.build/warning.level info


def _diff_findings(patch: Patch, parsed: ParsedDiff) -> list[Finding]:
    """A damaged diff is an error on its patch, quoting the first damaged hunk; a patch mail without one, a warning."""
    if parsed.damage:
        first, more = parsed.damage[0], len(parsed.damage) - 1
        also = f" ({more} more damaged hunk{'s' if more > 1 else ''})" if more else ""
        return [Finding(PARSE_IDS[0], Level.ERROR, f"the diff is damaged: {first.why}{also}", patch.index,
                        first.path or None, first.line, "resend the patch with git send-email (Documentation/process/"
                        "email-clients.rst says how to keep a mail client from damaging it)", first.quote)]
    if not parsed.files:
        return [Finding(PARSE_IDS[1], Level.WARNING, "the patch mail has no diff the tool could parse", patch.index,
                        hint="resend the patch with git send-email, its diff inline in the mail")]
    return []


def _check(run: _Run, request: ReviewRequest, series: Series) -> Done[_Base | None]:
    """The rules and checks; with a tree, the base is chosen first (the rules read its files) and returned."""
    chosen = None
    if request.source.tree is not None:
        if not tree_git.is_git_tree(request.source.tree):  # the CLI checks it up front; a library caller may not have
            raise ConfigError(f"--tree {request.source.tree}: not a git repository", "point --tree at a kernel git checkout")
        commit, source = apply_base.choose_base(request.source.tree, series, request.source.base)
        chosen = _Base(commit, source, GitBaseTree(request.source.tree, commit))
        if request.selftests.tests and not request.selftests.no_tests:  # a name the tree lacks is a usage error, before anything is applied
            from reviewer.selftests import known

            known.check(request.selftests.tests, chosen.tree, series)
    base = chosen.tree if chosen else None
    found = [*run_checks(series, base), *evaluate(run.rules, series, base)]
    scripts = _kernel_scripts(run, request, series, request.source.tree) if request.source.tree is not None else None
    reported = noise.drop([*found, *(scripts.findings if scripts else ())], series, base)
    run.findings.extend(merge.merge(config.apply(run.config, reported)))
    note = f"; {scripts.note}" if scripts and scripts.note else ""
    return ok(f"{len(CHECKS)} checks, {len(run.rules)} rules, {len(run.findings)} findings{note}", chosen)


def _kernel_scripts(run: _Run, request: ReviewRequest, series: Series, tree: Path) -> kernelscripts.ScriptFindings:
    """The tree's checkpatch.pl and get_maintainer.pl, when a tree is given."""
    from reviewer import kernelscripts

    checks = request.checks
    options = kernelscripts.Options(checks.checkpatch, checks.checkpatch_strict, checks.codespell, run.config.checkpatch_ignore,
                                    cache=_result_policy(run, request))
    return kernelscripts.review(series, tree, options)


def _apply(run: _Run, request: ReviewRequest, series: Series, chosen: _Base) -> Done[Path | None]:
    """The series applied in a worktree of the tree: returns the worktree (None: nothing to apply)."""
    from reviewer.apply import cache as applycache

    assert request.source.tree is not None
    if not series.patches and (pull := series.pull_request) is not None:
        return skipped(f"a pull request without a diff; nothing to apply (git fetch {pull.url} {pull.ref})")
    base, source = chosen.commit, chosen.source
    if source in ("head", "guess"):
        why = f"base-commit {series.base_commit} is not in the tree" if series.base_commit else "the series names no base-commit"
        where = "guessed from the patches' pre-image blobs:" if source == "guess" else "applied to HEAD"
        run.findings.append(Finding("apply-base", Level.INFO if source == "guess" else Level.WARNING, f"{why}; {where} {base[:12]}",
                                    hint="authors: send with `git format-patch --base=auto` or b4"))
    # A cached outcome when only listings follow (no selftests run, no boot): no worktree then.
    tree, policy = request.source.tree, _result_policy(run, request)
    # Selftests build in the worktree (and --boot keeps it broad too); else git am and the listings alone read it: narrow.
    build = bool(request.selftests.wanted or request.boot.run)  # --build reads only the commits: narrow will do
    more = _guest_dirs(request, series) if request.selftests.wanted else []
    patched, results, cached, run.head = applycache.apply(tree, base, series, policy, reuse=not build, stack=run.stack,
                                                          open_worktree=lambda: _worktree(run, series, tree, base, build=build, more=more))
    run.apply = ApplyResult(base, source, results)
    failed = run.apply.failed
    if failed is not None:
        raise ApplyError(f"patch {failed.index}/{series.total} does not apply to {base[:12]}: {failed.detail}",
                         "check the base with --base REF; the tree was left untouched")
    return ok(f"{len(results)} patches applied to {base[:12]} ({source}){' (cached)' if cached else ''}", patched)


def _result_policy(run: _Run, request: ReviewRequest) -> resultcache.CacheUse:
    """--no-cache recomputes (and stores); git config reviewer.resultCache false neither reads nor stores."""
    from reviewer.store import results as resultcache

    return resultcache.CacheUse.of(no_cache=request.source.no_cache, enabled=run.config.result_cache is not False)


def _worktree(run: _Run, series: Series, tree: Path, base: str, *, build: bool = True,
              more: Sequence[str] = ()) -> AbstractContextManager[Path]:
    """A throw-away worktree, or a reusable one from the cache (git config reviewer.reuseWorktrees).
    BUILD: selftests or a kernel build will use it (else only git am and the listings read it); MORE: directories
    it needs whole."""
    from reviewer.apply import worktree

    if run.config.reuse_worktrees:
        return worktree.cached(tree, base, series.touched, cache.root() / "worktrees", build=build, more=more)
    return worktree.isolated(tree, base, series.touched, build=build, more=more)


def _guest_dirs(request: ReviewRequest, series: Series) -> list[str]:
    """The arch/ directory the selftests are built for when they will run in guests (its tests need `make ARCH=x
    headers`, which reads it), checked out with the worktrees: [] when they run on the host."""
    from reviewer.selftests import where as placement

    assert request.source.tree is not None
    where = placement.decide(series.touched, request.selftests.run_on, request.source.tree, request.build.arches)
    guest = where.arch or where.root  # root: only the guest root is missing (--run-on vm makes it first)
    return [f"arch/{guest.srcarch}"] if guest is not None else []


def _build(run: _Run, request: ReviewRequest, series: Series, base: _Base, patched: Path | None) -> Done[None]:
    """The series compiled for its architectures, the base and then patch by patch (reviewer/compile)."""
    from reviewer import compile as build
    from reviewer.kernel import cache_for

    if patched is None:
        return skipped("nothing was applied")
    touched = series.touched
    if not request.build.run:
        return skipped(f"{build.describe(touched, len(series.patches), request.build.arches)}; pass --build (minutes)")
    assert request.source.tree is not None and run.head is not None
    repo = run.head.repo
    shas = tree_git.git(repo, "rev-list", "--reverse", f"{base.commit}..{run.head.commit}").split()
    if len(shas) != len(series.patches):
        return skipped(f"the worktree holds {len(shas)} commits for {len(series.patches)} patches: nothing built")
    commits = [build.Commit(0, base.commit), *(build.Commit(p.index, sha, tuple(f.path for f in p.files))
                                               for p, sha in zip(series.patches, shas, strict=True))]
    targets, _ = build.chosen(touched, request.build.arches)
    if not targets:
        return skipped("the series changes nothing the kernel build compiles")

    ending.say(f"build: the base and {len(series.patches)} patch(es) for {', '.join(t.name for t in targets)}: "
               f"{build.cost(targets, len(commits))}")
    plan = build.BuildPlan(commits, touched, cache_for(request.source.tree), repo,
                      deadline=time.monotonic() + request.build.timeout, hide=(tree_git.common_dir(request.source.tree),))
    out = build.run(plan, request.build.arches, run.progress)
    run.builds = tuple(build.report(b) for b in out.builds)
    run.findings = _replace_lds_regex(run.findings, build.exported(out.builds))
    run.findings.extend(config.apply(run.config, out.findings))
    steps = sum(1 for b in out.builds for s in b.steps if s.status in ("built", "failed"))
    failed = [f for f in out.findings if f.rule == "build/error"]
    warned = sum(1 for f in out.findings if f.rule == "build/warning")
    broken = f", {len(failed)} patch(es) do not build" if failed else ""
    if lost := sum(1 for f in out.findings if f.rule == "build/vdso-export"):
        broken += f", {lost} vDSO export problem(s)"
    if any(f.rule == "build/timeout" for f in out.findings):
        broken += "; --build-timeout reached"
    return ok(f"{', '.join(b.target.name for b in out.builds)}: {steps} builds, {warned} new warnings{broken}", None)


def _replace_lds_regex(findings: list[Finding], exported: dict[str, bool]) -> list[Finding]:
    """The vDSO rule's linker-script regex is the fallback: where the vDSO was built, its symbol table decides."""
    return [f for f in findings
            if not (f.rule == "vdso-getrandom-new-arch/lds-export" and any(f"arch/{a} " in f.message + " " for a in exported))]


def _selftests(run: _Run, request: ReviewRequest, series: Series, base: _Base, patched: Path | None) -> Done[None]:
    if patched is None:
        return skipped("nothing was applied")
    if request.selftests.no_tests:
        return skipped("--no-tests")
    run.chosen = _choose(run, request, series, base)
    if not run.chosen:
        return skipped("no selftest is relevant to this series")
    names = ", ".join(str(c.ref) for c in run.chosen)
    if not request.selftests.wanted:
        return skipped(f"would run {names}; pass --run-tests to build and run code from the series")
    from reviewer.selftests import stage as selftest_stage
    from reviewer.selftests import where as placement

    assert request.source.tree is not None
    where = placement.decide(series.touched, request.selftests.run_on, request.source.tree, request.build.arches)
    if where.root is not None and request.selftests.run_on == "vm":  # guests asked for, and only their root is missing: made here

        where = placement.make_root(where, lambda line: ending.say(f"selftests: {line}"))
    if where.missing and request.selftests.run_on == "vm":  # asked for and impossible: nothing is run on the host instead
        run.findings.append(Finding(placement.RULE, Level.INFO, f"the selftests were not run: {where.missing}",
                                    hint="; ".join(x for x in (where.fix, "--run-on host runs them on this machine's kernel") if x)))
        return skipped(f"would run {names} in the series' kernels, but {where.lacking}")
    if where.missing:  # auto: on the host, said before it starts and in the report, never silently

        ending.say(f"selftests: on this machine's kernel, not in the series' kernels: {where.lacking}")
    logs = config.run_log_dir(run.config, request.run.log_dir, request.run.stamp) / "selftests"  # checked again before anything runs
    outcome = _run_tests(_Applied(run, series, base, patched), request, where.arch if where.vm else None)
    run.selftests, run.benchmarks = outcome.runs, outcome.benchmarks
    run.findings.extend(outcome.findings)
    if caveat := selftest_stage.host_caveat(series.touched, outcome.runs, where):
        run.findings.append(caveat)
    if where.arch is not None and where.vm and (gap := placement.uncovered(series.touched, where.arch)):
        run.findings.append(gap)
    kept = f"; output in {logs}" if selftest_stage.save_logs(outcome.runs, logs) else ""
    if outcome.regressions:
        raise SelftestError(f"{len(outcome.regressions)} selftest regression(s) on the patched tree: {outcome.regressions[0].message}",
                            f"the output of each run is in {logs}" if kept else "see the selftests section of the report for the logs")
    inside = " in the series' kernels" if where.vm else ""
    host = f"; on this machine's kernel, not in the series' kernels: {where.lacking}" if where.missing else ""
    return ok(f"{names}: {len(outcome.runs)} runs{inside}, {len(outcome.benchmarks)} benchmark figures{host}{kept}", None)


def _boot(run: _Run, request: ReviewRequest, series: Series, base: _Base, patched: Path | None) -> Done[BootResult | None]:
    """In-kernel tests (dmapool_test, KUnit; built in, or named by a triggered rule): tinyconfig kernels
    of the base and the patched commit, booted under QEMU; the console logs go to the run's log directory."""
    from reviewer import boot
    from reviewer.kernel import cache_for
    from reviewer.selftests.choose import Chosen, TestRef

    if patched is None:
        return skipped("nothing was applied")
    assert request.source.tree is not None
    touched = series.touched
    extra = boot.from_rules(run.rules, series.patches)
    # Listed once, in the patched tree (a KUnit suite the series adds counts), and handed to the runner as is.
    chosen = boot.relevant(touched, patched, extra)
    run.chosen += [Chosen(TestRef("boot", t.name), (why,)) for t, why in chosen]
    if not chosen:
        return skipped("no in-kernel test is relevant to this series")
    if not request.boot.run:
        return skipped(f"would boot {'; '.join(boot.describe(t) for t, _ in chosen)}; pass --boot (two kernel builds: minutes)")
    head = tree_git.git(patched, "rev-parse", "HEAD").strip()
    # Kernel builds are kept per tree (REVIEWER_BOOT_CACHE moves them): a base is built once per config.
    cache_dir = cache_for(request.source.tree)
    logs = config.run_log_dir(run.config, request.run.log_dir, request.run.stamp)
    # The base side is the user's tree at the base commit; both commits are checked out from the patched
    # worktree's repository, the one that holds both (a shadow repository borrows the tree's objects).
    out = boot.run_intests(request.source.tree, patched, touched, request.boot.envs, cache_dir, request.boot.timeout, log_dir=logs,
                           extra=extra, slower_than=request.selftests.slower_than, commits=(base.commit, head), chosen=tuple(chosen),
                           progress=run.progress)
    run.selftests += out.runs
    run.benchmarks += out.benchmarks
    run.findings.extend(out.findings)
    result = run.boot = BootResult(out.accel, tuple((env, tuple(lines)) for env, lines in out.config.items()), tuple(out.logs.items()),
                                   str(logs) if out.logs else None)
    errors = [f for f in out.findings if f.level is Level.ERROR]
    if errors:
        raise SelftestError(f"{len(errors)} in-kernel test problem(s): {errors[0].message}", f"the console logs are in {logs}")
    kept = f"; console logs in {logs}" if out.logs else ""
    return ok(f"{', '.join(t.name for t, _ in chosen)}: {len(out.runs)} runs under {out.accel}, "
              f"{len(out.benchmarks)} figures{kept}", result)


def _choose(run: _Run, request: ReviewRequest, series: Series, base: _Base) -> list[Chosen]:
    from reviewer.selftests.choose import Chosen, TestRef, choose

    if request.selftests.tests:
        return [Chosen(TestRef.parse(t), ("--tests",)) for t in request.selftests.tests]
    hints = [(t, f"rule {r.id}") for r in run.rules if r.selftests and trigger_hits(r, series.patches) for t in r.selftests]
    maintainers = base.tree.read("MAINTAINERS")
    return choose(series, hints, maintainers, is_dir=dirs_after(series, base.tree))


@dataclass(frozen=True)
class _Applied:
    """What running the selftests starts from: the run (its exit stack, the chosen tests), the series, its base
    and the worktree the series was applied in."""

    run: _Run
    series: Series
    base: _Base
    patched: Path


def _run_tests(applied: _Applied, request: ReviewRequest, in_vm: Arch | None = None) -> selftest_stage.SelftestResults:
    """Build and run the chosen selftests on a base worktree and on the patched one (a seam for the tests);
    IN_VM: each in its own kernel of that architecture, built from the tree's commit and booted."""
    from reviewer.apply import worktree
    from reviewer.selftests import stage as selftest_stage
    from reviewer.selftests.trees import Later, Tree

    run, tree = applied.run, request.source.tree
    assert tree is not None
    scratch = Path(run.stack.enter_context(tempfile.TemporaryDirectory(prefix="reviewer-run-")))
    widen = [f"arch/{in_vm.srcarch}"] if in_vm is not None else []  # the tests are built for the guest's architecture: its arch/

    def base_wt() -> Path:  # made only if its files are needed (selftests/trees.py)
        return run.stack.enter_context(_worktree(run, applied.series, tree, applied.base.commit, more=widen))

    trees: dict[str, Tree] = {"base": Later(applied.base.commit, applied.patched, base_wt), "patched": applied.patched}
    worktree.widen(applied.patched, widen)  # even if the series leaves it alone (checked out at the apply: nothing to do)
    kernels, early = _guest_kernels(applied, request, in_vm) if in_vm else (None, selftest_stage.SelftestResults((), (), ()))
    limit = slower_than(request.selftests.slower_than, kernels.accel if kernels else "")
    from reviewer.selftests import kept

    use = _result_policy(run, request)  # --no-cache builds and tests the base again; resultCache=false keeps nothing
    plan = selftest_stage.Plan(tuple(run.chosen), request.selftests.envs, request.selftests.bench_runs, limit,
                               dict(request.selftests.test_env), request.selftests.benchmarks, request.selftests.test_timeout, kernels,
                               kept.store() if use.write else None, tuple(applied.series.touched),
                               reuse=use.read, write=use.write)
    out = selftest_stage.run(plan, trees, scratch, run.progress)
    return selftest_stage.SelftestResults((*early.runs, *out.runs), out.benchmarks, (*early.findings, *out.findings))


def _guest_kernels(applied: _Applied, request: ReviewRequest, arch: Arch) -> tuple[inguest.Kernels, selftest_stage.SelftestResults]:
    """The base and patched kernels the tests boot (built, or from the tree's kernel cache), and the build rows and findings."""
    from reviewer.kernel import cache_for, guest, guestkernel
    from reviewer.selftests import inguest
    from reviewer.selftests import stage as selftest_stage
    from reviewer.selftests import where as placement

    run = applied.run
    assert request.source.tree is not None
    commits = {"base": applied.base.commit, "patched": tree_git.git(applied.patched, "rev-parse", "HEAD").strip()}
    dirs = sorted({c.ref.dir for c in run.chosen})
    cost = placement.cost(request.selftests.envs, request.selftests.bench_runs, arch)
    ending.say(f"selftests in the series' {arch.name} kernels: {cost}")
    made = placement.kernels(tree_git.common_dir(applied.patched), commits, guestkernel.fragment(applied.patched, dirs, arch),
                      cache_for(request.source.tree), request.build.timeout, run.progress, arch)
    accel = next((guest.accel_for(i, arch) for i in made.images.values() if i is not None), "-")
    where = {label: f"booted {c[:12]} {arch.name} {accel}" for label, c in commits.items()}
    logs = config.run_log_dir(run.config, request.run.log_dir, request.run.stamp) / "guests"
    both = f"booted {arch.name} {accel}: base {commits['base'][:12]}, patched {commits['patched'][:12]}"
    kernels = inguest.Kernels(made.images, where, both, logs, arch=arch, accel=accel)
    return kernels, selftest_stage.SelftestResults(made.runs, (), made.findings)
