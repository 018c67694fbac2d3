"""Configure and build a small x86_64 kernel for in-kernel tests: tinyconfig + a fragment, bzImage.

Each (tree, environment) has its own output directory (make O=...), kept by the caller, so a
second build is incremental; ccache is used when installed. A failed build becomes a finding
naming the compiler's first error and its file and line.
"""
from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from reviewer.errors import CommandError
from reviewer.model import Finding, Level
from reviewer.proc import run

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
# Fixed so that two builds of the same source are the same (and ccache hits across runs); C: plain ASCII
# messages (kbuild unexports LC_ALL, so LANG and the categories gcc reads are set instead).
_REPRO = {"LANG": "C", "LC_CTYPE": "C", "LC_MESSAGES": "C", "KBUILD_BUILD_TIMESTAMP": "2025-01-01", "KBUILD_BUILD_USER": "reviewer", "KBUILD_BUILD_HOST": "reviewer"}


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


def fragment(symbols: Iterable[str], env: str) -> tuple[str, ...]:
    """.config lines: the base console set, the environment's symbols, then SYMBOLS ("!X" turns X off)."""
    names = dict.fromkeys([*BASE, *ENVS[env], *symbols])
    return tuple(f"# CONFIG_{n[1:]} is not set" if n.startswith("!") else f"CONFIG_{n}=y" for n in names)


def make_cmd(src: Path, out: Path, *targets: str) -> list[str]:
    cc = ["CC=ccache gcc"] if shutil.which("ccache") else []
    return ["make", "-C", str(src), f"O={out}", "ARCH=x86_64", *cc, *targets]


def configure(src: Path, out: Path, lines: tuple[str, ...], timeout: float) -> tuple[str, ...]:
    """tinyconfig, the fragment on top, olddefconfig; the fragment lines that did not stick."""
    out.mkdir(parents=True, exist_ok=True)
    run(make_cmd(src, out, "tinyconfig"), env=_env(out), timeout=timeout)
    with open(out / ".config", "a") as f:
        f.write("\n".join(lines) + "\n")
    run(make_cmd(src, out, "olddefconfig"), env=_env(out), timeout=timeout)
    final = set((out / ".config").read_text().splitlines())
    return tuple(f"{ln} was not kept (unmet dependency?)" for ln in lines if ln not in final)


def build(src: Path, out: Path, lines: tuple[str, ...], timeout: float = BUILD_TIMEOUT, jobs: int | None = None) -> Build:
    start = time.monotonic()
    try:
        problems = configure(src, out, lines, timeout)
        done = run([*make_cmd(src, out, f"-j{jobs or os.cpu_count() or 1}", "bzImage")], env=_env(out), timeout=timeout)
    except CommandError as exc:
        text = exc.stdout + "\n" + exc.stderr
        err, path, line = first_error(text, src)
        if exc.timeout is not None:
            err = f"the build timed out after {exc.timeout:g}s"
        return Build(False, time.monotonic() - start, None, lines, _tail(text), err, path, line)
    image = out / "arch" / "x86" / "boot" / "bzImage"
    return Build(True, time.monotonic() - start, image, lines, _tail(done.stdout + done.stderr), problems=problems)


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


def _env(out: Path) -> dict[str, str]:
    return {**_REPRO, "CCACHE_DIR": str(out.parent / "ccache"), "CCACHE_BASEDIR": str(out.parent)}


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])
