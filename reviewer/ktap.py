"""Parse KTAP / TAP 13 output (KUnit, the kselftest runner, kselftest_harness) into results.

Format: Documentation/dev-tools/ktap.rst. A subtest's lines sit one level deeper than its
parent's: two spaces in the spec, four in KUnit today, a tab in older KUnit, and "# " where
the kselftest runner prefixes each program's output. The unit is not fixed: a line's depth is
read from its own prefix, relative to the block around it, and the structure (version line,
"# Subtest:" header, plan, result line) decides where a block starts and ends, as the kernel's
tools/testing/kunit/kunit_parser.py does. Other lines (kernel messages, a program's printf,
kselftest_harness's "#  RUN" / "#            OK  name" progress lines) never change a result.
Malformed input never raises: it is recorded in KtapLog.problems.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum, StrEnum


class Result(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    XFAIL = "xfail"
    TODO = "todo"
    TIMEOUT = "timeout"
    ERROR = "error"


@dataclass(frozen=True)
class TestCase:
    number: int
    name: str
    result: Result
    reason: str = ""  # the directive's text: "# SKIP no vDSO", "# exit=1"
    subtests: tuple[TestCase, ...] = ()
    diagnostics: tuple[str, ...] = ()


@dataclass(frozen=True)
class KtapLog:
    version: str | None
    plan: int | None
    tests: tuple[TestCase, ...]
    problems: tuple[str, ...] = ()

    def counts(self) -> dict[Result, int]:
        out = dict.fromkeys(Result, 0)
        for t in self.tests:
            out[t.result] += 1
        return out


# Names of the tests the parser adds itself (always Result.ERROR).
MISSING = "(missing)"  # planned, but the log has no result for it
NO_RESULT = "(no result line)"  # printed subtests, then never its own result, and had no "# Subtest:" name
CRASHED = "no result line: crashed or truncated log"  # the reason of a test that never reported its result

_VERSION = re.compile(r"^(K?TAP) version (\d+)$")
_HEADER = re.compile(r"^# Subtest: (.*)$")
_PLAN = re.compile(r"^1\.\.(\d+)\b")
_RESULT = re.compile(r"^(not ok|ok)(?:\s+(\d+))?(?:\s+-)?(?:\s+([^#]*?))?\s*(?:#\s*(.*))?$")
_BAIL = re.compile(r"^Bail out!")
# GNU make's own lines between the documents of a multi-target `make run_tests`.
_MAKE = re.compile(r"^make(?:\[\d+\])?: (?:Entering|Leaving) directory ")
_DIRECTIVES = {"SKIP": Result.SKIP, "TODO": Result.TODO, "XFAIL": Result.XFAIL,
               "TIMEOUT": Result.TIMEOUT, "ERROR": Result.ERROR}


class _Kind(Enum):
    VERSION = "version"
    HEADER = "header"
    PLAN = "plan"
    RESULT = "result"
    BAIL = "bail"
    DIAG = "diagnostic"  # "# ..." at any depth
    OTHER = "unknown"  # an "unknown line" (ktap.rst): allowed, but not KTAP
    QUIET = "quiet"  # blank, or make's directory lines


_STRUCTURE = ((_Kind.VERSION, _VERSION), (_Kind.HEADER, _HEADER), (_Kind.PLAN, _PLAN),
              (_Kind.RESULT, _RESULT), (_Kind.BAIL, _BAIL))


@dataclass(frozen=True)
class _Line:
    lineno: int
    kind: _Kind
    prefix: str  # what nests a structural line: "", "  ", "\t", "# ", "#     "...
    body: str  # the line without that prefix
    match: re.Match[str] | None = None


def parse(text: str) -> KtapLog:
    """Every document in TEXT (a multi-target `make run_tests` prints one per target), as one log."""
    return _parse(list(enumerate(text.splitlines(), 1)))


def _parse(lines: list[tuple[int, str]]) -> KtapLog:
    parser = _Parser([_lex(raw, i) for i, raw in lines])
    docs: list[_Block] = []
    while parser.more():
        docs.append(parser.block(parser.next_prefix(), root=True))
    return _merge(docs)


def _lex(raw: str, lineno: int) -> _Line:
    """What one line is, and at which depth: "# " layers and indentation are peeled off only
    while what follows can still be a KTAP line, so "#            OK  name" stays a diagnostic."""
    line, pos = raw.rstrip(), 0
    while True:
        pos = len(line) - len(line[pos:].lstrip(" \t"))
        rest = line[pos:]
        for kind, rx in _STRUCTURE:
            m = rx.match(rest)
            # Nested, a result needs its number (ktap.rst): under the runner, "# ok all good" is a message.
            if m and not (kind is _Kind.RESULT and pos and m.group(2) is None):
                return _Line(lineno, kind, line[:pos], rest, m)
        if not rest.startswith("# "):
            break
        pos += 2
    stripped = line.strip()
    if not stripped or _MAKE.match(stripped):
        return _Line(lineno, _Kind.QUIET, "", line)
    if not stripped.startswith("#"):
        return _Line(lineno, _Kind.OTHER, "", line)
    prefix = _diag_prefix(line)
    return _Line(lineno, _Kind.DIAG, prefix, line[len(prefix):])


def _diag_prefix(line: str) -> str:
    """A diagnostic's depth: its indentation, and each runner "# " that another "#" follows."""
    pos = len(line) - len(line.lstrip(" \t"))
    while line.startswith("# ", pos) and line[pos + 2:].lstrip(" \t").startswith("#"):
        pos = len(line) - len(line[pos + 2:].lstrip(" \t"))
    return line[:pos]


def _compare(prefix: str, level: str) -> int:
    """-1, 0, 1: a line with PREFIX is outside, at, or inside the block whose lines have LEVEL."""
    if prefix == level:
        return 0
    if prefix.startswith(level) or level.startswith(prefix):
        return 1 if len(prefix) > len(level) else -1
    a, b = len(prefix.expandtabs(8)), len(level.expandtabs(8))  # unrelated (tabs vs spaces): by width
    return (a > b) - (a < b)


@dataclass
class _Block:
    """One KTAP document or nested subtest block, while it is being read."""
    prefix: str
    root: bool
    version: str | None = None
    name: str | None = None  # from "# Subtest: NAME"
    plan: int | None = None
    tests: list[TestCase] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    bailed: bool = False
    notes: list[tuple[str, str]] = field(default_factory=list)  # (prefix, text) of the diagnostics since the last result

    def started(self, pending: _Block | None) -> bool:
        return self.version is not None or self.plan is not None or bool(self.tests) or pending is not None

    def ends_at(self, ln: _Line, pending: _Block | None) -> bool:
        """A version line (or, nested, a second "# Subtest:") at this block's own depth starts the next
        block: this one's result line is missing, or (at the top) it is the next document."""
        if ln.kind is _Kind.VERSION:
            return self.started(pending)
        if ln.kind is _Kind.HEADER and not self.root:
            return self.name is not None or bool(self.tests) or pending is not None
        return False

    def take(self, ln: _Line) -> None:
        assert ln.match is not None
        if ln.kind is _Kind.VERSION:
            self.version = f"{ln.match.group(1)} {ln.match.group(2)}"
        elif ln.kind is _Kind.HEADER and self.name is None and not self.tests:
            self.name = ln.match.group(1).strip()
        elif ln.kind is _Kind.HEADER:
            self.notes.append((ln.prefix, ln.body.lstrip("# ")))
        elif ln.kind is _Kind.PLAN and self.plan is None:
            self.plan = int(ln.match.group(1))  # TAP also allows the plan after the results
        elif ln.kind is _Kind.PLAN:
            self.problems.append(f"line {ln.lineno}: a second plan: {ln.body}")
        elif ln.kind is _Kind.BAIL:
            self.problems.append(f"line {ln.lineno}: {ln.body}")
            self.bailed = True

    def result(self, ln: _Line, child: _Block | None) -> None:
        assert ln.match is not None
        ok, number, name, directive = ln.match.group(1) == "ok", ln.match.group(2), ln.match.group(3), ln.match.group(4)
        position, name, directive = len(self.tests) + 1, (name or "").strip(), (directive or "").strip()
        if number and int(number) != position:
            self.problems.append(f"line {ln.lineno}: test number {number}, expected {position}")
        word = directive.split(maxsplit=1)[0].upper() if directive else ""
        result = _DIRECTIVES.get(word, Result.PASS if ok else Result.FAIL)
        test = TestCase(int(number) if number else position, name, result, directive,
                        tuple(child.tests) if child else (), tuple(text for _, text in self.notes))
        self.notes = []
        if child:
            self.adopt(child, test)
            if child.name is not None and child.name != name:
                self.problems.append(f"line {ln.lineno}: result {name!r} ends subtest {child.name!r}")
        self.tests.append(test)

    def crashed(self, child: _Block) -> None:
        test = TestCase(len(self.tests) + 1, child.name or NO_RESULT, Result.ERROR, CRASHED, tuple(child.tests))
        self.problems.append(f"test {test.number} {test.name}: output of a test that never reported a result (crashed or truncated log?)")
        self.adopt(child, test)
        self.tests.append(test)

    def adopt(self, child: _Block, test: TestCase) -> None:
        self.problems += [f"in test {test.number} {test.name}: {p}" for p in child.problems]
        if not test.subtests and test.result is Result.PASS:
            self.problems.append(f"test {test.number} {test.name}: passed without running its subtests")

    def close(self) -> _Block:
        """The block is read: check its plan, and stand in for the results it does not have."""
        have = len(self.tests)
        if self.root and self.plan is None and self.tests:
            self.problems.append("no plan line (1..N)")
        elif self.plan is not None and have < self.plan:
            self.problems.append(f"plan 1..{self.plan} but only {have} results (truncated log?)")
            self.tests += [TestCase(n, MISSING, Result.ERROR, "no result in the log") for n in range(have + 1, self.plan + 1)]
        elif self.plan is not None and have > self.plan:
            self.problems.append(f"plan 1..{self.plan} but {have} results")
        return self


class _Parser:
    def __init__(self, lines: list[_Line]) -> None:
        self.lines, self.at = lines, 0

    def more(self) -> bool:
        return self.at < len(self.lines)

    def next_prefix(self) -> str:
        """A document's own depth is its first KTAP line's: a leading space is not nesting."""
        return next((ln.prefix for ln in self.lines[self.at:] if ln.match), "")

    def block(self, prefix: str, *, root: bool) -> _Block:
        b: _Block = _Block(prefix, root)
        child: _Block | None = None
        while self.more():
            ln = self.lines[self.at]
            if ln.match is None:
                self._unknown(b, ln)
                continue
            rel = max(0, _compare(ln.prefix, prefix)) if root else _compare(ln.prefix, prefix)
            if rel < 0 or (rel == 0 and b.ends_at(ln, child)):
                break
            if rel > 0 and not b.bailed:
                if child:
                    b.crashed(child)
                child = self._nested(ln.prefix)
                # KUnit prints a suite's summary ("# suite: pass:4 ...") at its parent's depth, before its result.
                b.notes += [(p, text) for p, text in child.notes if _compare(p, child.prefix) < 0]
                continue
            if not b.bailed and ln.kind is _Kind.RESULT:
                b.result(ln, child)
                child = None
            elif not b.bailed:
                b.take(ln)
            self.at += 1
        if child:
            b.crashed(child)
        return b.close()

    def _nested(self, prefix: str) -> _Block:
        start = self.at
        child = self.block(prefix, root=False)
        if self.at == start:  # cannot happen (a block always takes its first line); never loop on it
            self.at += 1
        return child

    def _unknown(self, b: _Block, ln: _Line) -> None:
        self.at += 1
        if b.bailed or ln.kind is _Kind.QUIET:
            return
        if ln.kind is _Kind.DIAG:
            b.notes.append((ln.prefix, ln.body.lstrip("# \t")))
        else:
            b.problems.append(f"line {ln.lineno}: not KTAP: {ln.body.strip()[:80]}")


def _merge(docs: list[_Block]) -> KtapLog:
    """One log: the first version, the sum of the plans (None if one is missing), every test."""
    if not docs:
        return KtapLog(None, None, ())
    plans = [d.plan for d in docs]
    plan = None if None in plans else sum(p or 0 for p in plans)
    many = len(docs) > 1  # then a problem says which document it is in
    problems = [f"document {i}: {p}" if many else p for i, d in enumerate(docs, 1) for p in d.problems]
    return KtapLog(docs[0].version, plan, tuple(t for d in docs for t in d.tests), tuple(problems))


# A kernel console: printk's time and caller id ("[    0.123456][    T1] "), then the line.
_STAMP = re.compile(r"^\[\s*\d+\.\d+\](?:\[\s*[A-Z]?\d+\])?")
_ANY_VERSION = re.compile(r"K?TAP version \d+$")
# Nothing after these is KTAP (kunit_parser.py stops at them too).
_CONSOLE_END = re.compile(r"List of all partitions:|Kernel panic - not syncing|reboot: (?:System halted|Restarting system|Power down)")


def from_console(text: str) -> KtapLog | None:
    """The KTAP on a kernel console (KUnit at boot), None if there is none: from the first version
    line, without the console prefix that line has, and without the kernel's other lines."""
    lines = text.splitlines()
    found = next(((i, m) for i, ln in enumerate(lines) if (m := _ANY_VERSION.search(ln.rstrip()))), None)
    if found is None:
        return None
    start, version = found
    # What stands before the version line stands before every line; its own indentation or "# " is nesting.
    prefix = lines[start][: version.start()].rstrip("# \t")
    kept: list[tuple[int, str]] = []  # with their line numbers on the console, for the problems
    for lineno, raw in enumerate(lines[start:], start + 1):
        line = _unprefix(raw.rstrip(), prefix)
        if _CONSOLE_END.search(line):
            break
        if _lex(line, lineno).kind is not _Kind.OTHER:
            kept.append((lineno, line))
    return _parse(kept)


def _unprefix(line: str, prefix: str) -> str:
    if line.startswith(prefix):
        return line[len(prefix):]
    stamp = _STAMP.match(line)
    return line[stamp.end():] if stamp and _STAMP.match(prefix) else line
