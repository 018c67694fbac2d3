"""Build and boot base and patched kernels for the in-kernel tests the series calls for; compare.

The cache directory (one per kernel tree) holds the private source checkout, one build
directory per environment (incremental across sides and runs), ccache's store, and the
bzImages already built, keyed by the commit's tree (what the build reads: the checkout has no .git, so
the kernel's version string names no commit) and the fragment: a base is built once, and a series
reviewed again (git am makes new commits of the same trees) reuses its patched kernel.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import hostload, model
from reviewer.boot import ab
from reviewer.boot.intests import InTest, relevant, symbols
from reviewer.errors import SelftestError, UsageError
from reviewer.kernel import configured, kconfig, qemu, srctree
from reviewer.model import BenchResult, Finding, TestRun
from reviewer.progress import QUIET, Progress
from reviewer.run import private
from reviewer.tree.git import common_dir
from reviewer.tree.git import git as git_run
from reviewer.verdict import BENCH_RUNS

KEEP_IMAGES = 24
REPEAT_UNDER = 20.0  # seconds: boots longer than this run once


@dataclass(frozen=True)
class BootResults:
    runs: tuple[TestRun, ...] = ()
    benchmarks: tuple[BenchResult, ...] = ()
    findings: tuple[Finding, ...] = ()
    tests: tuple[tuple[InTest, str], ...] = ()  # what was chosen, and why
    config: dict[str, tuple[str, ...]] = field(default_factory=dict)  # env -> the fragment on top of tinyconfig
    logs: dict[str, str] = field(default_factory=dict)  # "base/plain" -> console log path (the first boot's)
    accel: str = ""  # kvm | tcg


def run_intests(
    base_wt: Path, patched_wt: Path, touched: Sequence[str], envs: tuple[str, ...], cache_dir: Path, timeout: float,
    *, log_dir: Path | None = None, extra: Sequence[InTest] = (), slower_than: float | None = None, boots: int = BENCH_RUNS,
    build_timeout: float = kconfig.BUILD_TIMEOUT, commits: tuple[str, str] | None = None,
    progress: Progress = QUIET, chosen: Sequence[tuple[InTest, str]] | None = None,
) -> BootResults:
    """Build base and patched (the worktrees' commits, or COMMITS: the worktrees may be sparse) in each
    environment, boot each up to BOOTS times (TIMEOUT seconds of wall clock per boot), and compare.
    PROGRESS hears of each build and boot as it starts. CHOSEN: the tests the caller has listed (else
    they are listed here, in BASE_WT). Both commits are checked out from PATCHED_WT's repository: the
    patched commit may exist only there (a worktree of a shadow repository borrows the base's objects)."""
    if unknown := [e for e in envs if e not in kconfig.ENVS]:
        raise UsageError(f"unknown boot environment {unknown[0]!r}", f"choose from: {', '.join(kconfig.ENVS)}")
    chosen = list(chosen) if chosen is not None else relevant(touched, base_wt, extra)
    if not chosen:
        return BootResults()
    preflight()
    tests = [t for t, _ in chosen]
    base, patched = commits or (srctree.commit_of(base_wt), srctree.commit_of(patched_wt))
    trees = {"base": base, "patched": patched}
    logs = log_dir or cache_dir / "logs"  # created by the first boot: a failed build leaves no empty directory
    out = BootResults(tests=tuple(chosen), config={e: kconfig.fragment(symbols(tests), e) for e in envs})
    progress.expect(len(envs) * len(trees))  # the builds; each round of boots adds its own
    with srctree.locked(cache_dir):
        for env in envs:
            sides: dict[str, ab.BootedKernel] = {}
            for tree, c in trees.items():
                progress.advance(f"build the {tree} kernel ({env})")
                sides[tree] = side(common_dir(patched_wt), c, tree, env, out.config[env], cache_dir, build_timeout)
            before = hostload.read()  # a busy machine stretches boots too: dmapool_test's times are then not judged
            sides = _boot(sides, boots, timeout, logs, out.logs, progress)
            out = _merge(out, tests, sides, slower_than, hostload.since(before))
    # Each row says which kernel it ran on: the side's own commit, booted for x86_64 under kvm or tcg.
    where = {tree: f"booted {c[:12]} x86_64 {out.accel or '-'}" for tree, c in trees.items()}
    both = f"booted x86_64 {out.accel or '-'}: base {base[:12]}, patched {patched[:12]}"
    return replace(out, runs=tuple(replace(r, where=where.get(r.tree, "")) for r in out.runs),
                   benchmarks=tuple(replace(b, where=both) for b in out.benchmarks))


# The commands a boot needs, and the Debian packages that bring them.
TOOLS = {"make": "make", "gcc": "gcc", "flex": "flex", "bison": "bison", "bc": "bc", qemu.QEMU: "qemu-system-x86"}


def preflight() -> None:
    """Fail before building anything when a tool is missing (else both sides "fail to build")."""
    missing = [cmd for cmd in TOOLS if shutil.which(cmd) is None]
    if missing:
        pkgs = " ".join(TOOLS[c] for c in missing)
        raise SelftestError(f"booting in-kernel tests needs {', '.join(missing)}", f"install them: apt-get install {pkgs} libelf-dev")


@dataclass(frozen=True)
class How:
    """How a kind of kernel is built: make's variables (None: the x86_64 host's gcc), its target, and the
    image the target leaves in the build directory."""

    variables: tuple[str, ...] | None = None
    target: str = "bzImage"
    image: str = "arch/x86/boot/bzImage"


def side(git: Path, commit: str, tree: str, env: str, lines: tuple[str, ...], cache: Path, timeout: float,
         how: How = How()) -> ab.BootedKernel:
    """The kernel of COMMIT in ENV: the cached image of its tree, else a build in the env's build directory."""
    image = image_path(git, commit, env, lines, cache, how)
    if image.is_file():
        os.utime(image)  # used now: the newest, never what the other side's build prunes before the boot (_prune)
        return ab.BootedKernel(tree, env, kconfig.Build(ok=True, seconds=0.0, image=image, config=lines, log="(cached image)"))
    srctree.checkout(git, commit, cache / "src")
    # A build a second Ctrl-C or SIGKILL cut short leaves half-written objects that look up to date: start over.
    building = cache / f"build-{env}.building"
    if building.exists():
        shutil.rmtree(cache / f"build-{env}", ignore_errors=True)
    building.touch()
    out = cache / f"build-{env}"
    kept = configured.kept(git, out, commit, lines, how.variables)
    if kept is None:
        configured.forget(out)
    b = kconfig.build(cache / "src", out, lines, timeout, hide=(git,),  # the user's repository: out of the sandbox's sight
                      variables=how.variables, target=how.target, image=how.image, kept=kept)
    if b.ok:
        configured.remember(out, commit, lines, how.variables, b.problems)
    building.unlink(missing_ok=True)
    if b.ok and b.image is not None:
        image.parent.mkdir(exist_ok=True)
        partial = image.with_name(f".{image.name}.{os.getpid()}.tmp")  # never a truncated cached image
        shutil.copyfile(b.image, partial)
        os.replace(partial, image)
        _prune(image.parent)
        b = replace(b, image=image)
    return ab.BootedKernel(tree, env, b)


def image_path(git: Path, commit: str, env: str, lines: tuple[str, ...], cache: Path, how: How = How()) -> Path:
    """Where the cache keeps the kernel of COMMIT in ENV: named by what the kernel is built from, the fragment and the
    make variables."""
    content = kernel_content(git, commit)
    key = hashlib.sha256("\n".join((content, *lines, *(how.variables or ()))).encode()).hexdigest()[:16]
    return cache / "images" / f"{content[:12]}-{env}-{key}.{Path(how.image).name}"


def kernel_content(git: Path, commit: str) -> str:
    """An id of COMMIT's tree without tools/testing/: no kernel build reads the selftests, so a commit that changes only
    them has its parent's kernel. (The rest of tools/ stays in: objtool is built from it and run on every object.)"""
    top = git_run(git, "ls-tree", commit, timeout=srctree.GIT_TIMEOUT).splitlines()
    tools = git_run(git, "ls-tree", f"{commit}:tools", timeout=srctree.GIT_TIMEOUT).splitlines() if any(
        ln.endswith("\ttools") and " tree " in ln for ln in top) else []
    kept = [ln for ln in top if not ln.endswith("\ttools")] + ["tools/" + ln for ln in tools if not ln.endswith("\ttesting")]
    return hashlib.sha1("\n".join(kept).encode()).hexdigest()


def _boot(sides: dict[str, ab.BootedKernel], boots: int, timeout: float, logs: Path, paths: dict[str, str],
          progress: Progress = QUIET) -> dict[str, ab.BootedKernel]:
    """Boot the sides in turn, up to BOOTS rounds (alternating, so that a slow moment hits both) for
    medians. A side boots again only while its boots are clean and short: a hang or a splat
    will come back, and a minute-long test (debug, TCG) averages out its own noise."""
    done: dict[str, list[qemu.Boot]] = {tree: [] for tree in sides}
    for n in range(boots):
        going = [(tree, side) for tree, side in sides.items() if side.build.image is not None and (not n or _again(done[tree]))]
        progress.expect(len(going))
        for tree, side in going:
            assert side.build.image is not None
            progress.advance(f"boot the {tree} kernel ({side.env})" + (f", boot {n + 1} of up to {boots}" if n else ""))
            log = logs / f"boot-{tree}-{side.env}{f'-{n + 1}' if n else ''}.log"
            private.make_dir(logs)  # console logs: the user's eyes only (700; proc.watch writes them 600)
            done[tree].append(qemu.boot(side.build.image, timeout, log))
            paths.setdefault(f"{tree}/{side.env}", str(log))
    return {tree: ab.BootedKernel(s.tree, s.env, s.build, tuple(done[tree])) for tree, s in sides.items()}


def _again(previous: list[qemu.Boot]) -> bool:
    last = previous[-1] if previous else None
    return last is not None and last.seconds < REPEAT_UNDER and ab.clean(last)


def _merge(out: BootResults, tests: list[InTest], sides: dict[str, ab.BootedKernel], asked: float | None,
           load: hostload.HostLoad | None = None) -> BootResults:
    runs = [r for s in sides.values() for r in ab.runs(tests, s)]
    findings = [f for s in sides.values() for f in ab.side_findings(s)]
    accel = next((b.accel for s in sides.values() for b in s.boots), out.accel)
    bench, more = ab.compare(tests, sides["base"], sides["patched"], model.slower_than(asked, accel), load)
    return BootResults((*out.runs, *runs), (*out.benchmarks, *bench), (*out.findings, *findings, *more),
                   out.tests, out.config, out.logs, accel)


def _prune(images: Path) -> None:
    """Keep the KEEP_IMAGES images last built or used."""
    for old in sorted((p for p in images.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime)[:-KEEP_IMAGES]:
        old.unlink(missing_ok=True)


