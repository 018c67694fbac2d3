"""A directory the run writes to that takes no more: full (ENOSPC), over quota, or read-only.

That is the user's to fix, not a bug: the CLI names the directory and what to do instead of
writing a crash log (which would likely fail there too). The failure reaches the CLI as an
OSError (Python wrote the file) or as a CommandError (git or another tool did, and said so on
stderr: git runs with LC_ALL=C, so in strerror's words).
"""
from __future__ import annotations

import errno
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from reviewer.errors import CommandError

# errno -> what the user reads. Not EACCES: a file the run only reads (a TARGET in /tmp) can be the one denied.
_WHY = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded", errno.EROFS: "read-only file system"}
# How tools say so on stderr: strerror's words, and git's own for a failed object write.
_SAID = {"No space left on device": errno.ENOSPC, "Out of diskspace": errno.ENOSPC, "Disk quota exceeded": errno.EDQUOT,
         "Read-only file system": errno.EROFS}
_QUOTED_PATH = re.compile(r"'(/[^']+)'")


@dataclass(frozen=True)
class Unwritable:
    directory: Path | None  # the root it happened under (or the file's own directory); None: not known
    name: str  # how the user knows that directory: "$TMPDIR", "the cache", ... ("" for another one)
    variable: str  # the variable that moves it ("" for none)
    why: str  # strerror's words, lower case

    def message(self) -> str:
        where = f"{self.name} {self.directory}".strip() if self.directory else "a directory the run writes to"
        return f"{where}: {self.why}"

    def hint(self) -> str:
        fix = "make it writable" if self.why == _WHY[errno.EROFS] else "free some space"
        move = f", or point {self.variable} at a directory with room" if self.variable else ""
        return f"{fix} there{move}, then run the review again"


def diagnose(exc: BaseException, roots: Mapping[str, tuple[Path, str]]) -> Unwritable | None:
    """EXC (or what caused it) as a directory that takes no writes, or None (a bug after all).
    ROOTS: how the user knows a directory -> (that directory, the variable that moves it)."""
    for link in _chain(exc):
        code, paths = _code_and_paths(link)
        if code is None:
            continue
        for path in paths:  # the first path named, under the most specific root (ROOTS' order)
            for name, (root, variable) in roots.items():
                if _within(path, root):
                    return Unwritable(root, name, variable, _WHY[code])
        return Unwritable(paths[0].parent if paths else None, "", "", _WHY[code])  # elsewhere (--log-dir, --reply): the user's too
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def _code_and_paths(exc: BaseException) -> tuple[int | None, list[Path]]:
    if isinstance(exc, OSError) and exc.errno in _WHY:
        return exc.errno, [Path(str(f)) for f in (exc.filename, exc.filename2) if f]
    if isinstance(exc, CommandError):
        code = next((c for text, c in _SAID.items() if text in exc.stderr), None)
        if code is not None:  # the paths it named, then the ones it was given (git -C DIR ..., worktree add DIR)
            named = [Path(p) for p in _QUOTED_PATH.findall(exc.stderr)]
            return code, [*named, *(Path(a) for a in exc.args_ if a.startswith("/"))]
    return None, []


def _within(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):  # a loop of symbolic links, a NUL byte
        return False
