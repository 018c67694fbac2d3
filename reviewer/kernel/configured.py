"""Whether a build directory's .config can be kept for the next commit, as `make` alone would keep it.

A kernel developer rebuilding after a .c change runs `make`, not tinyconfig + olddefconfig again
(7.7 s of an x86_64 guest's 17.7 s incremental build, bench/vm_cost.py). The configuration is
kept only when it is the one a fresh configure would write: the same fragment and make variables,
the .config as our configure left it (its hash: the series' make runs with the build directory
writable), and every file Kconfig could read the same in the commit it was made for and in the
next one: only C and assembler sources and headers, documentation and the selftests may differ.
Anything else (a Kconfig file, a Makefile, a script Kconfig runs, a defconfig) configures again.
A new compiler is kbuild's own to notice: `make` runs syncconfig when CC_VERSION_TEXT changes.

The stamp holds a digest of those files (inputs()), not the commit to diff from: a patched commit
lives in its review's shadow repository (apply/worktree.py), removed when the review ends, so a later
build (another review, another HOME, another bot worker) often could not reach it; the diff failed and
the build configured again (15 s of a 28 s incremental x86_64 guest build, bench/base_reuse.py).

The stamp lives next to the build directory, where only the reviewer writes.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from reviewer.errors import CommandError
from reviewer.kernel import srctree
from reviewer.run.sandbox import read_untrusted
from reviewer.tree.git import output

# Files no Kconfig reads: its `source` lines name Kconfig files, its $(shell,...) runs scripts and the compiler;
# scripts/ holds the kconfig program itself (its C sources too) and what Kconfig and the top Makefile run.
INERT = re.compile(r"^(?!scripts/)(?:Documentation/|tools/testing/|.*\.(?:c|h|S|rst|txt)$)")


def stamp_path(out: Path) -> Path:
    return out.with_name(out.name + ".configured")


def key(lines: tuple[str, ...], variables: tuple[str, ...] | None) -> str:
    return hashlib.sha256("\n".join((*lines, "--", *(variables or ()))).encode()).hexdigest()


def inputs(git_dir: Path, commit: str) -> str | None:
    """A digest of what Kconfig could read in COMMIT: each file but the INERT ones, by path, mode and content (None:
    the repository does not have COMMIT)."""
    try:
        listing = output(git_dir, "ls-tree", "-r", "-z", "--full-tree", commit, timeout=srctree.GIT_TIMEOUT)
    except CommandError:
        return None
    digest = hashlib.sha256()
    for entry in listing.split(b"\0"):  # git's bytes: a path that is not UTF-8 is hashed as it is
        if entry and not INERT.search(entry.partition(b"\t")[2].decode(errors="replace")):
            digest.update(entry + b"\0")
    return digest.hexdigest()


def kept(out: Path, read: str | None, lines: tuple[str, ...], variables: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The fragment problems of OUT's configuration when it can be kept for a commit whose Kconfig inputs are READ
    (inputs()); None: configure again."""
    try:
        stamp = json.loads(stamp_path(out).read_text())
        if (read is None or stamp["inputs"] != read or stamp["key"] != key(lines, variables)
                or stamp["config"] != _hash(out / ".config")):
            return None
        return tuple(str(p) for p in stamp["problems"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def forget(out: Path) -> None:
    """Before a configure: a configuration being rewritten is nobody's."""
    stamp_path(out).unlink(missing_ok=True)


def remember(out: Path, read: str | None, lines: tuple[str, ...], variables: tuple[str, ...] | None, problems: tuple[str, ...]) -> None:
    """After a build that succeeded: OUT's .config is that of a commit whose Kconfig inputs are READ, for LINES and
    VARIABLES."""
    digest = _hash(out / ".config")
    if digest and read is not None:
        stamp_path(out).write_text(json.dumps({"key": key(lines, variables), "inputs": read, "config": digest,
                                               "problems": list(problems)}))


def _hash(path: Path) -> str:
    try:
        return hashlib.sha256(read_untrusted(path, 16 << 20)).hexdigest()  # the sandboxed make wrote it
    except OSError:
        return ""
