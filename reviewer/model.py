"""The data that crosses module boundaries: frozen dataclasses, no b4 or unidiff objects."""
from __future__ import annotations

import datetime as dt
import re
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from reviewer import verdict as verdicts
from reviewer.hostload import HostLoad
from reviewer.ktap import Result, TestCase
from reviewer.verdict import Trend, Verdict, judge


class Level(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Change(StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"
    COPIED = "copied"


# --slower-than's default: a benchmark this many times slower on the patched tree is reported.
SLOWER_THAN = 1.25
# ... and where both sides ran in kernels emulated by TCG, whose timings follow QEMU's translation of each
# kernel build rather than the hardware's: flavours doing the same work on both sides were measured 1.25x
# and 1.32x apart there, with the runs' ranges apart (a ppc64le guest, bench-single, 2 runs a side).
SLOWER_THAN_TCG = 1.5


def slower_than(asked: float | None, accel: str) -> float:
    """The threshold benchmarks are judged against: ASKED (--slower-than), else the default for where they
    ran (ACCEL: tcg, kvm, or "" for this machine's own kernel)."""
    if asked is not None:
        return asked
    return SLOWER_THAN_TCG if accel == "tcg" else SLOWER_THAN


class StageStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


# email.utils' specials: a display name with one of them must be quoted to stay one name.
_SPECIALS = re.compile(r'[][\\()<>@,:;".]')


def address(name: str, addr: str) -> str:
    """NAME <ADDR> for a header, written as email.utils.formataddr writes it (a name with a special in it is
    quoted, so a series' own text can add no address of its own: `"Mallory <m@evil.example>, x" <ann@example.org>`
    is Ann's address only) but never RFC 2047-encoded: a non-ASCII name stays as it is, for the message's utf-8
    policy to encode when it is sent."""
    if not name:
        return addr
    if _SPECIALS.search(name):
        name = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{name} <{addr}>"


@dataclass(frozen=True)
class Person:
    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>" if self.name else self.email


@dataclass(frozen=True)
class Trailer:
    name: str
    value: str
    source: str  # "patch" (in the commit message) or "followup" (a reply on the list)
    msgid: str | None = None  # the reply that carried it, for follow-ups
    comment: str = ""  # `# 6.1+` after the value, or a `[ ... ]` line below it in the trailer block


@dataclass(frozen=True)
class Line:
    kind: str  # "+", "-" or " "
    text: str
    old_no: int | None
    new_no: int | None


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str
    lines: tuple[Line, ...]

    @property
    def header(self) -> str:
        tail = f" {self.section}" if self.section else ""
        return f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@{tail}"


@dataclass(frozen=True)
class FileChange:
    path: str  # the path after the patch (the old path for a deletion)
    old_path: str | None  # the path before the patch (None for an added file)
    change: Change
    old_mode: str | None = None
    new_mode: str | None = None
    binary: bool = False
    added: int = 0
    removed: int = 0
    hunks: tuple[Hunk, ...] = ()

    @property
    def is_symlink(self) -> bool:
        return self.new_mode == "120000" or (self.new_mode is None and self.old_mode == "120000")

    @property
    def mode_changed(self) -> bool:
        return self.old_mode is not None and self.new_mode is not None and self.old_mode != self.new_mode

    def added_lines(self) -> list[Line]:
        return [ln for h in self.hunks for ln in h.lines if ln.kind == "+"]

    def removed_lines(self) -> list[Line]:
        return [ln for h in self.hunks for ln in h.lines if ln.kind == "-"]


@dataclass(frozen=True)
class Patch:
    index: int  # 1-based position in the series
    total: int
    subject: str  # without the [PATCH vN M/N] prefix
    msgid: str
    author: Person
    date: dt.datetime | None
    message: str  # the commit message, above the `---`
    diff: str  # the diff text, from the first `diff --git`
    trailers: tuple[Trailer, ...] = ()
    files: tuple[FileChange, ...] = ()
    encoding_note: str | None = None
    to: tuple[str, ...] = ()  # the mail's To: addresses, for a reply-all
    cc: tuple[str, ...] = ()  # the mail's Cc: addresses
    notes: str = ""  # below the `---` and above the diff, diffstat left out: often the changelog
    attestation: tuple[str, ...] = ()  # "signed ed25519/a@b", "badsig ...", "nokey ..." (patatt; DKIM via b4)
    mail_subject: str = ""  # the Subject: as sent, prefixes and all ("[RFC PATCH v2 3/5] ...")
    references: tuple[str, ...] = ()  # the mail's References (and In-Reply-To), oldest first
    sender: Person | None = None  # the mail's From: when an in-body From: names another author
    carried_from: int | None = None  # a partial reroll: the revision this patch was taken from

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    @property
    def paths(self) -> set[str]:
        """Every path this patch changes, renames' and copies' sources too."""
        return {p for f in self.files for p in (f.path, f.old_path) if p}


@dataclass(frozen=True)
class Cover:
    subject: str
    msgid: str
    author: Person
    body: str
    trailers: tuple[Trailer, ...] = ()
    to: tuple[str, ...] = ()  # the mail's To: addresses, for a reply-all
    cc: tuple[str, ...] = ()  # the mail's Cc: addresses
    mail_subject: str = ""  # the Subject: as sent
    references: tuple[str, ...] = ()  # the mail's References, oldest first


@dataclass(frozen=True)
class Posting:
    """One sending of a revision: its cover letter (or first patch) and the patches below it."""

    msgid: str
    subject: str  # as sent, prefixes and all
    sender: Person
    date: dt.datetime | None
    revision: int
    total: int
    patches: tuple[int, ...]  # the patch numbers it holds
    reviewed: bool  # this is the posting the review is of
    replaced: tuple[str, ...] = ()  # msgids of earlier copies of a patch that a later copy in it replaced


@dataclass(frozen=True)
class FollowupPatch:
    """A patch sent in reply to one of the series' patches (a fixup): not part of the series."""

    msgid: str
    subject: str  # as sent
    author: Person
    date: dt.datetime | None
    of_patch: int  # the patch it answers (0: the cover letter)


@dataclass(frozen=True)
class PullRequest:
    url: str
    ref: str  # the branch or tag to pull ("HEAD" when the mail names none)
    base: str | None = None  # "The following changes since commit ..."
    tip: str | None = None  # "for you to fetch changes up to ..."


@dataclass(frozen=True)
class DroppedTrailer:
    """A reply's trailer b4 did not apply: a person trailer whose address is not the reply's sender's."""

    name: str
    value: str
    sender: Person


@dataclass(frozen=True)
class Series:
    subject: str
    version: int
    msgid: str  # the cover letter's, else the first patch's
    author: Person
    date: dt.datetime | None
    total: int
    patches: tuple[Patch, ...]
    cover: Cover | None = None
    missing: tuple[int, ...] = ()
    base_commit: str | None = None
    change_id: str | None = None
    prerequisites: tuple[str, ...] = ()
    revisions: tuple[int, ...] = ()  # every revision seen in the input
    source: str = ""  # what the user named: a path, a range, a message-id
    postings: tuple[Posting, ...] = ()  # every posting in the input, the reviewed one marked
    followup_patches: tuple[FollowupPatch, ...] = ()
    pull_request: PullRequest | None = None
    dropped_trailers: tuple[DroppedTrailer, ...] = ()
    rfc: bool = False  # sent as a request for comments: [RFC PATCH ...], [PATCH RFC ...]

    @property
    def reroll_from(self) -> int | None:
        """A partial reroll: the revision the patches not resent were carried over from."""
        return next((p.carried_from for p in self.patches if p.carried_from is not None), None)

    @property
    def added(self) -> int:
        return sum(p.added for p in self.patches)

    @property
    def removed(self) -> int:
        return sum(p.removed for p in self.patches)

    @property
    def touched(self) -> list[str]:
        """Every path the patches change, renames' and copies' sources too, sorted."""
        return sorted({p for patch in self.patches for p in patch.paths})


@dataclass(frozen=True)
class Finding:
    rule: str
    level: Level
    message: str
    patch: int | None = None  # 1-based patch index, None for the whole series
    path: str | None = None
    line: int | None = None
    hint: str | None = None
    quote: tuple[str, ...] = ()  # the hunk lines the finding is about
    sources: tuple[str, ...] = ()  # when several rules reported this fact: all of them, `rule` first (reviewer/checks/merge.py)

    @classmethod
    def on(cls, patch: Patch, message: str, **kw: object) -> Finding:
        """A finding about PATCH; rule and level are stamped by the engine."""
        return cls(rule="", level=Level.ERROR, message=message, patch=patch.index, **kw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class StageResult:
    name: str
    status: StageStatus
    seconds: float
    detail: str = ""


@dataclass(frozen=True)
class PatchApply:
    index: int
    status: str  # "applied", "applied (3-way merge)", "failed"
    detail: str = ""


@dataclass(frozen=True)
class ApplyResult:
    base: str
    base_source: str  # trailer | head | option
    patches: tuple[PatchApply, ...] = ()

    @property
    def failed(self) -> PatchApply | None:
        return next((p for p in self.patches if p.status == "failed"), None)


@dataclass(frozen=True)
class ChosenTest:
    test: str  # "vDSO" (the whole directory) or "vDSO:vdso_test_getrandom"
    why: tuple[str, ...]


@dataclass(frozen=True)
class TestRun:
    __test__ = False  # not a pytest class
    test: str  # "vDSO:vdso_test_getrandom"
    tree: str  # base | patched
    env: str  # plain | timens ("-" for a build)
    result: Result
    seconds: float
    reason: str = ""
    log: str = ""
    subtests: tuple[TestCase, ...] = ()
    where: str = ""  # the kernel it ran on: "host 6.1.0-28-amd64 x86_64", "booted c4bac1c88685 x86_64 tcg"


@dataclass(frozen=True)
class BenchResult:
    name: str
    env: str
    metric: str
    unit: str
    base: float | None
    patched: float | None
    ratio: float | None  # patched / base: above 1 is slower when lower is better
    runs: int
    spread: float  # the largest relative (max - min) / median on either side
    note: str = ""
    base_samples: tuple[float, ...] = ()
    patched_samples: tuple[float, ...] = ()
    # Whether the difference is larger than the noise (verdict.py); None until judged against a threshold.
    verdict: Verdict | None = None
    where: str = ""  # the kernels base and patched ran on (TestRun.where; both sides' when they differ)
    stalled: str = ""  # the runs of this row that stalled and were measured again (selftests/bench.stalls())
    load: HostLoad | None = None  # the machine while the runs ran (hostload.py): a busy host gives no verdict

    @classmethod
    def of(cls, name: str, env: str, metric: str, unit: str, base: Sequence[float], patched: Sequence[float],
           runs: int, note: str = "", limit: float | None = None, load: HostLoad | None = None) -> BenchResult:
        """The medians of BASE's and PATCHED's samples, their ratio and spread (selftest benchmarks and boot timings alike);
        judged against LIMIT (--slower-than) when it is given. LOAD: the machine while they ran."""
        mb = statistics.median(base) if base else None
        mp = statistics.median(patched) if patched else None
        ratio = mp / mb if mb and mp is not None else None
        result = cls(name, env, metric, unit, mb, mp, ratio, runs, max(_spread(base), _spread(patched)), note, tuple(base), tuple(patched),
                     load=load)
        return result.judged(limit) if limit is not None else result

    def judged(self, limit: float) -> BenchResult:
        """This result with its verdict against LIMIT, the ratio above which the patched tree counts as slower (and only
        if the machine was not busy while the runs ran)."""
        return replace(self, verdict=judge(self.base_samples, self.patched_samples, limit, self.load))

    def figures(self) -> dict[str, object]:
        """Each run's figure, in order, and what the verdict was judged from (the JSON report's rows: docs/json-schema.md)."""
        return {"base_runs": list(self.base_samples), "patched_runs": list(self.patched_samples), **verdicts.document(self.verdict)}

    @property
    def slower(self) -> bool:
        """Judged slower: the ratio exceeds the threshold and the difference is larger than the noise."""
        return self.verdict is not None and self.verdict.outcome is Trend.SLOWER


def _spread(values: Sequence[float]) -> float:
    mid = statistics.median(values) if values else 0.0
    return (max(values) - min(values)) / mid if len(values) > 1 and mid else 0.0


@dataclass(frozen=True)
class BuiltStep:
    """One step of a build target: the base (patch 0) or a patch applied, built or not, and why."""

    patch: int
    status: str  # built | failed | skipped | timeout
    seconds: float = 0.0
    goals: tuple[str, ...] = ()  # what make was asked for
    detail: str = ""
    warnings: int = 0  # the compiler's warnings in this step (W=1), new or not
    vdso: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (vDSO image, its exported functions as name@@VERSION)

    def document(self) -> dict[str, object]:
        return {"patch": self.patch, "status": self.status, "seconds": round(self.seconds, 3), "goals": list(self.goals),
                "detail": self.detail, "warnings": self.warnings, "vdso": {path: list(syms) for path, syms in self.vdso}}


@dataclass(frozen=True)
class BuiltTarget:
    """What the build stage did for one architecture (`builds` in the JSON report)."""

    target: str  # x86_64, ppc64le, ppc32, loongarch, ...
    toolchain: str  # the make variables: ARCH=..., CROSS_COMPILE=... or LLVM=...
    steps: tuple[BuiltStep, ...] = ()
    config: tuple[str, ...] = ()  # on top of tinyconfig
    problem: str = ""  # why nothing was built

    def document(self) -> dict[str, object]:
        return {"target": self.target, "toolchain": self.toolchain, "config": list(self.config), "problem": self.problem,
                "steps": [st.document() for st in self.steps]}


@dataclass(frozen=True, eq=False)
class BootResult(Mapping[str, object]):
    """What the boot stage built and booted: the accelerator, the kernel config fragment per environment
    (on top of tinyconfig), the console log per `tree/env`, and the run's log directory that holds them.

    It also reads as its JSON object (`boot` in docs/json-schema.md: keys accel, config, logs, log_dir;
    the fragments as lists), which is how the JSON report writes it and how it compares to a dict."""

    accel: str
    config: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (env, fragment lines), in the order of the envs
    logs: tuple[tuple[str, str], ...] = ()  # ("base/plain", console log path)
    log_dir: str | None = None  # None when nothing booted (no console log kept)

    def document(self) -> dict[str, object]:
        return {"accel": self.accel, "config": {env: list(lines) for env, lines in self.config},
                "logs": dict(self.logs), "log_dir": self.log_dir}

    def __getitem__(self, key: str) -> object:
        return self.document()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.document())

    def __len__(self) -> int:
        return len(self.document())


@dataclass(frozen=True)
class Review:
    series: Series | None
    findings: tuple[Finding, ...] = ()
    stages: tuple[StageResult, ...] = ()
    apply: ApplyResult | None = None
    chosen: tuple[ChosenTest, ...] = ()
    selftests: tuple[TestRun, ...] = ()
    benchmarks: tuple[BenchResult, ...] = ()
    boot: BootResult | None = None
    builds: tuple[BuiltTarget, ...] = ()
    # --slower-than: the ratio above which a benchmark counts as slower (the reports mark it); not in the JSON document.
    slower_than: float = field(default=SLOWER_THAN, compare=False)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.level is Level.ERROR)
