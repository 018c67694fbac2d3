"""Apply the series in an isolated, throw-away git worktree of the user's tree.

Nothing of the user's repository is written, not even an object: the worktrees belong to a
shadow repository of ours (shadow()), a bare repository in the run's temporary directory that
borrows the user's objects through `objects/info/alternates`, so `git worktree add`'s
registration, `git am`'s commits, trees and blobs and the boot stage's snapshots land there,
and go with it. We add a detached worktree in a temporary directory, `git am -3` there, and
remove it on every exit path. When only `git am` needs it, it holds just the touched files
(sparse_patterns()). Its directory is named after this process (leftovers.py), so that what a
killed run leaves in $TMPDIR is removed by the next one; sweep() still removes what older runs
registered in the user's repository. No git command run here runs the user's hooks (NO_HOOKS).
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from reviewer.errors import CommandError, ConfigError
from reviewer.model import Patch, PatchApply, Series
from reviewer.run import ending, leftovers
from reviewer.series import mbox
from reviewer.tree.git import call, common_dir, git
from reviewer.tree.testnames import test_stem

_SHADOWS: dict[tuple[Path, str], Path] = {}  # (the user's common git dir, the run's temporary directory) -> its shadow


def shadow(tree: Path, where: Path | None = None, common: Path | None = None) -> Path:
    """A bare repository that borrows TREE's objects (alternates) and holds what we write: at WHERE
    (kept, for cached worktrees), else one per run in the run's temporary directory. COMMON: TREE's
    common git directory, when the caller has it."""
    common = common or common_dir(tree)
    if where is None:
        key = (common, tempfile.gettempdir())
        if key not in _SHADOWS or not _SHADOWS[key].is_dir():
            _SHADOWS[key] = Path(tempfile.mkdtemp(prefix="shadow-", suffix=".git"))
        where = _SHADOWS[key]
    alternates = where / "objects" / "info" / "alternates"
    if not alternates.is_file():
        empty = where.with_name(where.name + ".template")
        empty.mkdir(parents=True, exist_ok=True)  # no sample hooks, no description: nothing of git's templates
        form = git(tree, "rev-parse", "--show-object-format").strip() or "sha1"
        git(where.parent, "init", "--bare", "--quiet", f"--template={empty}", f"--object-format={form}", str(where))
        empty.rmdir()
        alternates.parent.mkdir(parents=True, exist_ok=True)
        alternates.write_text(f"{common / 'objects'}\n")
        if (common / "shallow").is_file():  # a shallow clone's cut-off commits: their parents are missing
            shutil.copyfile(common / "shallow", where / "shallow")
    return where


def _resolved(tree: Path, rev: str) -> str:
    return git(tree, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip() or rev


def sweep(tree: Path) -> None:
    """Remove the worktrees that runs killed before their clean-up registered in TREE, and say so."""
    with contextlib.suppress(CommandError):
        if removed := leftovers.sweep_repo(common_dir(tree)):
            ending.say(leftovers.describe(removed))


# A worktree that will be built (selftests, boot) gets a sparse checkout on a tree with more files
# than this: on the full kernel tree (~87,000 files) a plain `git worktree add` takes ~15 s here.
SPARSE_ABOVE = 20_000
TOP = ("/*", "!/*/")  # the top-level files, no directory
BUILD = ("/include/", "/scripts/", "/tools/", "/usr/", "/arch/x86/")  # what building the selftests needs
# Sparse checkout from the command line, not `git sparse-checkout set` (that writes
# extensions.worktreeConfig into the user's repository config): the patterns live in the
# worktree's own git dir (info/sparse-checkout) and go away with it. Only git writes tracked
# files in our worktrees, so git need not look for files outside the patterns (an lstat per
# skipped file each time a command reads the index: ~30 ms on a kernel tree).
_SPARSE = ("-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=false", "-c", "sparse.expectFilesOutsideOfPatterns=true")
# A split index (https://git-scm.com/docs/git-update-index#_split_index): a command that changes a
# few entries writes just those, not the whole index (~25 ms on 87,000 files, several times per
# patch in `git am`: 2.3 s -> 0.3 s for 20 patches here). Its shared part lives in the worktree's
# own git dir. Not splitIndex.sharedIndexExpire=now: am -3 writes a second index, and that would
# delete the shared part the worktree's index still needs; git's default expiry (2 weeks) is safe.
_SPLIT = ("-c", "core.splitIndex=true")


def sparse_patterns(paths: list[str], *, build: bool = True) -> list[str]:
    """What to check out, as gitignore-style patterns.

    For `git am` alone (BUILD false): the top-level files and the touched paths, exactly
    (`git am -3` reads nothing else, 3-way and renames included), and what the boot stage's
    listing reads: KUnit suites beside a touched file and their Makefiles (see kunit_beside()).
    For a build: the top-level files, the build essentials and the touched directories whole, and
    each touched architecture's arch/<x>/ whole (the tests may be built for it: `make ARCH=x headers`).
    """
    if build:
        dirs = sorted({p.rsplit("/", 1)[0] for p in paths if "/" in p} | {"/".join(p.split("/")[:2]) for p in paths
                                                                          if p.startswith("arch/") and p.count("/") >= 2})
        return [*TOP, *BUILD, *(f"/{_literal(d)}/" for d in dirs)]
    return [*TOP, *sorted({f"/{_literal(p)}" for p in paths} | {n for p in paths for n in kunit_beside(p)})]


def kunit_beside(path: str) -> list[str]:
    """Patterns for where boot.intests.kunit_beside() looks for PATH's KUnit suite: C files named
    after it in its directory and in tests/ below it, and the Makefiles that build them."""

    parent = path.rpartition("/")[0]
    stem = _literal(test_stem(path))
    where = [f"/{_literal(parent)}/", f"/{_literal(parent)}/tests/"] if parent else ["/tests/"]  # "/*" has the top level
    return [f"{d}{f}" for d in where for f in (f"*{stem}*.c", "Makefile")]


def _literal(path: str) -> str:
    """PATH as a pattern that matches only itself (gitignore syntax: wildmatch escapes)."""
    return re.sub(r"([\\*?\[])", r"\\\1", path)


def options(wt: Path) -> tuple[str, ...]:
    """The git options for a command that updates WT's files or index: its sparse checkout (if it has one) in force, a split index."""
    return (*_SPLIT, *_SPARSE) if _patterns_file(wt).is_file() else _SPLIT


def _patterns_file(wt: Path) -> Path:
    dot_git = wt / ".git"  # a linked worktree's .git is a file: "gitdir: <its own git dir>"
    if not dot_git.is_file():
        return dot_git / "info" / "sparse-checkout"
    return wt / dot_git.read_text().removeprefix("gitdir:").strip() / "info" / "sparse-checkout"


def _set_sparse(wt: Path, patterns: list[str]) -> None:
    where = _patterns_file(wt)
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text("".join(f"{p}\n" for p in patterns))


def widen(wt: Path, dirs: list[str]) -> list[str]:
    """Check out DIRS (whole) too in WT, a sparse worktree with commits of its own (`git am`'s): the tests are
    built for an architecture the series does not touch (--arch) and `make ARCH=x headers` reads its arch/x/.
    A full checkout is left as it is. The directories added."""
    where = _patterns_file(wt)
    if not where.is_file():
        return []
    have = where.read_text().splitlines()
    new = [d for d in dirs if f"/{_literal(d)}/" not in have]
    if new:
        _set_sparse(wt, [*have, *(f"/{_literal(d)}/" for d in new)])
        git(wt, *options(wt), "read-tree", "-m", "-u", "HEAD")  # the index's files as the patterns now say
    return new


def _patterns(tree: Path, base: str, touched: list[str] | None, *, build: bool, more: Sequence[str] = ()) -> list[str] | None:
    """The sparse patterns of a new worktree, or None for a full checkout; MORE: directories a build needs whole."""
    if touched is None:
        return None
    if not build:
        return sparse_patterns(touched, build=False)  # whatever the tree's size: git am reads only these
    if _file_count(tree, base) <= SPARSE_ABOVE:
        return None
    have = sparse_patterns(touched)
    return [*have, *(p for p in dict.fromkeys(f"/{_literal(d)}/" for d in more) if p not in have)]


@contextlib.contextmanager
def isolated(tree: Path, base: str, touched: list[str] | None = None, *, build: bool = True, more: Sequence[str] = ()) -> Iterator[Path]:
    """A detached worktree of TREE at BASE in a temporary directory; always removed.

    With TOUCHED, only what is needed is checked out (sparse_patterns()): for `git am` alone
    (BUILD false) always; for a build, on a large tree, with the directories MORE whole (the guests'
    arch/: checking it out now costs less than widen() later). The directory exists (empty, named after
    us) before git registers it, and is removed without walking it (leftovers.drop_worktree()):
    after a signal the deletion finishes in the background.
    """
    repo = shadow(tree)
    base = _resolved(tree, base)  # the shadow has the objects, not the user's refs
    wt = leftovers.make("wt")  # git adds a worktree in an empty directory
    drop = functools.partial(leftovers.drop_worktree, wt, repo, ending.deadline)
    token = ending.on_exit(drop)
    try:
        patterns = _patterns(tree, base, touched, build=build, more=more)
        if patterns is not None:
            git(repo, "worktree", "add", "--detach", "--no-checkout", "--quiet", str(wt), base)
            _set_sparse(wt, patterns)
            git(wt, *options(wt), "checkout", "--quiet", "--detach", base)
        else:
            git(repo, "worktree", "add", "--detach", "--quiet", str(wt), base)
        yield wt
    finally:
        drop()
        ending.forget(token)


SLOTS = 4  # concurrent reviews of one tree that can each hold a cached worktree


@contextlib.contextmanager
def cached(tree: Path, base: str, touched: list[str] | None, root: Path, *, build: bool = True,
           more: Sequence[str] = ()) -> Iterator[Path]:
    """A reusable worktree of TREE kept under ROOT (opt-in: git config reviewer.reuseWorktrees).

    It stays registered (and locked) in a shadow repository kept beside the slots between runs
    (shadow(): TREE itself is not written), and is reset to a clean BASE on
    entry and on every exit: `git am --abort`, `checkout -f`, `clean -ffdx`. A slot lock
    keeps two reviews of the same tree apart. Its sparse patterns are set anew on entry.
    """
    slots = root / hashlib.sha1(str(tree.resolve()).encode()).hexdigest()[:16]
    slots.mkdir(parents=True, exist_ok=True)
    with _slot(slots) as wt:
        repo = shadow(tree, slots / "shadow.git")
        base = _resolved(tree, base)
        try:
            if not (wt / ".git").is_file():
                shutil.rmtree(wt, ignore_errors=True)
                git(repo, "worktree", "prune", check=False)
                git(repo, "worktree", "add", "--detach", "--no-checkout", "--quiet", str(wt), base)
                git(repo, "worktree", "lock", "--reason", "reviewer: cached worktree", str(wt))
            _unlock(wt)
            # ["/*"] (everything) rather than None: a slot left sparse by a narrower review is widened.
            _reset(wt, base, _patterns(tree, base, touched, build=build, more=more) or ["/*"])
            yield wt
        finally:
            if not ending.interrupted():  # the next review resets it on entry: a signal's clean-up must be quick
                _reset(wt, base, None)


@contextlib.contextmanager
def _slot(slots: Path) -> Iterator[Path]:
    for n in range(SLOTS):
        with open(slots / f"{n}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            yield slots / str(n)
            return
    raise ConfigError(f"all {SLOTS} cached worktrees in {slots} are in use", "wait for the other reviews, or unset reviewer.reuseWorktrees")


def _unlock(wt: Path) -> None:
    """Lock files a killed git left in the slot's git dir (index.lock, HEAD.lock...): we hold the slot's lock,
    so no other review's git can be writing there, and each would stop every later command in the slot."""
    admin = leftovers.admin_dir(wt)
    for stale in admin.glob("*.lock") if admin is not None else ():
        stale.unlink(missing_ok=True)


def _reset(wt: Path, base: str, patterns: list[str] | None) -> None:
    """Back to a clean BASE; with PATTERNS, checked out sparse to them (None keeps the current ones)."""
    git(wt, "am", "--abort", check=False)
    if patterns is not None:
        _set_sparse(wt, patterns)
    git(wt, *options(wt), "checkout", "-f", "--quiet", "--detach", base)
    git(wt, "clean", "-ffdxq")


def _file_count(tree: Path, rev: str) -> int:
    """How many files REV has, near enough to choose a sparse checkout. The header of TREE's
    index counts the user's checkout in O(1) (https://git-scm.com/docs/index-format); a missing
    index, a sparse index or a small count is settled by `git ls-tree -r` of REV (~0.04 s on 87,000 files)."""
    index = Path(git(tree, "rev-parse", "--path-format=absolute", "--git-path", "index").strip())
    with contextlib.suppress(OSError):
        with open(index, "rb") as f:
            head = f.read(12)
        if len(head) == 12 and head[:4] == b"DIRC" and int.from_bytes(head[8:], "big") > SPARSE_ABOVE:
            return int.from_bytes(head[8:], "big")
    return git(tree, "ls-tree", "-r", "-z", "--name-only", rev).count("\0")


def apply_series(wt: Path, series: Series) -> tuple[PatchApply, ...]:
    """`git am -3` the series; it stops at the first patch that fails.

    One `git am` for the whole series: each run reads and writes the worktree's index (87,000
    entries on a kernel tree), so one per patch cost ~0.1 s a patch more here.
    """
    before = git(wt, "rev-parse", "HEAD").strip()
    mails = mbox.write(mbox.patch_mail(p) for p in series.patches)
    error: CommandError | None = None
    try:
        out = git(wt, *options(wt), "-c", "core.quotePath=false", "am", "-3", "--no-gpg-sign", "--patch-format=mboxrd",
                  input=mails, timeout=300 + 30 * len(series.patches))
    except CommandError as exc:
        out, error = exc.stdout, exc
        # Keep the patches that applied, drop what the failed one left: the diagnosis sees the tree it met.
        git(wt, "am", "--quit", check=False)
        git(wt, *options(wt), "reset", "--hard", "--quiet")
    applied = int(git(wt, "rev-list", "--count", f"{before}..HEAD").strip())
    logs = [*re.split(r"^Applying: ", out, flags=re.M)[1:], *[""] * applied]  # each patch's own lines
    results = [PatchApply(p.index, "applied (3-way merge)" if "Falling back" in logs[i] else "applied", "")
               for i, p in enumerate(series.patches[:applied])]
    if error is not None and applied < len(series.patches):
        patch = series.patches[applied]
        results.append(PatchApply(patch.index, "failed", _failed_hunk(wt, patch) + _why(error)))
    return tuple(results)


_FAILED_AT = re.compile(r"^error: patch failed: (?P<path>.+):(?P<line>\d+)$", re.M)


def _failed_hunk(wt: Path, patch: Patch) -> str:
    """Which file and hunk git could not place: `git apply --check` names the hunk's first line."""
    done = call(wt, "apply", "--check", "-", input=patch.diff)
    m = _FAILED_AT.search(done.stderr)
    if m is None:
        return ""
    path, line = m["path"], int(m["line"])
    hunk = next((h for f in patch.files if path in (f.path, f.old_path) for h in f.hunks if h.old_start == line), None)
    return f"{path}: hunk {hunk.header if hunk else f'at line {line}'} does not apply; "


def _why(exc: CommandError) -> str:
    text = exc.stderr + exc.stdout
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith(("error:", "Patch failed", "CONFLICT"))]
    return "; ".join(lines[:3]) or exc.message

