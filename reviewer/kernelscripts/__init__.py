"""The kernel tree's own checkers on the series: scripts/checkpatch.pl and scripts/get_maintainer.pl.

Kernel developers trust these scripts, so we run the tree's copies rather than imitate them and
fold their reports into our findings. Each patch is written back as a mail and both scripts run
on it, patches in parallel (threads around subprocesses, up to the core count).

checkpatch.pl runs in a scratch directory with `--root=TREE` and GIT_DIR set: it finds its
spelling list there and checks commit ids in the repository, while the cache it writes with
`--strict` (`.checkpatch-camelcase.*`) lands in the scratch directory, not in the user's tree.
get_maintainer.pl insists on running from the tree's top; it only reads.
A tree without the scripts (the demo's kernel-shaped tree) or a machine without perl is a note.

Both scripts' outputs are kept in the result cache (reviewer/store/results.py), per patch, under a
key of everything they read (kernelscripts/cachekeys.py): a second review of the same series
runs neither, and the check stage's note says how many outputs came from the cache.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from reviewer.errors import CommandError
from reviewer.kernelscripts import cachekeys, checkpatch, get_maintainer
from reviewer.kernelscripts.mails import Mail, render
from reviewer.model import Finding, Level, Series
from reviewer.proc import run
from reviewer.store import results as resultcache
from reviewer.tree.git import git_dir

T = TypeVar("T")
R = TypeVar("R")

TIMEOUT = 300.0  # checkpatch.pl takes seconds on a patch of thousands of lines
CODESPELL = (Path("/usr/share/codespell/dictionary.txt"), Path("/usr/lib/python3/dist-packages/codespell_lib/data/dictionary.txt"))
IDS = ("checkpatch", "get-maintainer")


@dataclass(frozen=True)
class Options:
    checkpatch: bool = True
    strict: bool = False
    codespell: bool = False
    ignore: frozenset[str] = frozenset()
    get_maintainer: bool = True
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    cache: resultcache.CacheUse = resultcache.CacheUse()  # the result cache: read it, write it (--no-cache: write only)


@dataclass(frozen=True)
class ScriptFindings:
    findings: tuple[Finding, ...]
    note: str  # for the check stage's detail


def review(series: Series, tree: Path, options: Options) -> ScriptFindings:
    """Run the tree's scripts on every patch of SERIES; a note instead when they cannot run."""
    wanted = [s for s, on in ((checkpatch.SCRIPT, options.checkpatch), (get_maintainer.SCRIPT, options.get_maintainer)) if on]
    if not wanted:
        return ScriptFindings((), "checkpatch.pl: off (--no-checkpatch)")
    absent = [s for s in wanted if not (tree / s).is_file()]
    if len(absent) == len(wanted) or shutil.which("perl") is None:
        why = f"the tree has no {', '.join(absent)}" if absent else "perl is not installed"
        return ScriptFindings((), f"kernel scripts skipped: {why}")
    found: list[Finding] = []
    notes: list[str] = [f"{Path(s).name} skipped: the tree has no {s}" for s in absent]  # an old or trimmed tree: run what it has
    with tempfile.TemporaryDirectory(prefix="reviewer-scripts-") as scratch:
        # A pull request's mail is not a commit message: checkpatch reads only its diff.
        mails = [render(replace(p, message="") if series.pull_request else p) for p in series.patches]
        paths = [_write(Path(scratch), m) for m in mails]
        if options.checkpatch and checkpatch.SCRIPT not in absent:
            f, note = _checkpatch(tree, mails, Path(scratch), options, signoff=series.pull_request is None)
            found += f
            notes.append(note)
        if options.get_maintainer and get_maintainer.SCRIPT not in absent:
            f, note = _get_maintainer(series, tree, mails, paths, options)
            found += f
            notes.append(note)
    if series.pull_request is not None:
        # It goes to the maintainer who pulls, not to those get_maintainer.pl names: only checkpatch's word counts.
        found = [f for f in found if f.rule.startswith("checkpatch/")]
    return ScriptFindings(tuple(found), ", ".join(notes))


def _write(scratch: Path, mail: Mail) -> Path:
    path = scratch / f"{mail.patch.index:04d}.patch"
    path.write_text(mail.text, encoding="utf-8")
    return path


def _checkpatch(tree: Path, mails: list[Mail], scratch: Path, options: Options, *, signoff: bool = True) -> tuple[list[Finding], str]:
    dictionary = _codespell_file() if options.codespell else None
    # Without a sign-off to check there is no commit message either (a pull request): not its description.
    ignore = frozenset(t.upper() for t in options.ignore) | (frozenset() if signoff else {"COMMIT_MESSAGE"})
    opts = checkpatch.Options(options.strict, dictionary, ignore, signoff)
    env = {"GIT_DIR": str(git_dir(tree))}
    args = checkpatch.argv(tree, opts)
    keys = _checkpatch_keys(tree, mails, args, env, dictionary) if options.cache.read or options.cache.write else [None] * len(mails)

    def one(item: tuple[Mail, str | None]) -> tuple[list[Finding], bool]:
        mail, digest = item
        failed: list[Finding] = []

        def compute() -> str | None:
            cwd = _sandbox(tree, scratch / f"cwd-{mail.patch.index}")
            try:
                done = run(args, cwd=cwd, env=env, input=mail.text, timeout=TIMEOUT, check=False)
            except CommandError as exc:
                failed.append(_failed("checkpatch", mail, exc.message))
                return None
            if done.returncode not in (0, 1):
                failed.append(_failed("checkpatch", mail, f"exit {done.returncode}: {done.stderr.strip()[:300]}"))
                return None
            return done.stdout

        stdout, hit = resultcache.through("checkpatch", digest, options.cache, compute)
        return failed or list(checkpatch.parse(str(stdout), mail, sorted(opts.ignore))), hit

    results = gather(one, list(zip(mails, keys, strict=True)), options.jobs)
    found = [f for per, _ in results for f in per]
    flags = "".join(f" {f}" for f, on in (("--strict", options.strict), ("--codespell", dictionary)) if on)
    note = f"checkpatch.pl{flags}{_hits(results)}"
    if options.codespell and dictionary is None:
        found.append(Finding("checkpatch/codespell", Level.INFO, "--codespell: no codespell dictionary found; typos were not checked",
                             hint="install codespell (Debian: apt-get install codespell)"))
    return found, note


def _checkpatch_keys(tree: Path, mails: list[Mail], args: list[str], env: dict[str, str], dictionary: Path | None) -> list[str | None]:
    """Per mail, the result-cache key of checkpatch.pl's output: see cachekeys for why these parts are all it reads."""
    shared = {"argv": args, "env": env, "files": cachekeys.files(tree, cachekeys.CHECKPATCH_FILES),
              "home": cachekeys.home([".checkpatch.conf"]), "programs": cachekeys.programs("perl", "python3", "git"),
              "codespell": resultcache.file_id(dictionary) if dictionary is not None else None,
              "tree": cachekeys.tree_state(tree, {p for m in mails for p in m.patch.paths})}
    ids = cachekeys.commit_ids(env["GIT_DIR"], [m.text for m in mails])
    return [resultcache.key("checkpatch", [shared, commits, mail.text]) for mail, commits in zip(mails, ids, strict=True)]


def _get_maintainer(series: Series, tree: Path, mails: list[Mail], paths: list[Path], options: Options) -> tuple[list[Finding], str]:
    shared = None
    if options.cache.read or options.cache.write:
        shared = {"argv": get_maintainer.argv(tree, Path("MAIL")), "files": cachekeys.files(tree, cachekeys.GET_MAINTAINER_FILES),
                  "home": cachekeys.home([".get_maintainer.conf", ".get_maintainer.ignore"]), "programs": cachekeys.programs("perl")}

    def one(item: tuple[Mail, Path]) -> tuple[list[get_maintainer.Section], bool]:
        mail, path = item
        digest = resultcache.key("get_maintainer", [shared, mail.text]) if shared is not None else None
        stdout, hit = resultcache.through("get_maintainer", digest, options.cache,
                                          lambda: run(get_maintainer.argv(tree, path), cwd=tree, timeout=TIMEOUT).stdout)
        return get_maintainer.parse(str(stdout)), hit

    try:
        results = gather(one, list(zip(mails, paths, strict=True)), options.jobs)
    except CommandError as exc:
        return [Finding("get-maintainer/failed", Level.WARNING, f"get_maintainer.pl failed: {exc.message}")], "get_maintainer.pl"
    note = f"get_maintainer.pl{_hits(results)}"
    sections = [per for per, _ in results]
    if not get_maintainer.mailed(series):
        return [get_maintainer.recipients([s for per in sections for s in per])], note
    return list(get_maintainer.missing_cc([mail.patch for mail in mails], sections)), note


def _hits(results: Sequence[tuple[object, bool]]) -> str:
    """` (N of M from the cache)` when any output came from the result cache, else nothing."""
    hits = sum(hit for _, hit in results)
    return f" ({hits} of {len(results)} from the cache)" if hits else ""


def gather(fn: Callable[[T], R], items: Sequence[T], jobs: int) -> list[R]:
    """FN over ITEMS in order, on up to JOBS threads (each waits on a subprocess)."""
    if jobs <= 1 or len(items) <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=min(jobs, len(items))) as pool:
        return list(pool.map(fn, items))


def _failed(tool: str, mail: Mail, why: str) -> Finding:
    return Finding(f"{tool}/failed", Level.WARNING, f"{tool}.pl failed on this patch: {why}", mail.patch.index)


def _sandbox(tree: Path, cwd: Path) -> Path:
    """checkpatch's working directory: its include/ (CamelCase seeding) and .checkpatch.conf are the tree's."""
    cwd.mkdir()
    for name in ("include", ".checkpatch.conf"):
        if (tree / name).exists():
            (cwd / name).symlink_to(tree / name)
    return cwd


def _codespell_file() -> Path | None:
    spec = importlib.util.find_spec("codespell_lib")
    ours = [Path(spec.origin).parent / "data" / "dictionary.txt"] if spec and spec.origin else []
    return next((p for p in (*CODESPELL, *ours) if p.is_file()), None)


