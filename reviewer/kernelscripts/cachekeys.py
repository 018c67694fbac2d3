"""What checkpatch.pl and get_maintainer.pl read, as result-cache key parts (see reviewer/store/results.py).

checkpatch.pl (6.12) reads, besides the mail on stdin and its options:
- next to itself (the working-tree copies, `$D/...`): spelling.txt, const_structs.checkpatch;
- `.checkpatch.conf` in its working directory (ours links the tree's), in $HOME or in `.scripts`;
- MAINTAINERS through `get_maintainer.pl --status` (is a touched file obsolete?), LICENSES through
  scripts/spdxcheck.py (from HEAD, with GitPython), include/*.h (`--strict` CamelCase, via `git
  ls-files`), Documentation/devicetree/bindings/ (grep for DT compatibles), include/linux/*.h
  and any `$root/<path>` a patch names: that is, the whole tree;
- the repository, for every commit id the commit message quotes (`git log -1 ID`);
- the codespell dictionary (with --codespell), perl, and python3 for spdxcheck.py.
So its key holds the tree's state (HEAD's tree plus the content of every modified, staged or
untracked file where it looks: `git status` without taking locks, limited to READS and the
touched files, 0.05 s instead of 0.19 s for the whole 6.12 tree), the named files' contents (also in the
tree's state; named so that the key says what matters most), the repository's resolution of each
hex token in the commit message, the programs, and the argv (options and paths).

get_maintainer.pl with `--no-git --no-git-fallback` reads only MAINTAINERS, .mailmap and its
`.get_maintainer.{conf,ignore}` (in the tree, $HOME or .scripts) besides the mail: it never asks
git, so HEAD is not part of its key.
"""
from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from reviewer.store.results import file_id, program_id
from reviewer.tree.git import call, git

CHECKPATCH_FILES = ("scripts/checkpatch.pl", "scripts/spelling.txt", "scripts/const_structs.checkpatch", ".checkpatch.conf",
                    "scripts/get_maintainer.pl", "MAINTAINERS", "scripts/spdxcheck.py")
GET_MAINTAINER_FILES = ("scripts/get_maintainer.pl", "MAINTAINERS", ".mailmap", ".get_maintainer.conf", ".get_maintainer.ignore",
                        ".scripts/.get_maintainer.conf", ".scripts/.get_maintainer.ignore")
_HEX = re.compile(r"\b[0-9a-fA-F]{5,40}\b")


def files(root: Path, names: Iterable[str]) -> dict[str, str | None]:
    """Each file's content id (None: absent); a MAINTAINERS directory counts by all of its files."""
    out: dict[str, str | None] = {}
    for name in names:
        path = root / name
        if path.is_dir():
            out.update({f"{name}/{p.name}": file_id(p) for p in sorted(path.iterdir()) if p.is_file()})
        else:
            out[name] = file_id(path)
    return out


def home(names: Iterable[str]) -> dict[str, str | None]:
    """The scripts' per-user files in $HOME (which_conf looks there after the working directory)."""
    where = Path(os.environ.get("HOME") or Path.home())
    return {name: file_id(where / name) for name in names}


def programs(*names: str) -> dict[str, object]:
    return {name: program_id(shutil.which(name)) for name in names}


# Where checkpatch.pl looks in the working tree (every `$root/...` of 6.12's checkpatch.pl): the
# top-level entries (top_of_kernel_tree(), the -p0 check, .checkpatch.conf, MAINTAINERS, .mailmap),
# scripts/ (itself, spelling.txt, get_maintainer.pl, spdxcheck.py), include/ (CamelCase seeding,
# <asm/...> vs <linux/...>), the DT bindings (compatible strings), LICENSES/; plus the files the
# patches touch (`-f $root/$file`), added by tree_state().
# The top-level entries are named one by one (a `:(glob)*` pathspec makes git scan the whole tree).
READS = ("scripts", "include", "Documentation/devicetree/bindings", "LICENSES", ".scripts")


def tree_state(tree: Path, touched: Iterable[str] = ()) -> dict[str, object]:
    """HEAD's tree and every path `git status` lists (staged, modified, deleted, untracked) where
    checkpatch.pl looks (READS and TOUCHED), with its content.

    `--no-optional-locks`: no lock taken, the index is not rewritten.
    """
    head = call(tree, "rev-parse", "--verify", "-q", "HEAD^{tree}").stdout.strip()
    top = sorted((e.name, e.is_dir()) for e in os.scandir(tree) if e.name != ".git")
    specs = [*READS, *sorted({f":(literal){p}" for p in (*touched, *(name for name, is_dir in top if not is_dir))})]
    status = git(tree, "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *specs)
    dirty = []
    tokens = iter(status.split("\0"))
    for token in tokens:
        if not token:
            continue
        xy, path = token[:2], token[3:]
        if xy[0] in "RC":
            dirty.append([xy, next(tokens, ""), None])  # the rename's source
        dirty.append([xy, path, _content(tree / path)])
    return {"head_tree": head or None, "top": top, "dirty": dirty}


def _content(path: Path) -> str | None:
    if path.is_symlink():
        return "symlink:" + os.readlink(path)
    return file_id(path) if path.is_file() else None


def commit_ids(git_dir: str, texts: Iterable[str]) -> list[list[list[str]]]:
    """Per text, how the repository resolves each hex token of its commit message (`git cat-file --batch-check`)."""
    per = [sorted(set(_HEX.findall(t.split("\ndiff --git ", 1)[0]))) for t in texts]
    tokens = sorted({tok for toks in per for tok in toks})
    if not tokens:
        return [[] for _ in per]
    out = git(Path(git_dir), f"--git-dir={git_dir}", "cat-file", "--batch-check", input="".join(f"{t}\n" for t in tokens))
    known = dict(zip(tokens, out.splitlines(), strict=False))
    return [[[tok, known.get(tok, "")] for tok in toks] for toks in per]
