"""The kernel image cache: a kernel of a commit, built once in a cache directory and kept by what it is built from.

The cache directory (one per kernel tree: kernel.cache_for) holds the private source checkout, one
build directory per kind (an environment of the boot stage, or a guest's architecture: incremental
across sides and runs), ccache's store, and the images already built, keyed by the commit's tree
(what the build reads: the checkout has no .git, so the kernel's version string names no commit),
the fragment and make's variables: a base is built once, and a series reviewed again (git am makes
new commits of the same trees) reuses its patched kernel.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer.kernel import configured, kconfig, srctree
from reviewer.tree.git import git as git_run

KEEP_IMAGES = 24


@dataclass(frozen=True)
class How:
    """How a kind of kernel is built: make's variables (None: the x86_64 host's gcc), its target, and the
    image the target leaves in the build directory."""

    variables: tuple[str, ...] | None = None
    target: str = "bzImage"
    image: str = "arch/x86/boot/bzImage"


def build(git: Path, commit: str, kind: str, lines: tuple[str, ...], cache: Path, timeout: float,
          how: How = How()) -> kconfig.Build:
    """The kernel of COMMIT of KIND: the cached image of its tree, else a build in the kind's build directory."""
    image = image_path(git, commit, kind, lines, cache, how)
    if image.is_file():
        os.utime(image)  # used now: the newest, never what the other side's build prunes before the boot (_prune)
        return kconfig.Build(ok=True, seconds=0.0, image=image, config=lines, log="(cached image)")
    srctree.checkout(git, commit, cache / "src")
    # A build a second Ctrl-C or SIGKILL cut short leaves half-written objects that look up to date: start over.
    building = cache / f"build-{kind}.building"
    if building.exists():
        shutil.rmtree(cache / f"build-{kind}", ignore_errors=True)
    building.touch()
    out = cache / f"build-{kind}"
    read = configured.inputs(git, commit)
    kept = configured.kept(out, read, lines, how.variables)
    if kept is None:
        configured.forget(out)
    b = kconfig.build(cache / "src", out, lines, timeout, hide=(git,),  # the user's repository: out of the sandbox's sight
                      variables=how.variables, target=how.target, image=how.image, kept=kept)
    if b.ok:
        configured.remember(out, read, lines, how.variables, b.problems)
    building.unlink(missing_ok=True)
    if b.ok and b.image is not None:
        image.parent.mkdir(exist_ok=True)
        partial = image.with_name(f".{image.name}.{os.getpid()}.tmp")  # never a truncated cached image
        shutil.copyfile(b.image, partial)
        os.replace(partial, image)
        _prune(image.parent)
        b = replace(b, image=image)
    return b


def image_path(git: Path, commit: str, kind: str, lines: tuple[str, ...], cache: Path, how: How = How()) -> Path:
    """Where the cache keeps the kernel of COMMIT of KIND: named by what the kernel is built from, the fragment and the
    make variables."""
    content = kernel_content(git, commit)
    key = hashlib.sha256("\n".join((content, *lines, *(how.variables or ()))).encode()).hexdigest()[:16]
    return cache / "images" / f"{content[:12]}-{kind}-{key}.{Path(how.image).name}"


def kernel_content(git: Path, commit: str) -> str:
    """An id of COMMIT's tree without tools/testing/: no kernel build reads the selftests, so a commit that changes only
    them has its parent's kernel. (The rest of tools/ stays in: objtool is built from it and run on every object.)"""
    top = git_run(git, "ls-tree", commit, timeout=srctree.GIT_TIMEOUT).splitlines()
    tools = git_run(git, "ls-tree", f"{commit}:tools", timeout=srctree.GIT_TIMEOUT).splitlines() if any(
        ln.endswith("\ttools") and " tree " in ln for ln in top) else []
    kept = [ln for ln in top if not ln.endswith("\ttools")] + ["tools/" + ln for ln in tools if not ln.endswith("\ttesting")]
    return hashlib.sha1("\n".join(kept).encode()).hexdigest()


def _prune(images: Path) -> None:
    """Keep the KEEP_IMAGES images last built or used."""
    for old in sorted((p for p in images.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime)[:-KEEP_IMAGES]:
        old.unlink(missing_ok=True)
