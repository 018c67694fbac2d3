"""Read a kernel's serial console: in-kernel test results, kernel splats, and how the boot ended.

dmapool_test (mm/dmapool_test.c) prints one line per pool shape,
`dmapool test: size:16   align:16   blocks:8192 time:11860` (microseconds for 100 rounds);
KUnit prints KTAP (Documentation/dev-tools/ktap.rst), parsed by reviewer.ktap once the
block is cut out of the other console lines.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from reviewer import ktap

# The runner builds with O=CACHE/build-ENV from CACHE/src, so __FILE__ (BUG_ON, WARN_ON) reads "../src/mm/x.c".
BUILD_SRC = "../src/"
_STAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")
_DMAPOOL = re.compile(r"dmapool test: size:(?P<size>\d+)\s+align:(?P<align>\d+)\s+blocks:(?P<blocks>\d+)\s+time:(?P<time>\d+)")
# A boot with no root file system ends in one of these panics: that is the expected end.
EXPECTED_END = ("No working init found", "VFS: Unable to mount root fs")
_PANIC = "Kernel panic - not syncing"
_SPLAT = re.compile(
    r"\b(?:BUG:|kernel BUG at|WARNING:|KASAN:|UBSAN:|KFENCE:|Oops|general protection fault|corrupted|"
    r"Kernel panic - not syncing|INFO: task .* blocked|watchdog: BUG)"
)
_QUOTE_LINES = 16
_SCAN_LINES = 40
_REGISTERS = re.compile(r"^(?:Code|RSP|RAX|RDX|RBP|R\d\d|FS|CS|CR2|DR\d):\s")


@dataclass(frozen=True)
class Splat:
    first: str  # the line that starts it, without the timestamp
    quote: tuple[str, ...]  # it and up to a dozen following lines


def lines(text: str) -> list[str]:
    """Console lines without carriage returns and printk timestamps, with paths relative to the tree."""
    return [_STAMP.sub("", ln.rstrip("\r")).replace(BUILD_SRC, "") for ln in text.splitlines()]


def is_end(line: str) -> bool:
    """True on the line after which nothing more comes: the panic's end, or the kernel restarting."""
    text = _STAMP.sub("", line.strip("\r"))
    return text.startswith(("---[ end Kernel panic", "reboot: ")) or any(e in text for e in EXPECTED_END)


def expected_end(text: str) -> bool:
    return any(e in ln for ln in lines(text) for e in EXPECTED_END)


def dmapool_times(text: str) -> dict[str, float]:
    """Per pool shape ("size:16 align:16 blocks:8192"), the time dmapool_test printed (us)."""
    out: dict[str, float] = {}
    for m in _DMAPOOL.finditer("\n".join(lines(text))):
        out[f"size:{m['size']} align:{m['align']} blocks:{m['blocks']}"] = float(m["time"])
    return out


def splats(text: str) -> list[Splat]:
    """Kernel splats; the expected no-root panic (and its trailer) is not one."""
    found: list[Splat] = []
    all_lines = lines(text)
    skip_until = -1
    for i, ln in enumerate(all_lines):
        if i <= skip_until or not _SPLAT.search(ln) or _expected(ln):
            continue
        quote, skip_until = _quote(all_lines, i)  # one splat, not one per line of its trace
        found.append(Splat(ln.strip(), quote))
    return found


def _expected(line: str) -> bool:
    return any(e in line for e in EXPECTED_END)


def _quote(all_lines: list[str], start: int) -> tuple[tuple[str, ...], int]:
    """The splat's first line, then what a reviewer reads (RIP, the trace) without the register dump;
    and the index of the last line it covers."""
    out, end = [all_lines[start].rstrip()], start
    for end in range(start + 1, min(start + _SCAN_LINES, len(all_lines))):
        ln = all_lines[end]
        if not ln.strip() or ln.startswith("---[ end") or len(out) >= _QUOTE_LINES:
            break
        if not _REGISTERS.match(ln):
            out.append(ln.rstrip())
    return tuple(out), end


def kunit(text: str) -> ktap.KtapLog | None:
    """The KTAP KUnit printed at boot, cut out of the other console lines; None if there is none."""
    return ktap.from_console("\n".join(lines(text)))


def last_line(text: str) -> str:
    return next((ln.strip() for ln in reversed(lines(text)) if ln.strip()), "")
