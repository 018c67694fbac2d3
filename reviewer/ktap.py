"""Parse KTAP / TAP 13 output (kselftest runner and the tests it nests) into results.

Nesting comes two ways: KTAP indents a subtest's lines by four spaces; the kselftest
runner prefixes each test's own output with "# ". Malformed input never raises: it is
recorded in KtapLog.problems (a missing plan, a truncated log, a line that is not KTAP).
Format: Documentation/dev-tools/ktap.rst in the kernel tree.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


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


_VERSION = re.compile(r"^(K?TAP) version (\d+)\s*$")
_PLAN = re.compile(r"^1\.\.(\d+)\b")
_RESULT = re.compile(r"^(not ok|ok)\b\s*(\d+)?\s*(?:-\s*)?([^#]*?)\s*(?:#\s*(.*))?$")
_DIRECTIVES = {"SKIP": Result.SKIP, "TODO": Result.TODO, "XFAIL": Result.XFAIL,
               "TIMEOUT": Result.TIMEOUT, "ERROR": Result.ERROR}


@dataclass(frozen=True)
class _Tok:
    depth: int
    text: str  # the line without its nesting prefixes
    lineno: int


def parse(text: str) -> KtapLog:
    toks = [_token(raw.rstrip("\r"), i) for i, raw in enumerate(text.splitlines(), 1)]
    return _level(toks, 0)


def _is_tap(text: str) -> bool:
    return bool(_VERSION.match(text) or _PLAN.match(text) or _RESULT.match(text) or text.startswith(("# ", "    ")))


def _token(raw: str, lineno: int) -> _Tok:
    depth, text = 0, raw
    while True:
        if text.startswith("    "):
            text = text[4:]
        elif text.startswith("# ") and _is_tap(text[2:]):
            text = text[2:]
        else:
            return _Tok(depth, text, lineno)
        depth += 1


def _level(toks: list[_Tok], depth: int) -> KtapLog:
    version: str | None = None
    plan: int | None = None
    tests: list[TestCase] = []
    problems: list[str] = []
    nested: list[_Tok] = []
    diags: list[str] = []
    for tok in toks:
        if tok.depth > depth:
            nested.append(tok)
            continue
        text = tok.text
        if (m := _VERSION.match(text)) and version is None and not tests:
            version = f"{m.group(1)} {m.group(2)}"
        elif (m := _PLAN.match(text)) and plan is None:
            plan = int(m.group(1))
        elif m := _RESULT.match(text):
            sub = _level(nested, depth + 1) if nested else None
            tests.append(_case(m, len(tests) + 1, sub, diags))
            problems += [f"in test {tests[-1].number}: {p}" for p in (sub.problems if sub else ())]
            nested, diags = [], []
        elif text.startswith("Bail out!"):
            problems.append(f"line {tok.lineno}: {text}")
            break
        elif text.startswith("#"):
            diags.append(text.lstrip("# ").rstrip())
        elif text.strip():
            problems.append(f"line {tok.lineno}: not KTAP: {text[:80]}")
    return _close(version, plan, tests, problems, nested)


def _case(m: re.Match[str], position: int, sub: KtapLog | None, diags: list[str]) -> TestCase:
    ok, number, name, directive = m.group(1) == "ok", m.group(2), m.group(3).strip(), (m.group(4) or "").strip()
    word = directive.split(maxsplit=1)[0].upper() if directive else ""
    result = _DIRECTIVES.get(word, Result.PASS if ok else Result.FAIL)
    return TestCase(int(number) if number else position, name, result, directive,
                    sub.tests if sub else (), tuple(diags))


def _close(version: str | None, plan: int | None, tests: list[TestCase], problems: list[str], nested: list[_Tok]) -> KtapLog:
    if nested:
        problems.append("output of a test that never reported a result (truncated log?)")
        tests.append(TestCase(len(tests) + 1, "(no result line)", Result.ERROR, "truncated log"))
    if plan is None and tests:
        problems.append("no plan line (1..N)")
    elif plan is not None and len(tests) < plan:
        problems.append(f"plan 1..{plan} but only {len(tests)} results (truncated log?)")
        tests += [TestCase(n, "(missing)", Result.ERROR, "no result in the log") for n in range(len(tests) + 1, plan + 1)]
    elif plan is not None and len(tests) > plan:
        problems.append(f"plan 1..{plan} but {len(tests)} results")
    return KtapLog(version, plan, tuple(tests), tuple(problems))
