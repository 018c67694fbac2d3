"""Whether a build directory's .config can be kept for the next commit, as `make` alone would keep it.

A kernel developer rebuilding after a .c change runs `make`, not tinyconfig + olddefconfig again
(7.7 s of an x86_64 guest's 17.7 s incremental build, bench/vm_cost.py). The configuration is
kept only when it is the one a fresh configure would write: the same fragment and make variables,
the .config as our configure left it (its hash: the series' make runs with the build directory
writable), and between the commit it was made for and the next one no file Kconfig could read:
only C and assembler sources and headers, documentation and the selftests changed. Anything
else (a Kconfig file, a Makefile, a script Kconfig runs, a defconfig) configures again.
A new compiler is kbuild's own to notice: `make` runs syncconfig when CC_VERSION_TEXT changes.

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
from reviewer.tree.git import git

# Files no Kconfig reads: its `source` lines name Kconfig files, its $(shell,...) runs scripts and the compiler;
# scripts/ holds the kconfig program itself (its C sources too) and what Kconfig and the top Makefile run.
INERT = re.compile(r"^(?!scripts/)(?:Documentation/|tools/testing/|.*\.(?:c|h|S|rst|txt)$)")


def stamp_path(out: Path) -> Path:
    return out.with_name(out.name + ".configured")


def key(lines: tuple[str, ...], variables: tuple[str, ...] | None) -> str:
    return hashlib.sha256("\n".join((*lines, "--", *(variables or ()))).encode()).hexdigest()


def kept(git_dir: Path, out: Path, commit: str, lines: tuple[str, ...], variables: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The fragment problems of OUT's configuration when it can be kept for COMMIT; None: configure again."""
    try:
        stamp = json.loads(stamp_path(out).read_text())
        if stamp["key"] != key(lines, variables) or stamp["config"] != _hash(out / ".config"):
            return None
        changed = git(git_dir, "diff", "--no-renames", "--name-only", stamp["commit"], commit, timeout=srctree.GIT_TIMEOUT)
        problems = tuple(str(p) for p in stamp["problems"])
    except (OSError, ValueError, KeyError, TypeError, CommandError):
        return None
    return problems if all(INERT.search(p) for p in changed.splitlines()) else None


def forget(out: Path) -> None:
    """Before a configure: a configuration being rewritten is nobody's."""
    stamp_path(out).unlink(missing_ok=True)


def remember(out: Path, commit: str, lines: tuple[str, ...], variables: tuple[str, ...] | None, problems: tuple[str, ...]) -> None:
    """After a build that succeeded: OUT's .config is COMMIT's, for LINES and VARIABLES."""
    digest = _hash(out / ".config")
    if digest:
        stamp_path(out).write_text(json.dumps({"key": key(lines, variables), "commit": commit, "config": digest,
                                               "problems": list(problems)}))


def _hash(path: Path) -> str:
    try:
        return hashlib.sha256(read_untrusted(path, 16 << 20)).hexdigest()  # the sandboxed make wrote it
    except OSError:
        return ""
