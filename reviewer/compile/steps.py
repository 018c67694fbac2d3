"""Build the base and then the series patch by patch, for each target, as the kernel's build bots do.

Per target: one build directory per configuration (tinyconfig + the target's symbols + the
symbols that guard the touched objects), kept in the tree's kernel cache beside the boot stage's
and sharing its source checkout and ccache store, so that base and each patch are incremental.
Each step checks out its commit, removes the goals' objects (so that every step compiles, and
prints the warnings of, exactly the touched objects; ccache makes an unchanged one a copy and
replays its warnings; for `prepare`, the `.s` files the top-level Kbuild makes) and runs
`make -k W=1 <goals>` in the sandbox. A step's warnings are
compared with the steps before it (diag.new); an error is the patch's when the step before built.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer.compile import diag, objects, sources, vdso
from reviewer.errors import CommandError
from reviewer.kernel import configured, srctree
from reviewer.kernel import make as kmake
from reviewer.kernel.arches import Arch
from reviewer.progress import QUIET, Progress
from reviewer.run.sandbox import Sandbox
from reviewer.tree.git import git

BUILD_TIMEOUT = 1800.0  # --build-timeout: the whole stage


@dataclass(frozen=True)
class Commit:
    """One step: the base (index 0) or patch INDEX applied, and the paths that patch changed."""

    index: int
    sha: str
    touched: tuple[str, ...] = ()


@dataclass(frozen=True)
class Step:
    index: int  # 0: the base
    status: str  # built | failed | skipped | timeout
    seconds: float = 0.0
    goals: tuple[str, ...] = ()
    detail: str = ""  # why skipped, the first error
    diagnostics: tuple[diag.Diagnostic, ...] = ()
    images: tuple[vdso.Image, ...] = ()


@dataclass(frozen=True)
class TargetBuild:
    target: Arch
    steps: tuple[Step, ...] = ()
    config: tuple[str, ...] = ()  # the fragment on top of tinyconfig
    not_kept: tuple[str, ...] = ()  # fragment lines olddefconfig dropped
    problem: str = ""  # why the target was not built at all


@dataclass(frozen=True)
class BuildPlan:
    """What one --build run compiles: the commits, for which files, where the trees and objects are kept."""

    commits: Sequence[Commit]  # the base first
    touched: Sequence[str]  # the whole series'
    cache: Path
    git: Path  # the repository (common git dir) that holds every commit
    deadline: float = field(default_factory=lambda: time.monotonic() + BUILD_TIMEOUT)
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    hide: tuple[Path, ...] = ()  # git directories out of the sandbox's sight


def build_target(plan: BuildPlan, target: Arch, progress: Progress = QUIET) -> TargetBuild:
    """Every step of PLAN for TARGET (the caller holds the cache's lock)."""
    src = plan.cache / "src"
    final = plan.commits[-1]
    srctree.checkout(plan.git, final.sha, src)
    read = _reader(src)
    wanted = objects.goals(plan.touched, target, lambda p: (src / p).exists(), read, _lister(src))
    symbols = list(dict.fromkeys([*target.build_symbols, *(s for g in wanted for s in objects.guards(g, read))]))
    asked = {f"CONFIG_{s}=y" for s in symbols}  # a dependency olddefconfig drops (a hidden symbol) guards nothing: not reported
    symbols += objects.depends(symbols, {g.rsplit("/", 1)[0] for g in wanted if "/" in g.rstrip("/")}, read,
                               _defined(plan.git, final.sha, symbols))
    lines = tuple(f"CONFIG_{s}=y" for s in dict.fromkeys(symbols))
    key = hashlib.sha256("\n".join((target.name, *target.variables(ccache=False), *lines)).encode()).hexdigest()[:12]
    out = plan.cache / f"check-{target.name}-{key}"
    building = out.with_name(out.name + ".building")
    if building.exists():  # a run killed mid-build: its half-written objects may look up to date
        shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    kmake.ccache_dir(out).mkdir(exist_ok=True)
    result = TargetBuild(target, config=lines)
    building.touch()
    with tempfile.TemporaryDirectory(prefix="reviewer-build-") as scratch:
        box = kmake.Box(Sandbox(Path(scratch) / "home", kmake.sandbox_env(out)), src, out, plan.hide,
                          target.variables(ccache=shutil.which("ccache") is not None))
        steps: list[Step] = []
        for commit in plan.commits:
            left = plan.deadline - time.monotonic()
            if left <= 0:
                steps.append(Step(commit.index, "timeout", detail="--build-timeout reached before this step"))
                continue
            progress.advance(f"build {_name(commit)} for {target.name}")
            step, not_kept = _step(box, commit, plan, target, lines, left)
            if kept := tuple(ln for ln in not_kept if ln.split(" ", 1)[0] in asked):
                result = replace(result, not_kept=kept)
            steps.append(step)
    if not any(s.status == "timeout" and s.seconds for s in steps):  # make killed mid-way: the next run starts afresh
        building.unlink(missing_ok=True)
    (out / ".reviewer-used").touch()
    _prune(plan.cache, keep=out)
    return replace(result, steps=tuple(steps))


KEEP_BUILDS = 8  # build directories (per target and configuration) kept in a kernel cache: ~100-300 MB each


def _prune(cache: Path, keep: Path) -> None:
    """Remove the least recently used build directories beyond KEEP_BUILDS (the caller holds the cache's lock)."""
    def used(d: Path) -> float:
        try:
            return (d / ".reviewer-used").stat().st_mtime
        except OSError:
            return 0.0
    dirs = sorted((d for d in cache.glob("check-*") if d.is_dir() and not d.is_symlink() and d != keep), key=used, reverse=True)
    for old in dirs[KEEP_BUILDS - 1:]:
        shutil.rmtree(old, ignore_errors=True)
        old.with_name(old.name + ".building").unlink(missing_ok=True)
        configured.forget(old)


def _step(box: kmake.Box, commit: Commit, plan: BuildPlan, target: Arch, lines: tuple[str, ...],
          left: float) -> tuple[Step, tuple[str, ...]]:
    src, out = box.src, box.out
    start = time.monotonic()
    if commit.index and not any(objects.compiled(p, target) for p in commit.touched):
        return Step(commit.index, "skipped", detail=f"changes nothing {target.name} compiles ({_some(commit.touched)})"), ()
    srctree.checkout(plan.git, commit.sha, src)
    try:
        not_kept = _configuration(box, commit, plan.git, lines, left)
    except CommandError as exc:
        if exc.timeout is not None:
            return Step(commit.index, "timeout", time.monotonic() - start, detail="--build-timeout reached while configuring"), ()
        text = exc.stdout + "\n" + exc.stderr
        return Step(commit.index, "failed", time.monotonic() - start, detail=f"the configuration failed: {_first(text)}"), ()
    goals = tuple(objects.goals(plan.touched, target, lambda p: (src / p).exists(), _reader(src), _lister(src)))
    if not goals:
        return Step(commit.index, "skipped", detail=f"no C or assembly file of the series to compile for {target.name} here (headers, "
                    "Kconfig and Makefiles are compiled through the objects that use them)"), not_kept
    for g in goals:
        for stale in sources.prepared(_reader(src), target.srcarch).values() if g == sources.PREPARE else (g,):
            _forget(out, stale)
    status, log = "built", ""
    try:
        log = box.make(max(left - (time.monotonic() - start), 1.0), "-k", f"-j{plan.jobs}", "W=1", *_asked(goals))
    except CommandError as exc:
        log = exc.stdout + "\n" + exc.stderr
        status = "timeout" if exc.timeout is not None else "failed"
    found = diag.parse(log, (str(src), str(out), "../src"))
    errors = [d for d in found if d.kind == "error"]
    detail = errors[0].quote if errors else (_first(log) if status == "failed" else "")
    if status == "timeout":
        detail = "--build-timeout reached during this step"
    images: tuple[vdso.Image, ...] = ()
    if status == "built":
        images = tuple(vdso.read(p, out, target.readelf()) for g in goals if g.endswith("/") for p in vdso.images(out, g))
    return Step(commit.index, status, time.monotonic() - start, goals, detail, tuple(found), images), not_kept


def _asked(goals: Sequence[str]) -> tuple[str, ...]:
    """What make is asked for. `prepare` beside a single target (a file, `dir/`) would make a "mixed build",
    which the top-level Makefile runs one goal at a time under `set -e` (__build_one_by_one: a failed goal
    stops the rest, -k or not); every single target needs `prepare` anyway (`$(build-dir): prepare`)."""
    single = tuple(g for g in goals if g != sources.PREPARE)
    return single or tuple(goals)


def _defined(repo: Path, commit: str, symbols: list[str]) -> list[str]:
    """The Kconfig files of COMMIT that define SYMBOLS (git grep: ~0.3 s on the 6.12 tree)."""
    if not symbols:
        return []
    pattern = rf"^[[:space:]]*(menu)?config ({'|'.join(symbols)})[[:space:]]*$"
    found = git(repo, "grep", "-l", "-E", pattern, commit, "--", "*Kconfig*", check=False, timeout=120)
    return [line.split(":", 1)[1] for line in found.splitlines() if ":" in line]


def _kconfig(commit: Commit) -> bool:
    return any(p.rsplit("/", 1)[-1].startswith("Kconfig") for p in commit.touched)


def _configuration(box: kmake.Box, commit: Commit, repo: Path, lines: tuple[str, ...], left: float) -> tuple[str, ...]:
    """Configure the build directory for COMMIT when it needs it; the fragment lines olddefconfig did not keep.

    The base keeps the directory's configuration when a fresh one would be the same (kernel/configured.py: the same
    fragment and make variables, its .config as our configure left it, and every file Kconfig reads the same as in
    the commit it was made for): a list's series come on a few bases that differ in C files, and tinyconfig +
    olddefconfig (8 s on 2 cores) at each switch between them was most of a base step. Else it is configured from
    scratch (the directory may hold another series' Kconfig answers). A patch that changes a Kconfig file gets the
    fragment again (a symbol it adds), and the configuration is then no base's."""
    if commit.index and not _kconfig(commit):
        return ()
    read = None if commit.index else configured.inputs(repo, commit.sha)
    if read is not None and (kept := configured.kept(box.out, read, lines, box.variables)) is not None:
        return kept
    configured.forget(box.out)
    not_kept = kmake.configure(box, lines, left)
    if not commit.index:
        configured.remember(box.out, read, lines, box.variables, not_kept)
    return not_kept


def _forget(out: Path, goal: str) -> None:
    """Remove GOAL's outputs from the build directory so that make compiles it again (never through a symlink)."""
    path = out / goal
    if goal.endswith("/"):
        if path.is_dir() and not path.is_symlink():
            for p in path.rglob("*"):
                if p.suffix in (".o", ".so", ".dbg") and (p.is_file() or p.is_symlink()):
                    p.unlink(missing_ok=True)
    elif path.is_file() or path.is_symlink():
        path.unlink(missing_ok=True)


def _lister(src: Path) -> Callable[[str], list[str]]:
    def names(directory: str) -> list[str]:
        d = src / directory
        try:
            return [e.name for e in os.scandir(d) if e.is_file(follow_symlinks=False)] if d.is_dir() and not d.is_symlink() else []
        except OSError:
            return []
    return names


def _reader(src: Path) -> objects.Read:
    def read(path: str) -> str | None:
        p = src / path
        try:
            return p.read_text(errors="replace") if p.is_file() and not p.is_symlink() else None
        except OSError:
            return None
    return read


def _first(log: str) -> str:
    errs = diag.make_errors(log)
    if errs:
        return errs[0]
    lines = [ln for ln in log.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "make failed"


def _some(paths: Sequence[str]) -> str:
    return ", ".join(paths[:2]) + (f" and {len(paths) - 2} more" if len(paths) > 2 else "")


def _name(commit: Commit) -> str:
    return "the base" if not commit.index else f"patch {commit.index}"
