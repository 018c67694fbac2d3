"""Damaged mail is read or refused in one line, never an internal error (exit 70), never a hang.

Over 1,000 mails made from the fixtures by tests/fuzz/corpus.py and shapes.py (truncated headers,
broken Message-IDs (`Message-Id:@`), reference cycles, absurd and countless headers, bad dates,
charsets with NUL bytes, encoded words, multipart with 8-bit text in every part or a boundary that
never comes, parts nested a thousand deep, CR line ends, byte flips, diff paths with a NUL or a
newline, absurd hunk lines, ...) are reviewed in-process, each within harness.TIMEOUT, with every
report the CLI can build; 70 of them with --tree (the series applied to kernel-mini); a sample
covering every kind of damage goes through the real `review` command too. The counts by exit code
are printed at the end of the run (conftest.py).
"""
from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from reviewer.tree.plainrepo import build_base_repo
from tests.conftest import FIXTURES
from tests.fuzz import corpus, harness
from tests.helpers import review

CASES = corpus.cases()
ALLOWED = {ExitStatus.OK, ExitStatus.FINDINGS, ExitStatus.FETCH}
ALLOWED_WITH_TREE = ALLOWED | {ExitStatus.APPLY}  # a damaged patch may not apply: exit 5, said in one line
SAMPLE_SIZE = 24
COUNTS: Counter[str] = Counter()  # exit code (or "hang") -> cases; printed by conftest.py


@pytest.fixture(scope="module")
def mini_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One git repository of kernel-mini for every --tree case (each review works in a worktree of its own)."""
    dest = tmp_path_factory.mktemp("fuzz-tree") / "linux"
    build_base_repo(FIXTURES / "kernel-mini", dest)
    return dest


def _names_input(message: str, case: corpus.Case) -> bool:
    """A one-line error says which input (the file or directory, or stdin) it is about."""
    if case.target == "-":
        return message.startswith(("-:", "stdin"))
    return Path(case.target).name in message


def _failures(cases: list[corpus.Case], root: Path, tree: Path | None = None) -> list[str]:
    out = []
    for case in cases:
        where = root / case.name
        where.mkdir()
        got = harness.run(case, where, tree)
        COUNTS["hang" if got.rc == harness.HUNG else str(got.rc)] += 1
        if got.rc not in (ALLOWED_WITH_TREE if case.tree else ALLOWED):
            out.append(f"{case.name} (from {case.seed}): exit {got.rc}: {got.message}")
        elif got.rc in (ExitStatus.FETCH, ExitStatus.APPLY) and not case.tree and not _names_input(got.message, case):
            out.append(f"{case.name} (from {case.seed}): the error does not name the input: {got.message}")
    return out


@pytest.mark.parametrize("kind", list(corpus.MUTATIONS))
def test_damaged_mail_is_read_or_refused(kind: str, tmp_path: Path) -> None:
    cases = [c for c in CASES if c.kind == kind and not c.tree]
    failures = _failures(cases, tmp_path)
    assert not failures, f"{len(failures)} of {len(cases)} {kind} mails:\n" + "\n".join(failures)


@pytest.mark.parametrize("kind", corpus.TREE_KINDS)
def test_damaged_mail_reviewed_with_a_tree(kind: str, mini_repo: Path, tmp_path: Path) -> None:
    """The paths and ids of the damaged mail reach git (the base's guess, git am, the listings)."""
    cases = [c for c in CASES if c.kind == kind and c.tree]
    failures = _failures(cases, tmp_path, mini_repo)
    assert not failures, f"{len(failures)} of {len(cases)} {kind} mails with --tree:\n" + "\n".join(failures)


def test_corpus_is_large_varied_and_the_same_every_run() -> None:
    assert len(CASES) >= 1000 and sum(c.tree for c in CASES) >= 60
    per_kind = Counter(c.kind for c in CASES if not c.tree)
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


TREE_SAMPLE = ("diff-path", "msgid-raw")  # through the real command with --tree too


def _sample() -> list[corpus.Case]:
    """SAMPLE_SIZE cases: one of every family of damage, more of the kinds not yet taken, and TREE_SAMPLE's --tree cases."""
    by_kind: dict[str, list[corpus.Case]] = {}
    for c in CASES:
        if not c.tree:
            by_kind.setdefault(c.kind, []).append(c)
    picked = [by_kind[kinds[0]][0] for kinds in corpus.FAMILIES.values()]
    rest = [k for k in corpus.MUTATIONS if k not in {c.kind for c in picked}]
    picked += [by_kind[k][1] for k in rest[: SAMPLE_SIZE - len(TREE_SAMPLE) - len(picked)]]
    return picked + [next(c for c in CASES if c.tree and c.kind == kind) for kind in TREE_SAMPLE]


FORMATS = [(), ("--format", "json"), ("--format", "json", "--reply", "reply.eml")]


@pytest.mark.slow
def test_the_real_command_agrees(mini_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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
        expected = harness.run(case, root / "in", mini_repo)
        target = "-" if case.target == "-" else root / "in" / case.target
        tree = ("--tree", mini_repo) if case.tree else ()
        result = review(target, *tree, *FORMATS[n % len(FORMATS)], cwd=root, stdin=case.stdin or b"", tmp=root / "tmp",
                        timeout=harness.TIMEOUT)
        assert "Traceback" not in result.stdout + result.stderr, (case.name, result.stderr)
        assert result.rc == expected.rc, (case.name, result.rc, expected, result.stderr)
        if result.rc == ExitStatus.FETCH:
            result.assert_one_line_error(ExitStatus.FETCH, "" if case.target == "-" else str(target))
            assert _names_input(result.stderr.removeprefix("review: error: "), case), result.stderr
        result.assert_nothing_left()
        codes[result.rc] += 1
    assert codes[ExitStatus.FETCH] and codes[ExitStatus.OK] + codes[ExitStatus.FINDINGS], codes
