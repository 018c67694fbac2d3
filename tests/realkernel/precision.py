"""The precision corpus (issue 14 item 5): series that put real, accepted 6.12 code back.

Each `Feature` below names real code of Debian's 6.12 tree: the files it added and the blocks of
lines it put into files that existed (a Kconfig `select` or `config` entry, a Makefile obj line,
a MAINTAINERS section, a toctree line, a syscall table line ...). `build` makes, with git plumbing
on the cached repository (a private index, never a checkout), a base commit on 6.12 from which
the feature is taken out, and one commit per `Patch` that puts part of it back, split the way
upstream split it where that is easy. The last commit's tree is 6.12's own tree, byte for byte
(`build` checks it with `git rev-parse <commit>^{tree}`), so whatever a review says about these
series it says about code that upstream accepted.

A block is found by regexes, never by its text: `first` is the line it starts at (`re.search` on
each line without its newline, exactly one line may match), `last` the line it ends at (the first
match at or after `first`, inclusive; default: `first` itself). Either may be a tuple of regexes,
each searched after the previous one's line, to reach a line that is not unique in the file.
`blank_before` takes the empty line above the block too (for the second section of a split).
The base has `drop` (a regex) cut out of the block instead of the whole block, for lists where
the feature added a word (`obj-vdso-y := ... vgetrandom.o ...`). `build(..., omit=[key])` never
puts back the blocks with that `key`: the same base, and the series missing them.

Subjects are modelled on upstream's; the bodies are written for the corpus (not upstream's text).
"""
from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from tests.realkernel.kernel import IDENTITY, format_patch, git

AUTHOR = f"{IDENTITY['GIT_AUTHOR_NAME']} <{IDENTITY['GIT_AUTHOR_EMAIL']}>"
ZERO = "0" * 40
Anchor = str | tuple[str, ...]


@dataclass(frozen=True)
class Cut:
    """A block of whole lines of PATH that the feature added to a file that existed before it."""

    path: str
    first: Anchor
    last: Anchor | None = None
    blank_before: bool = False
    drop: str | None = None  # a regex: the base keeps the block without it, instead of dropping the block
    key: str = ""  # names the block for a test that leaves it out (the LoongArch negative cases)


@dataclass(frozen=True)
class Patch:
    subject: str
    body: str
    add: tuple[str, ...] = ()  # files, or directories ending in "/", that the patch adds whole
    cuts: tuple[Cut, ...] = ()


@dataclass(frozen=True)
class Feature:
    name: str
    kind: str  # what kind of change it is, for the report
    cover: str  # the cover letter's subject (used when the series has more than one patch)
    patches: tuple[Patch, ...]
    blurb: str = ""


@dataclass(frozen=True)
class Built:
    feature: Feature
    base: str
    commits: tuple[str, ...]
    mbox: Path
    identical: bool  # the last commit's tree is 6.12's tree

    @property
    def tip(self) -> str:
        return self.commits[-1]


@dataclass(frozen=True)
class _Span:
    start: int  # character offsets in the 6.12 text
    end: int
    base: str  # what the base has in its place


@dataclass
class _Plan:
    """The patch that adds each new file, and per path its cuts with the patch that puts each back."""

    head: Mapping[str, tuple[str, str]]  # path -> (mode, blob) in 6.12
    added_in: dict[str, int] = field(default_factory=dict)
    cuts: dict[str, list[tuple[int, Cut]]] = field(default_factory=dict)


def _git_bytes(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    done = subprocess.run(["git", "-C", str(repo), *args], env={**os.environ, **IDENTITY}, input=data,
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _head_entries(repo: Path, rev: str, paths: Iterable[str]) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob) in REV for PATHS (a directory ending in / gives every file below it)."""
    wanted = sorted(set(paths))
    out = _git_bytes(repo, "ls-tree", "-r", "-z", "--full-tree", rev, "--", *wanted).decode()
    entries = {}
    for record in filter(None, out.split("\0")):
        meta, path = record.split("\t", 1)
        mode, _kind, blob = meta.split()
        entries[path] = (mode, blob)
    for path in wanted:
        if not any(p == path or (path.endswith("/") and p.startswith(path)) for p in entries):
            raise RuntimeError(f"{path} is not in {rev}")
    return entries


def _expand(entries: Mapping[str, tuple[str, str]], path: str) -> list[str]:
    return sorted(p for p in entries if p == path or (path.endswith("/") and p.startswith(path)))


def _find(lines: list[str], anchor: Anchor, start: int, *, unique: bool) -> int:
    """The index of the line that ANCHOR's last regex matches, each regex searched after the previous."""
    regexes = (anchor,) if isinstance(anchor, str) else anchor
    at = start
    for n, regex in enumerate(regexes):
        hits = [i for i in range(at, len(lines)) if re.search(regex, lines[i].rstrip("\n"))]
        if not hits:
            raise RuntimeError(f"no line matches {regex!r}")
        if unique and len(regexes) == 1 and len(hits) > 1:
            raise RuntimeError(f"{len(hits)} lines match {regex!r}: make the anchor a tuple")
        at = hits[0] + (1 if n < len(regexes) - 1 else 0)
    return at


def _span(text: str, cut: Cut) -> _Span:
    lines = text.splitlines(keepends=True)
    first = _find(lines, cut.first, 0, unique=True)
    last = first if cut.last is None else _find(lines, cut.last, first, unique=False)
    if cut.blank_before:
        if first == 0 or lines[first - 1] != "\n":
            raise RuntimeError(f"{cut.path}: no empty line above {cut.first!r}")
        first -= 1
    start = sum(map(len, lines[:first]))
    end = start + sum(map(len, lines[first : last + 1]))
    block = text[start:end]
    base = ""
    if cut.drop is not None:
        base, n = re.subn(cut.drop, "", block, count=1)
        if n != 1 or base == block:
            raise RuntimeError(f"{cut.path}: {cut.drop!r} is not in the block at {cut.first!r}")
    return _Span(start, end, base)


def _revert(text: str, spans: list[_Span]) -> str:
    """TEXT with each span replaced by its base text (spans of one 6.12 text, non-overlapping)."""
    out, at = [], 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < at:
            raise RuntimeError("two cuts overlap")
        out += [text[at : span.start], span.base]
        at = span.end
    return "".join(out + [text[at:]])


def _plan(repo: Path, rev: str, patches: tuple[Patch, ...], left_out: list[Cut]) -> _Plan:
    adds = [p for patch in patches for p in patch.add]
    cut_paths = [c.path for patch in patches for c in patch.cuts] + [c.path for c in left_out]
    plan = _Plan(_head_entries(repo, rev, [*adds, *cut_paths]))
    for n, patch in enumerate(patches, start=1):
        for path in (p for added in patch.add for p in _expand(plan.head, added)):
            if path in plan.added_in:
                raise RuntimeError(f"{path} is added twice")
            plan.added_in[path] = n
        for cut in patch.cuts:
            plan.cuts.setdefault(cut.path, []).append((n, cut))
    for cut in left_out:  # never put back: every stage has it as the base has it
        plan.cuts.setdefault(cut.path, []).append((len(patches) + 1, cut))
    return plan


def _states(repo: Path, plan: _Plan, stages: int) -> list[dict[str, tuple[str, bytes | str] | None]]:
    """For stage 0 (the base) .. STAGES (the last patch): path -> (mode, content or blob) or None (absent)."""
    texts = {path: _git_bytes(repo, "cat-file", "blob", plan.head[path][1]).decode("utf-8", "surrogateescape")
             for path in plan.cuts}
    spans = {path: [(n, _span(texts[path], cut)) for n, cut in cuts] for path, cuts in plan.cuts.items()}
    states: list[dict[str, tuple[str, bytes | str] | None]] = []
    for stage in range(stages + 1):
        state: dict[str, tuple[str, bytes | str] | None] = {}
        for path in {*plan.added_in, *plan.cuts}:
            mode, blob = plan.head[path]
            if plan.added_in.get(path, 0) > stage:
                state[path] = None
            elif path in spans:
                later = [s for n, s in spans[path] if n > stage]
                state[path] = (mode, _revert(texts[path], later).encode("utf-8", "surrogateescape")) if later else (mode, blob)
            else:
                state[path] = (mode, blob)
        states.append(state)
    return states


def _message(patch: Patch) -> str:
    return f"{patch.subject}\n\n{patch.body.strip()}\n\nSigned-off-by: {AUTHOR}\n"


def _commits(repo: Path, head: str, feature: Feature, states: list[dict[str, tuple[str, bytes | str] | None]]) -> list[str]:
    """The base commit and one commit per patch, each a tree written from a private index."""
    index = repo / ".git" / f"reviewer-precision-index-{os.getpid()}"
    env = {"GIT_INDEX_FILE": str(index)}
    commits, parent = [], head
    try:
        git(repo, "read-tree", head, env=env)
        for stage, state in enumerate(states):
            lines = []
            for path, entry in sorted(state.items()):
                if entry is None:
                    lines.append(f"0 {ZERO}\t{path}")
                    continue
                mode, content = entry
                blob = (content if isinstance(content, str)
                        else _git_bytes(repo, "hash-object", "-w", "--stdin", data=content).decode().strip())
                lines.append(f"{mode} {blob}\t{path}")
            git(repo, "update-index", "--index-info", env=env, input="\n".join(lines) + "\n")
            tree = git(repo, "write-tree", env=env).strip()
            base = f"{feature.name}: take the feature out\n\nThe precision corpus's base.\n"
            message = _message(feature.patches[stage - 1]) if stage else base
            parent = git(repo, "commit-tree", tree, "-p", parent, "-m", message).strip()
            commits.append(parent)
    finally:
        index.unlink(missing_ok=True)
    return commits


def _cover(mbox: Path, feature: Feature) -> None:
    text = mbox.read_text()
    blurb = feature.blurb.strip() or f"This series puts {feature.kind} back: {feature.name}."
    mbox.write_text(text.replace("*** SUBJECT HERE ***", feature.cover, 1).replace("*** BLURB HERE ***", blurb, 1))


def _leave_out(feature: Feature, omit: frozenset[str]) -> tuple[tuple[Patch, ...], list[Cut]]:
    """FEATURE's patches without the blocks named in OMIT (a patch left empty is dropped), and those blocks."""
    left_out = [c for patch in feature.patches for c in patch.cuts if c.key in omit]
    if {c.key for c in left_out} != omit:
        raise ValueError(f"{feature.name} has no block {sorted(omit - {c.key for c in left_out})}")
    patches = tuple(replace(patch, cuts=tuple(c for c in patch.cuts if c.key not in omit)) for patch in feature.patches)
    return tuple(p for p in patches if p.add or p.cuts), left_out


def build(repo: Path, head: str, feature: Feature, out: Path, omit: Iterable[str] = ()) -> Built:
    """The base commit and the series for FEATURE on HEAD, exported to OUT as one mbox.

    With OMIT (keys of cuts), those blocks are never put back: the series is FEATURE missing them.
    """
    patches, left_out = _leave_out(feature, frozenset(omit))
    kept = replace(feature, patches=patches)
    plan = _plan(repo, head, patches, left_out)
    commits = _commits(repo, head, kept, _states(repo, plan, len(patches)))
    base, series = commits[0], tuple(commits[1:])
    cover = ("--cover-letter",) if len(series) > 1 else ()
    mbox = format_patch(repo, base, series[-1], out, *cover)
    if cover:
        _cover(mbox, kept)
    identical = tree_of(repo, series[-1]) == tree_of(repo, head)
    if not left_out and not identical:
        raise RuntimeError(f"{feature.name}: base + series is not 6.12's tree")
    return Built(kept, base, series, mbox, identical)


def tree_of(repo: Path, rev: str) -> str:
    return git(repo, "rev-parse", f"{rev}^{{tree}}").strip()


# --- the corpus ------------------------------------------------------------------------------

MAINTAINERS = "MAINTAINERS"
VDSO_CHACHA = "tools/testing/selftests/vDSO/vgetrandom-chacha.S"
LA, PPC, S390 = "arch/loongarch", "arch/powerpc", "arch/s390"
PPC_VDSO, S390_VDSO = f"{PPC}/kernel/vdso", f"{S390}/kernel/vdso64"
SELECT_GETRANDOM = r"^\tselect VDSO_GETRANDOM$"
GETRANDOM_IFNEQ = r"^ifneq \(\$\(c-getrandom-y\),\)$"


def _chacha_branch(arch_macro: str, path: str) -> Cut:
    """The arch's `#elif defined(...)` branch and its #include in the selftests' vgetrandom-chacha.S."""
    return Cut(VDSO_CHACHA, rf"^#elif defined\({arch_macro}\)", re.escape(path), key="selftest-enable")


LOONGARCH_VDSO = Feature(
    "loongarch-vdso-getrandom", "a vDSO getrandom() arch wiring",
    "LoongArch: vDSO: Wire up getrandom() vDSO implementation",
    (
        Patch("LoongArch: vDSO: Wire up getrandom() vDSO implementation", """
Hook up the generic vDSO implementation of getrandom() on LoongArch: the
arch's ChaCha20 block function in assembly, the data page slot for the
generic vDSO RNG state, the C entry point built into the vDSO, and the
__vdso_getrandom export in the linker script.
""", add=(f"{LA}/include/asm/vdso/getrandom.h", f"{LA}/vdso/vgetrandom.c", f"{LA}/vdso/vgetrandom-chacha.S"), cuts=(
            Cut(f"{LA}/Kconfig", SELECT_GETRANDOM, key="kconfig-select"),
            Cut(f"{LA}/include/asm/vdso/vdso.h", r"^\tstruct vdso_rng_data rng_data;$"),
            Cut(f"{LA}/include/asm/vdso/vsyscall.h", r"^extern struct vdso_rng_data \*vdso_rng_data;$"),
            Cut(f"{LA}/include/asm/vdso/vsyscall.h", (r"^#define __arch_get_k_vdso_data ", r"^static __always_inline$"),
                r"^#define __arch_get_k_vdso_rng_data ", blank_before=True),
            Cut(f"{LA}/kernel/vdso.c", r"^struct vdso_rng_data \*vdso_rng_data = "),
            Cut(f"{LA}/vdso/Makefile", r"^obj-vdso-y := ", r"sigreturn\.o$", drop=r"vgetrandom\.o \\\n\s+vgetrandom-chacha\.o "),
            Cut(f"{LA}/vdso/Makefile", GETRANDOM_IFNEQ, r"^endif$", blank_before=True),
            Cut(f"{LA}/vdso/vdso.lds.S", r"^\t\t__vdso_getrandom;$", key="lds-export"),
        )),
        Patch("selftests/vDSO: Enable the getrandom tests on LoongArch", """
vdso_test_chacha checks the arch's ChaCha20 assembly against the reference
implementation: include the LoongArch one, so that the test runs there too.
""", cuts=(_chacha_branch("__loongarch__", f"{LA}/vdso/vgetrandom-chacha.S"),)),
    ),
)

POWERPC_VDSO = Feature(
    "powerpc-vdso-getrandom", "a vDSO getrandom() arch wiring built by pattern rules",
    "powerpc/vdso: Wire up getrandom() vDSO implementation",
    (
        Patch("powerpc/vdso: Wire up getrandom() vDSO implementation on VDSO32", """
Add the powerpc vDSO getrandom(): an assembly trampoline that finds the data
page and calls the generic C implementation, and the ChaCha20 block function
in assembly. This wires it into the 32-bit vDSO; vgetrandom.c is built as
vgetrandom-32.o by the directory's pattern rule, like vgettimeofday.c.
""", add=(f"{PPC}/include/asm/vdso/getrandom.h", f"{PPC_VDSO}/getrandom.S", f"{PPC_VDSO}/vgetrandom.c",
          f"{PPC_VDSO}/vgetrandom-chacha.S"), cuts=(
            Cut(f"{PPC}/Kconfig", SELECT_GETRANDOM),
            Cut(f"{PPC}/include/asm/vdso/vsyscall.h", (r"^#define __arch_get_k_vdso_data ", r"^static __always_inline$"),
                (r"__arch_get_k_vdso_rng_data", r"^}$"), blank_before=True),
            Cut(f"{PPC}/include/asm/vdso_datapage.h", (r"compat_syscall_map\[0\]", r"rng_data;$")),
            Cut(f"{PPC}/kernel/asm-offsets.c", r"VDSO_RNG_DATA_OFFSET"),
            Cut(f"{PPC_VDSO}/Makefile", r"^obj-vdso32 \+= getrandom-32\.o", blank_before=True),
            Cut(f"{PPC_VDSO}/Makefile", GETRANDOM_IFNEQ, r"CFLAGS_vgetrandom-32\.o", blank_before=True),
            Cut(f"{PPC_VDSO}/Makefile", (GETRANDOM_IFNEQ, r"^endif$")),
            Cut(f"{PPC_VDSO}/Makefile", r"^targets := .* vgetrandom-32\.o$", drop=r" vgetrandom-32\.o"),
            Cut(f"{PPC_VDSO}/Makefile", r"^\$\(obj\)/vdso32\.so\.dbg: ", drop=r" \$\(obj\)/vgetrandom-32\.o"),
            Cut(f"{PPC_VDSO}/Makefile", r"^\$\(obj\)/vgetrandom-32\.o: ", r"vdso32cc"),
            Cut(f"{PPC_VDSO}/vdso32.lds.S", r"^\t\t__kernel_getrandom;$"),
        )),
        Patch("powerpc/vdso: Wire up getrandom() vDSO implementation on VDSO64", """
Build the same getrandom() vDSO code into the 64-bit vDSO: vgetrandom.c
becomes vgetrandom-64.o through the 64-bit pattern rule, and the 64-bit
data page gets the RNG state.
""", cuts=(
            Cut(f"{PPC}/include/asm/vdso_datapage.h", (r"compat_syscall_map\[SYSCALL_MAP_SIZE\]", r"rng_data;$"),
                blank_before=True),
            Cut(f"{PPC_VDSO}/Makefile", r"^obj-vdso64 \+= getrandom-64\.o"),
            Cut(f"{PPC_VDSO}/Makefile", r"CFLAGS_vgetrandom-64\.o"),
            Cut(f"{PPC_VDSO}/Makefile", r"^targets \+= .* vgetrandom-64\.o$", drop=r" vgetrandom-64\.o"),
            Cut(f"{PPC_VDSO}/Makefile", r"^\$\(obj\)/vdso64\.so\.dbg: ", drop=r" \$\(obj\)/vgetrandom-64\.o"),
            Cut(f"{PPC_VDSO}/Makefile", r"^\$\(obj\)/vgetrandom-64\.o: ", r"cc_o_c"),
            Cut(f"{PPC_VDSO}/vdso64.lds.S", r"^\t\t__kernel_getrandom;$"),
        )),
        Patch("selftests/vDSO: Enable the getrandom tests on powerpc", """
Include the powerpc ChaCha20 assembly in vdso_test_chacha, for 32 and 64 bits.
""", cuts=(_chacha_branch("__powerpc__", f"{PPC_VDSO}/vgetrandom-chacha.S"),)),
    ),
)

S390_VDSO_FEATURE = Feature(
    "s390-vdso-getrandom", "a vDSO getrandom() arch wiring (s390x macro)",
    "s390/vdso: Wire up getrandom() vdso implementation",
    (
        Patch("s390/vdso: Wire up getrandom() vdso implementation", """
Provide the s390 vDSO getrandom(): a ChaCha20 block function that uses the
vector facility, the location of the RNG data in the vDSO data page, and the
__kernel_getrandom export.
""", add=(f"{S390}/include/asm/vdso/getrandom.h", f"{S390_VDSO}/vgetrandom.c", f"{S390_VDSO}/vgetrandom-chacha.S"), cuts=(
            Cut(f"{S390}/Kconfig", SELECT_GETRANDOM),
            Cut(f"{S390}/include/asm/vdso/vsyscall.h", r"^#define __VDSO_RND_DATA_OFFSET", r"^$"),
            Cut(f"{S390}/include/asm/vdso/vsyscall.h", r"__s390_get_k_vdso_rnd_data\(void\)", r"^#define __arch_get_k_vdso_rng_data ",
                blank_before=True),
            Cut(f"{S390_VDSO}/vdso.h", r"^ssize_t __kernel_getrandom\("),
            Cut(f"{S390_VDSO}/vdso64.lds.S", r"PROVIDE\(_vdso_rng_data"),
            Cut(f"{S390_VDSO}/vdso64.lds.S", r"^\t\t__kernel_getrandom;$"),
            Cut(f"{S390_VDSO}/Makefile", r"^obj-vdso64 = ", drop=r" vgetrandom-chacha\.o"),
            Cut(f"{S390_VDSO}/Makefile", r"^obj-cvdso64 = ", drop=r" vgetrandom\.o"),
            Cut(f"{S390_VDSO}/Makefile", r"^CFLAGS_REMOVE_vgetrandom\.o"),
            Cut(f"{S390_VDSO}/Makefile", GETRANDOM_IFNEQ, r"^endif$", blank_before=True),
        )),
        Patch("selftests: vDSO: Enable the getrandom tests on s390x", """
Include the s390 ChaCha20 assembly in vdso_test_chacha.
""", cuts=(_chacha_branch("__s390x__", f"{S390_VDSO}/vgetrandom-chacha.S"),)),
    ),
)

CHIPCAP2 = Feature(
    "hwmon-chipcap2", "a new driver with its Kconfig, Makefile, MAINTAINERS entry, binding and documentation",
    "hwmon: Add support for Amphenol ChipCap 2",
    (
        Patch("dt-bindings: vendor-prefixes: add Amphenol", """
Add the vendor prefix for Amphenol (https://www.amphenol-sensors.com).
""", cuts=(Cut("Documentation/devicetree/bindings/vendor-prefixes.yaml", r'^  "\^amphenol,', r"description: Amphenol"),)),
        Patch("dt-bindings: hwmon: Add Amphenol ChipCap 2", """
Add the device tree bindings of the ChipCap 2, an I2C humidity and
temperature sensor with alarm outputs, and a MAINTAINERS entry for them.
""", add=("Documentation/devicetree/bindings/hwmon/amphenol,chipcap2.yaml",), cuts=(
            Cut(MAINTAINERS, r"^AMPHENOL CHIPCAP 2 ", r"^F:\tDocumentation/devicetree/bindings/hwmon/amphenol,chipcap2\.yaml$",
                blank_before=True),
        )),
        Patch("hwmon: Add support for Amphenol ChipCap 2", """
The ChipCap 2 measures relative humidity and temperature and raises alarms
through two optional interrupt lines. Add a hwmon driver for it, with its
documentation.
""", add=("drivers/hwmon/chipcap2.c", "Documentation/hwmon/chipcap2.rst"), cuts=(
            Cut("Documentation/hwmon/index.rst", r"^   chipcap2$"),
            Cut("drivers/hwmon/Kconfig", r"^config SENSORS_CHIPCAP2$", (r"^config SENSORS_CHIPCAP2$", r"^$", r"^$")),
            Cut("drivers/hwmon/Makefile", r"CONFIG_SENSORS_CHIPCAP2"),
            Cut(MAINTAINERS, r"^F:\tDocumentation/hwmon/chipcap2\.rst$", r"^F:\tdrivers/hwmon/chipcap2\.c$"),
        )),
    ),
)

TH1520_CLK = Feature(
    "clk-thead-th1520", "a driver in a new directory (Kconfig source, Makefile obj dir) with a dt-bindings header",
    "clk: thead: Add support for the T-Head TH1520 AP_SUBSYS clocks",
    (
        Patch("dt-bindings: clock: Document T-Head TH1520 AP_SUBSYS controller", """
Document the clock controller of the TH1520 AP sub-system and add the
header with the clock indices it provides.
""", add=("Documentation/devicetree/bindings/clock/thead,th1520-clk-ap.yaml", "include/dt-bindings/clock/thead,th1520-clk-ap.h"),
              cuts=(
            Cut(MAINTAINERS, r"^F:\tDocumentation/devicetree/bindings/clock/thead,th1520-clk-ap\.yaml$"),
            Cut(MAINTAINERS, r"^F:\tinclude/dt-bindings/clock/thead,th1520-clk-ap\.h$"),
        )),
        Patch("clk: thead: Add support for T-Head TH1520 AP_SUBSYS clocks", """
Add a driver for the AP sub-system clock controller of the TH1520: the CPU,
DPU, GMAC, video and TEE PLLs and the dividers, muxes and gates below them.
""", add=("drivers/clk/thead/",), cuts=(
            Cut("drivers/clk/Kconfig", r'^source "drivers/clk/thead/Kconfig"$'),
            Cut("drivers/clk/Makefile", r"\+= thead/$"),
            Cut(MAINTAINERS, r"^F:\tdrivers/clk/thead/clk-th1520-ap\.c$"),
        )),
    ),
)

NTSYNC = Feature(
    "misc-ntsync", "a new uapi header, then the driver that implements it",
    "ntsync: Introduce the NT synchronization primitive driver",
    (
        Patch("ntsync: Add the uapi header with NTSYNC_IOC_CREATE_SEM", """
Describe the ioctl interface of the ntsync character device: semaphore
creation and release. Reserve its ioctl range in ioctl-number.rst.
""", add=("include/uapi/linux/ntsync.h",), cuts=(
            Cut("Documentation/userspace-api/ioctl/ioctl-number.rst", r"uapi/linux/ntsync\.h"),
        )),
        Patch("ntsync: Introduce the ntsync driver and character device", """
Add /dev/ntsync, a driver that lets Wine emulate Windows NT synchronization
primitives with the kernel's help, starting with semaphores.
""", add=("drivers/misc/ntsync.c",), cuts=(
            Cut("drivers/misc/Kconfig", r"^config NTSYNC$", (r"^config NTSYNC$", r"If unsure, say N\.", r"^$")),
            Cut("drivers/misc/Makefile", r"CONFIG_NTSYNC"),
        )),
    ),
)

SYSCALL_TABLES = (
    "arch/alpha/kernel/syscalls/syscall.tbl", "arch/arm/tools/syscall.tbl", "arch/arm64/tools/syscall_32.tbl",
    "arch/m68k/kernel/syscalls/syscall.tbl", "arch/microblaze/kernel/syscalls/syscall.tbl",
    "arch/mips/kernel/syscalls/syscall_n32.tbl", "arch/mips/kernel/syscalls/syscall_n64.tbl",
    "arch/mips/kernel/syscalls/syscall_o32.tbl", "arch/parisc/kernel/syscalls/syscall.tbl",
    "arch/powerpc/kernel/syscalls/syscall.tbl", "arch/s390/kernel/syscalls/syscall.tbl", "arch/sh/kernel/syscalls/syscall.tbl",
    "arch/sparc/kernel/syscalls/syscall.tbl", "arch/x86/entry/syscalls/syscall_32.tbl", "arch/x86/entry/syscalls/syscall_64.tbl",
    "arch/xtensa/kernel/syscalls/syscall.tbl", "scripts/syscall.tbl",
)

FCHMODAT2 = Feature(
    "syscall-fchmodat2", "a syscall on every architecture, with its selftest directory",
    "fs: Add fchmodat2()",
    (
        Patch("fs: Add fchmodat2()", """
fchmodat() has no flags argument, so AT_SYMLINK_NOFOLLOW cannot be passed
through to the kernel and libcs emulate it through /proc. Add fchmodat2(),
which takes the flags.
""", cuts=(
            Cut("fs/open.c", r"^SYSCALL_DEFINE4\(fchmodat2,", r"^$"),
            Cut("include/linux/syscalls.h", r"^asmlinkage long sys_fchmodat2\(", r"unsigned int flags\);$"),
        )),
        Patch("arch: Register fchmodat2, usually as syscall 452", """
Give fchmodat2() its number in every syscall table: 452 on most ABIs,
562 on alpha, which is offset by 110.
""", cuts=(
            *(Cut(table, r"\tfchmodat2\t") for table in SYSCALL_TABLES),
            Cut("include/uapi/asm-generic/unistd.h", r"^#define __NR_fchmodat2 ", r"^__SYSCALL\(__NR_fchmodat2,"),
        )),
        Patch("selftests: Add fchmodat2 selftest", """
Test that fchmodat2() changes the mode of a regular file, and that it
refuses to change the mode of a symbolic link with AT_SYMLINK_NOFOLLOW.
""", add=("tools/testing/selftests/fchmodat2/",), cuts=(
            Cut("tools/testing/selftests/Makefile", r"^TARGETS \+= fchmodat2$"),
        )),
        Patch("audit: Add fchmodat2() to the change attributes class", """
fchmodat2() changes file attributes like fchmodat() does: list it in the
audit class of attribute changes.
""", cuts=(Cut("include/asm-generic/audit_change_attr.h", r"^#ifdef __NR_fchmodat2$", r"^#endif$"),)),
    ),
)

URETPROBE = Feature(
    "syscall-uretprobe", "an x86-only syscall (no generic table entry)",
    "uprobe: Add uretprobe syscall to speed up return probe",
    (
        Patch("uprobe: Wire up uretprobe system call", """
Add the uretprobe syscall to the x86_64 table, with its prototype and its
COND_SYSCALL stub for kernels built without uprobes.
""", cuts=(
            Cut("arch/x86/entry/syscalls/syscall_64.tbl", r"\turetprobe\t"),
            Cut("include/linux/syscalls.h", r"^asmlinkage long sys_uretprobe\(void\);$", blank_before=True),
            Cut("kernel/sys_ni.c", r"^COND_SYSCALL\(uretprobe\);$", blank_before=True),
        )),
        Patch("uprobe: Add uretprobe syscall to speed up return probe", """
A return probe traps into the kernel with a breakpoint. On x86_64 a
trampoline that calls the uretprobe syscall instead is cheaper: add the
trampoline and the syscall, which only that trampoline may call.
""", cuts=(
            Cut("arch/x86/kernel/uprobes.c", (r"^#ifdef CONFIG_X86_64$", r"^asm \($"), (r"^sigill:$", r"^}$", r"^$")),
        )),
    ),
)

DT_SELFTEST = Feature(
    "selftests-dt", "a selftest directory with its TARGETS line and MAINTAINERS coverage",
    "kselftest: Add a test for unprobed Devicetree devices",
    (
        Patch("kselftest: Add new test for detecting unprobed Devicetree devices", """
Add a kselftest that walks the Devicetree and reports every device node
with a compatible that no driver has probed, skipping the compatibles
listed as never having a driver.
""", add=("tools/testing/selftests/dt/",), cuts=(
            Cut("tools/testing/selftests/Makefile", r"^TARGETS \+= dt$"),
            Cut(MAINTAINERS, r"^F:\ttools/testing/selftests/dt/$"),
        )),
    ),
)

MSEAL_SELFTESTS = Feature(
    "selftests-mm-mseal", "selftest programs in an existing directory (TEST_GEN_FILES)",
    "selftests/mm: Add the mseal tests",
    (
        Patch("selftest mm/mseal memory sealing", """
Test mseal() on mappings of every kind, and that sealed mappings refuse
mprotect, munmap, mremap, mmap over them and madvise(MADV_DONTNEED).
""", add=("tools/testing/selftests/mm/mseal_test.c", "tools/testing/selftests/mm/mseal_helpers.h"), cuts=(
            Cut("tools/testing/selftests/mm/Makefile", r"^TEST_GEN_FILES \+= mseal_test$"),
            Cut("tools/testing/selftests/mm/.gitignore", r"^mseal_test$"),
        )),
        Patch("selftest mm/mseal read-only elf memory segment", """
Check that the read-only segments of an ELF binary can be sealed.
""", add=("tools/testing/selftests/mm/seal_elf.c",), cuts=(
            Cut("tools/testing/selftests/mm/Makefile", r"^TEST_GEN_FILES \+= seal_elf$"),
            Cut("tools/testing/selftests/mm/.gitignore", r"^seal_elf$"),
        )),
    ),
)

MSEAL_DOC = Feature(
    "doc-mseal", "a Documentation page in an existing toctree",
    "mseal: Add documentation",
    (
        Patch("mseal: add documentation", """
Describe mseal(): what sealing a mapping prevents, who should use it, and
what it does not protect against.
""", add=("Documentation/userspace-api/mseal.rst",), cuts=(
            Cut("Documentation/userspace-api/index.rst", r"^   mseal$"),
        )),
    ),
)

QAIC_DOCS = Feature(
    "doc-accel-qaic", "a new Documentation directory with its own index",
    "accel/qaic: Add documentation for the Qualcomm Cloud AI driver",
    (
        Patch("accel/qaic: Add documentation for AIC100 accelerator driver", """
Document the AIC100 hardware and the qaic driver's uAPI in a new directory
under Documentation/accel, linked from the accel index.
""", add=("Documentation/accel/qaic/index.rst", "Documentation/accel/qaic/aic100.rst", "Documentation/accel/qaic/qaic.rst"),
              cuts=(Cut("Documentation/accel/index.rst", r"^   qaic/index$"),)),
        Patch("accel/qaic: Add the AIC080 documentation", """
The AIC080 is a smaller AIC100: document what differs.
""", add=("Documentation/accel/qaic/aic080.rst",), cuts=(Cut("Documentation/accel/qaic/index.rst", r"^   aic080$"),)),
    ),
)

USERCOPY_KUNIT = Feature(
    "kunit-usercopy", "a KUnit suite with its Kconfig entry, Makefile line and MAINTAINERS line",
    "usercopy: Convert test_user_copy to KUnit test",
    (
        Patch("usercopy: Convert test_user_copy to KUnit test", """
Test copy_to_user(), copy_from_user(), get_user() and put_user() across the
user/kernel boundary as a KUnit suite, so that it runs with kunit.py and in
CI like the other hardening tests.
""", add=("lib/usercopy_kunit.c",), cuts=(
            Cut("lib/Kconfig.debug", r"^config USERCOPY_KUNIT_TEST$", (r"^config USERCOPY_KUNIT_TEST$", r"^$")),
            Cut("lib/Makefile", r"CONFIG_USERCOPY_KUNIT_TEST"),
            Cut(MAINTAINERS, r"^F:\tlib/usercopy_kunit\.c$"),
        )),
    ),
)

DMAPOOL_TEST = Feature(
    "mm-dmapool-test", "a test module (not KUnit) with its Kconfig entry and Makefile line",
    "dmapool: Add a test module",
    (
        Patch("dmapool: add alloc/free performance test", """
Add a module that allocates and frees many dma_pool blocks of several sizes
and prints how long it takes, to measure changes to dma_pool_alloc/free.
""", add=("mm/dmapool_test.c",), cuts=(
            Cut("mm/Kconfig", r"^config DMAPOOL_TEST$", (r"^config DMAPOOL_TEST$", r"^$")),
            Cut("mm/Makefile", r"CONFIG_DMAPOOL_TEST"),
        )),
    ),
)

FEATURES: tuple[Feature, ...] = (
    LOONGARCH_VDSO, POWERPC_VDSO, S390_VDSO_FEATURE, CHIPCAP2, TH1520_CLK, NTSYNC, FCHMODAT2, URETPROBE,
    DT_SELFTEST, MSEAL_SELFTESTS, MSEAL_DOC, QAIC_DOCS, USERCOPY_KUNIT, DMAPOOL_TEST,
)
