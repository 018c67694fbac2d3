"""Damaged mail is read or refused in one line, never an internal error (exit 70).

Over 500 mails made from the fixtures by tests/fuzz/corpus.py (truncated headers, broken
Message-IDs, reference cycles, absurd headers, bad dates, charsets with NUL bytes, broken
MIME, CR line ends, byte flips, ...) are reviewed in-process, with every report the CLI can
build; a handful covering every kind of damage go through the real `review` command too.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from tests.fuzz import corpus, harness
from tests.helpers import review

CASES = corpus.cases()
ALLOWED = {ExitStatus.OK, ExitStatus.FINDINGS, ExitStatus.FETCH}
SAMPLE_SIZE = 20


def _names_input(message: str, case: corpus.Case) -> bool:
    """A one-line error says which input (the file or directory, or stdin) it is about."""
    if case.target == "-":
        return message.startswith(("-:", "stdin"))
    return Path(case.target).name in message


def _failures(cases: list[corpus.Case], root: Path) -> list[str]:
    out = []
    for case in cases:
        where = root / case.name
        where.mkdir()
        got = harness.run(case, where)
        if got.rc not in ALLOWED:
            out.append(f"{case.name} (from {case.seed}): exit {got.rc}: {got.message}")
        elif got.rc == ExitStatus.FETCH and not _names_input(got.message, case):
            out.append(f"{case.name} (from {case.seed}): the error does not name the input: {got.message}")
    return out


@pytest.mark.parametrize("kind", list(corpus.MUTATIONS))
def test_damaged_mail_is_read_or_refused(kind: str, tmp_path: Path) -> None:
    cases = [c for c in CASES if c.kind == kind]
    failures = _failures(cases, tmp_path)
    assert not failures, f"{len(failures)} of {len(cases)} {kind} mails:\n" + "\n".join(failures)


def test_corpus_is_large_varied_and_the_same_every_run() -> None:
    assert len(CASES) >= 500
    per_kind = Counter(c.kind for c in CASES)
    assert set(per_kind) == set(corpus.MUTATIONS) and min(per_kind.values()) >= 6, per_kind
    assert len({c.seed for c in CASES}) >= 30  # drawn from most fixtures, not a few
    assert {Path(c.target).suffix or ("-" if c.target == "-" else "dir") for c in CASES} == {".mbox", ".eml", "-", "dir"}
    assert _digest(corpus.cases()) == _digest(CASES)
    # Every case is damaged: none is a seed as it was.
    seeds = {p.read_bytes() for p in corpus.seeds()}
    assert not [c.name for c in CASES if c.kind != "line-ends" and set(c.files.values()) & seeds]


def _digest(cases: list[corpus.Case]) -> str:
    h = hashlib.sha256()
    for c in cases:
        h.update(c.name.encode() + c.target.encode() + (c.stdin or b""))
        for rel, data in sorted(c.files.items()):
            h.update(rel.encode() + data)
    return h.hexdigest()


def _sample() -> list[corpus.Case]:
    """SAMPLE_SIZE cases: one of every family of damage, then more of the kinds not yet taken."""
    by_kind: dict[str, list[corpus.Case]] = {}
    for c in CASES:
        by_kind.setdefault(c.kind, []).append(c)
    picked = [by_kind[kinds[0]][0] for kinds in corpus.FAMILIES.values()]
    rest = [k for k in corpus.MUTATIONS if k not in {c.kind for c in picked}]
    picked += [by_kind[k][1] for k in rest[: SAMPLE_SIZE - len(picked)]]
    return picked


FORMATS = [(), ("--format", "json"), ("--format", "json", "--reply", "reply.eml")]


@pytest.mark.slow
def test_the_real_command_agrees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sample through `review` in a subprocess: the in-process exit, no traceback, and for exit 4
    the one-line error naming the input."""
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")  # --reply needs a sender
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.email")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "fuzz@example.org")
    sample = _sample()
    assert len(sample) == SAMPLE_SIZE and {c.kind for c in sample} >= {ks[0] for ks in corpus.FAMILIES.values()}
    codes = Counter()
    for n, case in enumerate(sample):
        root = tmp_path / case.name
        (root / "in").mkdir(parents=True)
        expected = harness.run(case, root / "in")
        target = "-" if case.target == "-" else root / "in" / case.target
        result = review(target, *FORMATS[n % len(FORMATS)], cwd=root, stdin=case.stdin or b"", tmp=root / "tmp")
        assert "Traceback" not in result.stdout + result.stderr, (case.name, result.stderr)
        assert result.rc == expected.rc, (case.name, result.rc, expected, result.stderr)
        if result.rc == ExitStatus.FETCH:
            result.assert_one_line_error(ExitStatus.FETCH, "" if case.target == "-" else str(target))
            assert _names_input(result.stderr.removeprefix("review: error: "), case), result.stderr
        codes[result.rc] += 1
    assert codes[ExitStatus.FETCH] and codes[ExitStatus.OK] + codes[ExitStatus.FINDINGS], codes
