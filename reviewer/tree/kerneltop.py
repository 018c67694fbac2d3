"""Whether a directory is the top of a Linux kernel tree: the entries every kernel has at its top.

A tree without them gets checks that make no sense for it (a selftest directory "has no Makefile",
a Kconfig symbol "does not exist"), so --tree and the tree a git range is read from are checked
first. The entries are few on purpose: the tests' kernel-shaped tree (fixtures/kernel-mini) has them.
"""
from __future__ import annotations

from pathlib import Path

from reviewer.errors import ConfigError
from reviewer.tree import git as tree_git

TOP = ("Makefile", "MAINTAINERS", "arch/")  # a trailing / marks a directory


def missing(tree: Path) -> list[str]:
    """Which of TOP TREE lacks: in its work tree, or for a bare repository in its HEAD commit."""
    lacks = [name for name in TOP if not _present(tree / name.rstrip("/"), directory=name.endswith("/"))]
    if lacks and tree_git.read(tree, "rev-parse", "--is-bare-repository", timeout=30) == "true":
        # `<mode> <type> <object>\t<name>` per entry: a directory is a tree.
        entries = (line.split("\t", 1) for line in tree_git.read(tree, "ls-tree", "HEAD", timeout=30).splitlines())
        present = {name + ("/" if info.split()[1] == "tree" else "") for info, name in entries}
        lacks = [name for name in TOP if name not in present]
    return lacks


def _present(path: Path, *, directory: bool) -> bool:
    return path.is_dir() if directory else path.is_file()


def is_kernel_tree(tree: Path) -> bool:
    return not missing(tree)


def check(tree: Path, option: str = "--tree") -> None:
    """A ConfigError naming TREE and what it lacks, unless it is the top of a kernel tree."""
    lacks = missing(tree)
    if not lacks:
        return
    from reviewer.tree.repo import top_of  # GitPython: only on the way to this error

    top = top_of(tree)
    hint = "point --tree at the top of a Linux kernel git checkout (it has Makefile, MAINTAINERS and arch/)"
    if top and top != tree.resolve() and is_kernel_tree(top):
        hint = f"that is a directory inside a kernel tree: give its top, {option} {top}"
    raise ConfigError(f"{option} {tree}: not a kernel tree: no {_names(lacks)} at its top", hint)


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
