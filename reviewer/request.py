"""What a review is asked to do: a ReviewRequest composed of one frozen options dataclass per stage, as
the kernel's kunit tool composes its requests (tools/testing/kunit/kunit.py: KunitConfigRequest,
KunitBuildRequest, ... make up KunitRequest). The CLI, the bot and the tests build one and hand it to
reviewer.app.review (or, for the pipeline alone, reviewer.pipeline.review)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reviewer import config
from reviewer.run.sandbox import MAX_TEST_SECONDS
from reviewer.verdict import BENCH_RUNS


@dataclass(frozen=True)
class SourceOptions:
    """The load stage's: what to review, where, and the kernel tree the later stages apply it to."""

    target: str | None = None  # None: the b4 prep branch checked out in CWD (reviewer.app resolves it)
    cwd: Path = field(default_factory=Path.cwd)
    revision: int | None = None
    tree: Path | None = None  # the user's kernel git tree, for the apply stage
    tree_of_range: bool = False  # TREE was not given: it is the kernel tree the git range TARGET is in (target.range_tree)
    base: str | None = None  # --base REF overrides the series' base-commit
    lore_url: str | None = None  # --lore-url: the public-inbox archive to fetch Message-IDs from
    no_cache: bool = False  # --no-cache: refetch even a freshly cached thread (and recompute cached results)
    offline: bool = False  # --offline: only the thread cache, never the network


@dataclass(frozen=True)
class CheckOptions:
    """The check stage's: more rules, and the tree's checkpatch.pl."""

    rules_dirs: tuple[Path, ...] = ()  # --rules DIR: more rule files, after the shipped ones
    checkpatch: bool = True  # with a tree: the tree's scripts/checkpatch.pl (--no-checkpatch)
    checkpatch_strict: bool = False  # checkpatch.pl --strict (CHECK reports, as info)
    codespell: bool = False  # checkpatch.pl --codespell


@dataclass(frozen=True)
class SelftestOptions:
    """The selftests stage's: which tests, where, how often and how long."""

    run: bool = False  # --run-tests: build and run the relevant selftests (code from the series!)
    tests: tuple[str, ...] | None = None  # --tests: exactly these (implies run)
    no_tests: bool = False  # --no-tests: do not even list them
    envs: tuple[str, ...] = ("plain",)
    bench_runs: int = BENCH_RUNS  # verdict.py: the fewest runs a side that can give a verdict
    slower_than: float | None = None  # --slower-than; None: model.slower_than()'s default for where the benchmarks ran (boot's too)
    test_env: tuple[tuple[str, str], ...] = ()  # extra environment for tests and benchmarks
    test_timeout: float = MAX_TEST_SECONDS  # --test-timeout: the longest one selftest may run, whatever its settings file asks
    run_on: str = "auto"  # --run-on: host | vm | auto (vm when the series changes the kernel)
    benchmarks: tuple[str, ...] = ()  # --bench: opt-in benchmarks to run too

    @property
    def wanted(self) -> bool:
        """Tests are to be run (--run-tests or --tests), not only listed."""
        return bool(self.run or self.tests)


@dataclass(frozen=True)
class BuildOptions:
    """The build stage's (the guests' kernels for --run-on vm are built within its timeout and for its first arch too)."""

    run: bool = False  # --build: compile the series patch by patch for the arches it touches
    timeout: float = 1800.0  # --build-timeout: wall clock for the whole build stage
    arches: tuple[str, ...] = ()  # --arch: build targets instead of the series' own


@dataclass(frozen=True)
class BootOptions:
    """The boot stage's."""

    run: bool = False  # --boot: build and boot base and patched kernels for in-kernel tests
    envs: tuple[str, ...] = ("plain",)  # plain | debug
    timeout: float = 300.0  # wall clock per boot


@dataclass(frozen=True)
class RunOptions:
    """The whole run's: b4's log, and where the run's logs go."""

    debug: bool = False
    log_dir: Path | None = None  # --log-dir: where the run's log directory goes (else reviewer.logDir, else $XDG_STATE_HOME)
    stamp: str = field(default_factory=config.run_stamp)  # names the run's log directory: <UTC time>-<pid>


@dataclass(frozen=True)
class ReviewRequest:
    source: SourceOptions
    checks: CheckOptions = field(default_factory=CheckOptions)
    selftests: SelftestOptions = field(default_factory=SelftestOptions)
    build: BuildOptions = field(default_factory=BuildOptions)
    boot: BootOptions = field(default_factory=BootOptions)
    run: RunOptions = field(default_factory=RunOptions)
