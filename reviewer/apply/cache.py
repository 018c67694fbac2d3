"""The apply check's outcome from the result cache, so a second review needs no worktree.

`git am -3` of a series on a base is determined by: the repository (its objects: the base
commit, and the pre-image blobs a 3-way merge falls back to), the base commit, each patch's
mail exactly as the apply stage feeds it to `git am` (series.mbox.patch_mail), git's version, and
the git configuration `git am` runs under (am.*, apply.*, core.* ...: the tree's and the
user's, as `git config --list` shows them). All of it is in the key.

Kept: a series that applied (with the patched commit), and one that git am refused ("Patch
failed at"); never a timeout or another error. The patched commit is made in the run's shadow
repository (apply/worktree.py), which goes with the run, and the user's repository is never
written: its new objects (a few blobs, trees and commits) are copied into a repository of ours
under $XDG_CACHE_HOME/reviewer/applied/, which borrows the user's objects as the shadow does.
Used only when nothing needs the patched worktree afterwards (no selftests run, no boot): the
later stages then only list what they would run, and for that they read the touched
directories of the patched tree (KUnit suites beside a touched file), which `view` writes out
of the patched commit in a moment instead of checking out the whole tree.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer.apply import worktree
from reviewer.model import PatchApply, Series
from reviewer.series import mbox
from reviewer.store import dirs
from reviewer.store import results as resultcache
from reviewer.tree import git as tree_git
from reviewer.tree.testnames import test_stem

KIND = "apply"
# What `git am -3` reads from git config (not extensions.*, branch.*, remote.*: those change as
# worktrees come and go and branches are made, and do not change how a patch applies).
_SETTINGS = ("am.", "apply.", "core.", "merge.", "mailinfo.", "i18n.", "diff.", "rerere.", "user.", "commit.", "gpg.")
_INDEX = re.compile(r"^index ([0-9a-f]{7,40})\.\.([0-9a-f]{7,40})", re.M)


@dataclass(frozen=True)
class CachedApply:
    patches: tuple[PatchApply, ...]
    commit: str | None  # the patched commit (None when a patch failed)
    repo: Path | None = None  # the repository that holds it: kept(tree)


@dataclass(frozen=True)
class Head:
    """The patched commit and the repository that holds it (and, through alternates, the base's objects)."""

    repo: Path
    commit: str


def key(tree: Path, base: str, series: Series) -> str:
    git_dir = str(tree_git.git_dir(tree))
    mails = [hashlib.sha256(mbox.patch_mail(p)).hexdigest() for p in series.patches]
    # Pre-images a 3-way merge would need; not those the series' own patches make (the first apply stores them).
    made = {post for p in series.patches for _, post in _INDEX.findall(p.diff)}
    blobs = sorted({pre for p in series.patches for pre, _ in _INDEX.findall(p.diff) if set(pre) != {"0"} and pre not in made})
    found = tree_git.git(tree, "cat-file", "--batch-check", input="".join(f"{b}\n" for b in blobs)) if blobs else ""
    settings = tree_git.call(tree, "config", "--list", "--includes").stdout
    parts = {"git_dir": git_dir, "base": base, "mails": mails, "git": tree_git.git(tree, "--version").strip(),
             "preimages": found.splitlines(), "config": sorted(ln for ln in settings.splitlines() if ln.startswith(_SETTINGS))}
    return resultcache.key(KIND, parts)


def lookup(tree: Path, digest: str, policy: resultcache.CacheUse) -> CachedApply | None:
    """The cached outcome, if POLICY reads and it is there (and its patched commit still is, when it applied)."""
    value = resultcache.get(KIND, digest) if policy.read else None
    if not isinstance(value, dict):
        return None
    outcome = CachedApply(tuple(PatchApply(int(i), str(s), str(d)) for i, s, d in value["patches"]), value.get("commit"))
    if outcome.commit is None:
        return outcome
    repo = kept(tree)
    if not tree_git.has_commit(repo, outcome.commit):
        return None  # our copy is gone (a cleaned cache): apply again
    return replace(outcome, repo=repo)


def kept(tree: Path) -> Path:
    """Our repository of patched commits for TREE's repository: it borrows TREE's objects."""
    common = tree_git.common_dir(tree)
    name = hashlib.sha256(str(common).encode()).hexdigest()[:16]
    return worktree.shadow(tree, dirs.cache_root() / "applied" / f"{name}.git", common=common)


def _keep(patched: Path, commit: str, tree: Path, digest: str) -> None:
    """Copy what the apply wrote (the shadow's own objects: loose, as git am writes them) into kept(TREE)."""
    into = kept(tree)
    source = tree_git.common_dir(patched) / "objects"
    for obj in source.glob("[0-9a-f][0-9a-f]/*"):
        dest = into / "objects" / obj.parent.name / obj.name
        if not dest.exists():
            dest.parent.mkdir(exist_ok=True)
            part = dest.with_name(f".{obj.name}.{os.getpid()}")
            shutil.copyfile(obj, part)
            os.replace(part, dest)  # objects are named by content: a concurrent copy writes the same bytes
    tree_git.git(into, "update-ref", f"refs/applied/{digest}", commit)


def store(tree: Path, digest: str, patches: tuple[PatchApply, ...], patched: Path, policy: resultcache.CacheUse) -> None:
    """Keep a clean apply, or a patch git am refused; not a timeout or another failure."""
    failed = next((p for p in patches if p.status == "failed"), None)
    if not policy.write or (failed is not None and "Patch failed at" not in failed.detail):
        return
    commit = tree_git.git(patched, "rev-parse", "HEAD").strip() if failed is None else None
    if commit is not None:
        _keep(patched, commit, tree, digest)
    resultcache.put(KIND, digest, {"patches": [[p.index, p.status, p.detail] for p in patches], "commit": commit})


@contextlib.contextmanager
def view(tree: Path, commit: str, touched: list[str]) -> Iterator[Path]:
    """What the boot stage's listing reads of COMMIT, in a scratch directory: the touched files, and
    beside them (in their directory and its tests/) the Makefiles and the C files that share a
    touched file's name (boot.intests.kunit_beside()); not whole directories (860 files, 0.6 s, for
    20 patches on the 6.12 tree)."""

    scratch = Path(tempfile.mkdtemp(prefix="reviewer-view-"))
    try:
        stems: dict[str, set[str]] = {}
        for p in touched:
            stems.setdefault(_dir(p), set()).add(test_stem(p))
        dirs = sorted(stems)
        specs = [s for d in dirs for s in (d or ".", f"{d}tests/")]
        listing = tree_git.git(tree, "ls-tree", "-z", commit, "--", *specs)
        entries = [e for e in listing.split("\0") if e and e.split(" ", 2)[1] == "blob"]  # "<mode> blob <oid>\t<path>"
        oids = {e.split("\t", 1)[1]: e.split(" ", 2)[2].split("\t", 1)[0] for e in entries}
        blobs = list(oids)
        wanted = set(touched)

        def beside(f: str) -> bool:
            where = _dir(f)
            homes = (where, where.removesuffix("tests/")) if where.endswith("tests/") else (where,)
            named = f.endswith(".c") and any(test_stem(f) in stems.get(h, ()) for h in homes)
            return f in wanted or f.rsplit("/", 1)[-1] == "Makefile" or named

        files = [f for f in blobs if beside(f)]
        _write_blobs(tree, {f: oids[f] for f in files}, scratch / "tree")
        for d in dirs:
            (scratch / "tree" / d).mkdir(parents=True, exist_ok=True)
        yield scratch / "tree"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _dir(path: str) -> str:
    """PATH's directory with a trailing slash; "" at the top."""
    return path.rpartition("/")[0] + "/" if "/" in path else ""


def _write_blobs(tree: Path, files: dict[str, str], where: Path) -> None:
    """FILES (path: blob id) under WHERE, read with one `git cat-file --batch` (`git archive` walks the
    whole tree first: 0.08 s on the 6.12 tree for a single file). Asked by blob id, not `commit:path`:
    a path from a series may hold a newline, which would end the request early."""
    if not files:
        return
    out = tree_git.output(tree, "cat-file", "--batch", input="".join(f"{oid}\n" for oid in files.values()).encode())
    at = 0
    for f in files:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])  # "<oid> blob <size>"
        path = where / f
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1  # the content is followed by a newline


def apply(tree: Path, base: str, series: Series, policy: resultcache.CacheUse, *, reuse: bool, stack: contextlib.ExitStack,
          open_worktree: Callable[[], AbstractContextManager[Path]]) -> tuple[Path | None, tuple[PatchApply, ...], bool, Head | None]:
    """(the patched tree, each patch's outcome, from the cache?, the patched commit and the repository that
    holds it). REUSE: nothing needs the real worktree afterwards, so a cached outcome (and a view of the
    touched directories) will do; else apply for real."""
    digest = key(tree, base, series) if policy.read or policy.write else None
    cached = lookup(tree, digest, policy) if digest is not None and reuse else None
    if cached is not None:
        patched = stack.enter_context(view(cached.repo, cached.commit, series.touched)) if cached.repo and cached.commit else None
        head = Head(cached.repo, cached.commit) if cached.repo and cached.commit else None
        return patched, cached.patches, True, head
    patched = stack.enter_context(open_worktree())
    results = worktree.apply_series(patched, series)
    if digest is not None:
        store(tree, digest, results, patched, policy)
    failed = any(r.status == "failed" for r in results)
    head = None if failed else Head(tree_git.common_dir(patched), tree_git.git(patched, "rev-parse", "HEAD").strip())
    return patched, results, False, head
