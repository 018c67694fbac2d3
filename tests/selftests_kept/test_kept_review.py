"""Selftest builds kept between reviews (issue 34), end to end: `review --run-tests` on the demo, twice, killed, without the cache.

What ran is read from the host side of the sandbox: a `bwrap` first on PATH notes each sandboxed command and runs
the real one. A `make` of ours on PATH would not do: the sandbox empties /tmp, where the test's directories are.
"""
from __future__ import annotations

import json
import mailbox
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from reviewer.run.leftovers import start_time
from reviewer.selftests import kept
from tests.conftest import SERIES, git
from tests.helpers import Result, review

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
ENV = {"VDSO_BENCH_CALLS": "20000"}
ARGS = ("--run-tests", *(a for k, v in ENV.items() for a in ("--test-env", f"{k}={v}")), "--bench-runs", "0", "--format", "json")
GETTIMEOFDAY = "tools/testing/selftests/vDSO/vdso_test_gettimeofday"


@pytest.fixture
def sandboxed(tmp_path: Path) -> Path:
    """The file where the `bwrap` of the test's PATH (see _path()) notes each sandboxed command, a line each."""
    real = shutil.which("bwrap")
    assert real is not None
    (tmp_path / "bin").mkdir()
    log = tmp_path / "sandboxed.log"
    wrapper = tmp_path / "bin" / "bwrap"
    wrapper.write_text(f"#!{sys.executable} -I\nimport json, os, sys\n"
                       f"with open({str(log)!r}, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
                       f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n")
    wrapper.chmod(0o755)
    return log


def _path(log: Path) -> dict[str, str]:
    return {"PATH": f"{log.parent / 'bin'}{os.pathsep}{os.environ['PATH']}"}


def _ran(log: Path, *, forget: bool = True) -> list[str]:
    """The sandboxed commands (what runs under bwrap, the guard, prlimit and unshare); FORGET: then forget them."""
    lines = log.read_text().split("\n")[:-1] if log.exists() else []  # whole lines: a wrapper may be writing one
    if forget:
        log.unlink(missing_ok=True)
    argvs = [json.loads(ln) for ln in lines]
    return [shlex.join(argv[len(argv) - argv[::-1].index("--"):]) for argv in argvs]


def _builds(ran: list[str]) -> list[str]:
    return [c for c in ran if c.startswith("make ") and "TARGETS=vDSO" in c]


def _review(repo: Path, tmp: Path, log: Path, *extra: str) -> Result:
    return review(DEMO, "--tree", repo, *ARGS, *extra, env=_path(log), tmp=tmp)


def _results(result: Result) -> list[tuple[str, str, str, str]]:
    assert result.rc == ExitStatus.OK, result.stderr
    return [(r["name"], r["tree"], r["env"], r["result"]) for r in result.json()["selftests"]]


def _keys(repo: Path, tmp: Path) -> dict[str, str]:
    """The kept builds' keys of the demo's base and patched trees (the series applied with git am in a clone)."""
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    patches = [m for m in mailbox.mbox(DEMO) if re.match(r"\[PATCH v4 [1-9]/4\]", m["subject"] or "")]
    for i, m in enumerate(patches):
        (tmp / f"{i}.patch").write_bytes(m.as_bytes())
    git(clone, "am", "-q", *(str(tmp / f"{i}.patch") for i in range(len(patches))))
    return {"base": kept.key(kept.tree_of(repo), ["vDSO"], (), ENV), "patched": kept.key(kept.tree_of(clone), ["vDSO"], (), ENV)}


def _stamped() -> list[str]:
    """The entries of the store with their stamp (whole), whatever lookup() says."""
    root = kept.store().root
    return sorted(p.name for p in root.iterdir() if (p / ".complete").exists()) if root.is_dir() else []


def test_a_second_review_builds_nothing_and_tests_the_same(kernel_repo: Path, tmp_path: Path, sandboxed: Path) -> None:
    keys = _keys(kernel_repo, tmp_path)
    first = _review(kernel_repo, tmp_path / "tmp1", sandboxed)
    results = _results(first)
    assert len(results) == 6 and {r[3] for r in results} == {"pass"}
    assert len(_builds(_ran(sandboxed))) == 2  # base and patched
    assert sorted(e.key for e in kept.store().entries()) == sorted(keys.values()) == _stamped()
    second = _review(kernel_repo, tmp_path / "tmp2", sandboxed)
    assert _results(second) == results
    ran = _ran(sandboxed)
    assert len([c for c in ran if c.startswith("./vdso_test_")]) == 6  # the tests ran in the sandbox,
    assert not [c for c in ran if c.startswith("make ")]  # but no build and no run list read
    assert sorted(e.key for e in kept.store().entries()) == sorted(keys.values())
    second.assert_nothing_left()


def _make_under(pid: int) -> list[tuple[int, int]]:
    """The make processes below PID (whose ancestors include it), as (pid, start time)."""
    parents: dict[int, int] = {}
    makes = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
            except OSError:
                continue
            comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
            parents[int(proc.name)] = int(rest[1])
            if comm == "make":
                makes.append((int(proc.name), int(rest[19])))
    return [(p, start) for p, start in makes if _descends(p, pid, parents)]


def _descends(p: int, ancestor: int, parents: dict[int, int]) -> bool:
    while p > 1:
        p = parents.get(p, 0)
        if p == ancestor:
            return True
    return False


def _family(pid: int) -> list[tuple[int, int]]:
    """Every process below PID, as (pid, start time)."""
    parents = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                rest = (proc / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            parents[int(proc.name)] = int(rest[1])
    return [(p, start) for p in parents if _descends(p, pid, parents) and (start := start_time(p)) is not None]


@pytest.mark.parametrize("tree", ["base", "patched"])
def test_a_review_killed_in_the_build_keeps_nothing_of_that_tree(kernel_repo: Path, tmp_path: Path, sandboxed: Path, tree: str) -> None:
    keys = _keys(kernel_repo, tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with (tmp_path / "out").open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "reviewer", str(DEMO), "--tree", str(kernel_repo), *ARGS], stdout=out,
                                stderr=out, env={**os.environ, "TMPDIR": str(tmp), **_path(sandboxed)}, start_new_session=True)
    try:
        builds = 1 if tree == "base" else 2  # the base's first
        deadline = time.monotonic() + 120
        while not (len(_builds(_ran(sandboxed, forget=False))) >= builds and _make_under(proc.pid)):
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "out").read_text()
            time.sleep(0.01)
        assert len(_builds(_ran(sandboxed, forget=False))) == builds
        family = _family(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    store = kept.store()
    assert store.lookup(keys[tree]) is None and keys[tree] not in _stamped()
    assert [e.key for e in store.entries()] == ([keys["base"]] if tree == "patched" else [])  # the base's was whole before
    deadline = time.monotonic() + 30
    while left := [p for p, start in family if start_time(p) == start]:  # bwrap dies with its parent, the sandbox with bwrap
        assert time.monotonic() < deadline, [(p, Path(f"/proc/{p}/cmdline").read_bytes()) for p in left]
        time.sleep(0.05)
    _ran(sandboxed)
    again = _review(kernel_repo, tmp, sandboxed)
    assert {r[3] for r in _results(again)} == {"pass"}
    assert len(_builds(_ran(sandboxed))) == (2 if tree == "base" else 1)  # built, not restored: only the base's was kept
    assert sorted(e.key for e in store.entries()) == sorted(keys.values())
    assert f"(pid {proc.pid})" in again.stderr  # what the killed run left in TMPDIR was removed
    again.assert_nothing_left()


def _plant(key: str) -> None:
    """A kept build that is wrong (a gettimeofday test that fails), as if the build that made it had gone wrong."""
    prog = kept.store().root / key / "files" / GETTIMEOFDAY
    prog.write_text("#!/bin/sh\necho 'not ok 1 planted'\nexit 1\n")


def test_no_cache_builds_again_though_builds_are_kept(kernel_repo: Path, tmp_path: Path, sandboxed: Path) -> None:
    results = _results(_review(kernel_repo, tmp_path / "tmp1", sandboxed))
    keys = [e.key for e in kept.store().entries()]
    assert len(keys) == 2 and len(_builds(_ran(sandboxed))) == 2
    for key in keys:
        _plant(key)
    again = _review(kernel_repo, tmp_path / "tmp2", sandboxed, "--no-cache")
    assert _results(again) == results  # nothing kept was read
    assert len(_builds(_ran(sandboxed))) == 2


def test_a_build_made_again_with_no_cache_is_the_one_kept(kernel_repo: Path, tmp_path: Path, sandboxed: Path) -> None:
    results = _results(_review(kernel_repo, tmp_path / "tmp1", sandboxed))
    for e in kept.store().entries():
        _plant(e.key)
    assert _results(_review(kernel_repo, tmp_path / "tmp2", sandboxed, "--no-cache")) == results
    assert _results(_review(kernel_repo, tmp_path / "tmp3", sandboxed)) == results


def test_result_cache_false_neither_reads_nor_keeps(kernel_repo: Path, tmp_path: Path, sandboxed: Path) -> None:
    results = _results(_review(kernel_repo, tmp_path / "tmp1", sandboxed))
    entries = kept.store().entries()
    assert len(entries) == 2 and len(_builds(_ran(sandboxed))) == 2
    for e in entries:
        os.utime(e.path / ".complete", (e.used - 3600, e.used - 3600))
        _plant(e.key)
    git(kernel_repo, "config", "reviewer.resultCache", "false")
    assert _results(_review(kernel_repo, tmp_path / "tmp2", sandboxed)) == results
    assert len(_builds(_ran(sandboxed))) == 2
    assert [(e.key, e.used) for e in kept.store().entries()] == [(e.key, e.used - 3600) for e in entries]  # not even looked up


def test_two_reviews_on_one_base_at_once_build_the_base_once(kernel_repo: Path, tmp_path: Path, sandboxed: Path) -> None:
    """Two series on the same base reviewed at the same moment (two bot workers, two people): the second waits on the base
    build's key and restores what the first kept, instead of building the base a second time beside it."""
    other = tmp_path / "other.mbox"
    text = DEMO.read_text()
    assert text.count('ksft_exit_skip("vDSO lacks %s\\n"') == 1
    other.write_text(text.replace('ksft_exit_skip("vDSO lacks %s\\n"', 'ksft_exit_skip("no %s in this vDSO\\n"'))
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(review, mbox, "--tree", kernel_repo, *ARGS, env=_path(sandboxed), tmp=tmp_path / f"tmp{i}")
                for i, mbox in enumerate((DEMO, other))]
        one, two = (r.result() for r in runs)
    base = {r[:3]: r[3] for r in _results(one) if r[1] == "base"}
    assert base == {r[:3]: r[3] for r in _results(two) if r[1] == "base"} and len(base) == 3
    assert len(_builds(_ran(sandboxed))) == 3  # the base once, each patched tree once
    assert len(kept.store().entries()) == 3
    one.assert_nothing_left()
    two.assert_nothing_left()
