"""Configure and build a small x86_64 kernel for in-kernel tests: tinyconfig + a fragment, bzImage.

Each (tree, environment) has its own output directory (make O=...), kept by the caller, so a
second build is incremental; ccache is used when installed. make runs in the sandbox (the
series' Makefiles and Kconfig run code), the source read-only, the output and ccache directories
writable. A failed build becomes a finding naming the compiler's first error and its file and line.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from reviewer.errors import CommandError
from reviewer.kernel.make import Box, ccache_dir, configure, sandbox_env
from reviewer.model import Finding, Level
from reviewer.run.sandbox import Sandbox

RULE = "boot-build"
BUILD_TIMEOUT = 3600.0
# BUG: tinyconfig drops it, and with it the "kernel BUG at" and WARNING: reports; KALLSYMS: symbols in
# traces. KUnit is always in (RUNTIME_TESTING_MENU shows lib/'s suites), so that the kernel for a KUnit
# suite differs from the dmapool one by a few objects: an incremental build, not a second full one.
BASE = ("64BIT", "PRINTK", "TTY", "SERIAL_8250", "SERIAL_8250_CONSOLE", "BUG", "KALLSYMS", "KUNIT", "RUNTIME_TESTING_MENU")
# SLUB_DEBUG_ON also turns on DMAPOOL_DEBUG in mm/dmapool.c; SLUB_DEBUG needs SYSFS and a non-tiny SLUB.
ENVS: dict[str, tuple[str, ...]] = {
    "plain": (),
    "debug": ("SYSFS", "!SLUB_TINY", "SLUB_DEBUG", "SLUB_DEBUG_ON"),
}


@dataclass(frozen=True)
class Build:
    ok: bool
    seconds: float
    image: Path | None
    config: tuple[str, ...]  # the fragment asked for, as .config lines
    log: str  # make's output (the tail, on a failure)
    error: str = ""  # the first compiler error
    path: str | None = None
    line: int | None = None
    problems: tuple[str, ...] = ()  # fragment symbols the configuration did not keep
    configured: bool = True  # False: the build directory's configuration was kept (boot/configured.py)


def fragment(symbols: Iterable[str], env: str) -> tuple[str, ...]:
    """.config lines: the base console set, the environment's symbols, then SYMBOLS ("!X" turns X off)."""
    names = dict.fromkeys([*BASE, *ENVS[env], *symbols])
    return tuple(f"# CONFIG_{n[1:]} is not set" if n.startswith("!") else f"CONFIG_{n}=y" for n in names)


def build(src: Path, out: Path, lines: tuple[str, ...], timeout: float = BUILD_TIMEOUT, jobs: int | None = None,
          hide: tuple[Path, ...] = (), variables: tuple[str, ...] | None = None, target: str = "bzImage",
          image: str = "arch/x86/boot/bzImage", kept: tuple[str, ...] | None = None) -> Build:
    """tinyconfig + LINES in OUT, then TARGET (make's VARIABLES: None, the x86_64 host's gcc); the IMAGE it leaves.
    KEPT: OUT's configuration is already that (boot/configured.py), with these fragment problems: no configure."""
    start = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    ccache_dir(out).mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="reviewer-kbuild-") as scratch:
        box = Box(Sandbox(Path(scratch) / "home", sandbox_env(out)), src, out, hide, variables)
        try:
            problems = configure(box, lines, timeout) if kept is None else kept
            log = box.make(timeout, f"-j{jobs or os.cpu_count() or 1}", target)
        except CommandError as exc:
            text = exc.stdout + "\n" + exc.stderr
            err, path, line = first_error(text, src)
            if exc.timeout is not None:
                err = f"the build timed out after {exc.timeout:g}s"
            return Build(ok=False, seconds=time.monotonic() - start, image=None, config=lines, log=_tail(text), error=err, path=path,
                         line=line)
    made = out / image
    if not _inside(made, out):
        return Build(ok=False, seconds=time.monotonic() - start, image=None, config=lines, log=_tail(log),
                     error=f"the build left no {image} (or a symlink in its place)")
    return Build(ok=True, seconds=time.monotonic() - start, image=made, config=lines, log=_tail(log), problems=problems,
                 configured=kept is None)


def _inside(path: Path, top: Path) -> bool:
    """PATH is a regular file below TOP, reached without a symlink (the sandboxed build wrote it; root copies it)."""
    return path.resolve() == top.resolve() / path.relative_to(top) and path.is_file() and not path.is_symlink()


_ERROR = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$", re.M)
_QUOTES = str.maketrans("\u2018\u2019", "''")  # gcc's typographic quotes under a UTF-8 locale
_OTHER = re.compile(r"^.*(?:\berror\b|undefined reference|\*\*\*).*$", re.M | re.I)


def first_error(text: str, src: Path) -> tuple[str, str | None, int | None]:
    """(message, path relative to the tree, line) of the first compiler error in a make log."""
    text = text.translate(_QUOTES)
    if m := _ERROR.search(text):
        return m["msg"].strip(), _relative(m["path"], src), int(m["line"])
    m2 = _OTHER.search(text)
    return (m2.group(0).strip()[:300] if m2 else "the kernel build failed"), None, None


def build_finding(b: Build, tree: str, env: str) -> Finding:
    where = f"{b.path}:{b.line}: " if b.path else ""
    return Finding(RULE, Level.ERROR, f"the {tree} kernel ({env}) does not build: {where}{b.error}", path=b.path, line=b.line)


def _relative(path: str, src: Path) -> str:
    for prefix in (str(src) + "/", "../src/", "./"):
        if path.startswith(prefix):
            return path[len(prefix):]
    return path


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])
