"""`review --build` on the real 6.12 tree: series of ours made from its code, compiled patch by patch
for their architectures (host gcc, Debian's powerpc cross gcc, clang-19 for LoongArch), with W=1.

make itself is the oracle: every warning and error asserted here is one the compiler printed for
the code the series wrote. The build directories, the source checkout and ccache are shared with
the boot tests through REVIEWER_BOOT_CACHE, so a second run of this file recompiles almost nothing.
"""
from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from bench._procs import processes_in
from reviewer.errors import ExitStatus
from tests.cli.interrupting import reaper, start, wait_until  # noqa: F401 (reaper: an autouse fixture)
from tests.helpers import review
from tests.realkernel.kernel import BOOT_CACHE as CACHE
from tests.realkernel.kernel import commit, format_patch, show

pytestmark = [pytest.mark.slow]
AUTHOR = "Build Tester <build@example.org>"


def _series(linux: Path, head: str, tmp: Path, name: str, steps: list[tuple[str, dict[str, str]]]) -> Path:
    tip = head
    for subject, changes in steps:
        tip = commit(linux, tip, changes, f"{subject}\n\nOn purpose.\n\nSigned-off-by: {AUTHOR}\n", AUTHOR)
    return format_patch(linux, head, tip, tmp / f"{name}.mbox")


def _build(mbox: Path, linux: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> dict[str, Any]:
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", CACHE)
    result = review(mbox, "--tree", linux, "--no-tests", "--no-checkpatch", "--build", "--format", "json", *extra, tmp=tmp)
    assert result.rc in (ExitStatus.OK, ExitStatus.FINDINGS), result.stderr
    result.assert_nothing_left()
    doc: dict[str, Any] = result.json()
    assert next(st for st in doc["stages"] if st["name"] == "build")["status"] == "ok"
    # What will be built, and a rough cost, is said before building.
    targets = ", ".join(b["target"] for b in doc["builds"])
    assert f"build: the base and {len(doc['patches'])} patch(es) for {targets}: about " in result.stderr, result.stderr
    return doc


def _ours(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["rule"].startswith("build/")]


SORT = "static bool is_aligned(const void *base, size_t size, unsigned char align)\n{\n"


def test_new_w1_warning_on_its_patch_and_none_when_fixed(linux: Path, linux_head: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    sort = show(linux, linux_head, "lib/sort.c")
    cmdline = show(linux, linux_head, "lib/cmdline.c")
    assert SORT in sort and "int get_option(char **str, int *pint)\n{\n" in cmdline
    touch = cmdline.replace("int get_option(char **str, int *pint)\n{\n",
                            "int get_option(char **str, int *pint)\n{\n\t/* parse one option */\n", 1)
    warned = sort.replace(SORT, SORT + "\tint unused_here = 0;\n", 1)
    bad = _series(linux, linux_head, tmp_path, "warn", [("lib/cmdline: a comment", {"lib/cmdline.c": touch}),
                                                         ("lib/sort: a variable", {"lib/sort.c": warned})])
    doc = _build(bad, linux, tmp_path / "t1", monkeypatch)
    found = _ours(doc)
    assert [(f["rule"], f["patch"], f["path"]) for f in found] == [("build/warning", 2, "lib/sort.c")], found
    assert "unused variable 'unused_here'" in found[0]["message"]
    assert found[0]["line"] == SORT.count("\n") + sort[:sort.index(SORT)].count("\n") + 1
    (x86,) = doc["builds"]
    assert x86["target"] == "x86_64" and [s["status"] for s in x86["steps"]] == ["built", "built", "built"]
    assert x86["steps"][2]["goals"] == ["lib/cmdline.o", "lib/sort.o"]

    fixed = sort.replace(SORT, SORT + "\t/* aligned? */\n", 1)
    good = _series(linux, linux_head, tmp_path, "fixed", [("lib/cmdline: a comment", {"lib/cmdline.c": touch}),
                                                          ("lib/sort: a comment", {"lib/sort.c": fixed})])
    assert _ours(_build(good, linux, tmp_path / "t2", monkeypatch)) == []


def test_a_patch_that_breaks_the_build_is_the_only_error(linux: Path, linux_head: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    sort = show(linux, linux_head, "lib/sort.c")
    one = sort.replace(SORT, SORT + "\t/* step one */\n", 1)
    broken = one.replace("\t/* step one */\n", "\t/* step one */\n\tif (undeclared_thing)\n\t\treturn false;\n", 1)
    repaired = broken.replace("\tif (undeclared_thing)\n\t\treturn false;\n", "", 1)
    mbox = _series(linux, linux_head, tmp_path, "bisect", [("lib/sort: one", {"lib/sort.c": one}),
                                                           ("lib/sort: two", {"lib/sort.c": broken}),
                                                           ("lib/sort: three", {"lib/sort.c": repaired})])
    doc = _build(mbox, linux, tmp_path / "t", monkeypatch)
    errors = [f for f in _ours(doc) if f["level"] == "error"]
    assert [(f["rule"], f["patch"], f["path"]) for f in errors] == [("build/error", 2, "lib/sort.c")], _ours(doc)
    assert "'undeclared_thing' undeclared" in errors[0]["message"] and "3/3 builds again" in errors[0]["message"]
    assert [s["status"] for s in doc["builds"][0]["steps"]] == ["built", "built", "failed", "built"]


def _drop_export(text: str, symbol: str) -> str:
    line = next(ln for ln in text.splitlines(keepends=True) if ln.strip() == f"{symbol};")
    return text.replace(line, "", 1)


def test_powerpc_vdso_cross_built_and_export_read_from_the_symbol_table(linux: Path, linux_head: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    vget = "arch/powerpc/kernel/vdso/vgetrandom.c"
    src = show(linux, linux_head, vget)
    lds64, lds32 = (f"arch/powerpc/kernel/vdso/vdso{n}.lds.S" for n in (64, 32))
    mbox = _series(linux, linux_head, tmp_path, "ppc", [
        ("powerpc/vdso: a comment", {vget: "/* reviewed */\n" + src}),
        ("powerpc/vdso: drop the getrandom export", {lds64: _drop_export(show(linux, linux_head, lds64), "__kernel_getrandom"),
                                                     lds32: _drop_export(show(linux, linux_head, lds32), "__kernel_getrandom")}),
    ])
    doc = _build(mbox, linux, tmp_path / "t", monkeypatch)
    builds = {b["target"]: b for b in doc["builds"]}
    assert set(builds) == {"ppc64le", "ppc32"}, builds.keys()
    assert "CROSS_COMPILE=powerpc64le-linux-gnu-" in builds["ppc64le"]["toolchain"]
    for target, image in (("ppc64le", "vdso64.so.dbg"), ("ppc32", "vdso32.so.dbg")):
        steps = builds[target]["steps"]
        assert [s["status"] for s in steps] == ["built", "built", "built"], steps
        path = f"arch/powerpc/kernel/vdso/{image}"
        assert "__kernel_getrandom@@LINUX_2.6.15" in steps[1]["vdso"][path]
        assert "__kernel_getrandom@@LINUX_2.6.15" not in steps[2]["vdso"][path]
        assert "__kernel_clock_gettime@@LINUX_2.6.15" in steps[2]["vdso"][path]
    lost = [f for f in _ours(doc) if f["rule"] == "build/vdso-export"]
    assert sorted((f["patch"], f["level"]) for f in lost) == [(2, "error"), (2, "error")], _ours(doc)
    assert all("no longer exports __kernel_getrandom" in f["message"] for f in lost)


def test_loongarch_vdso_built_with_clang(linux: Path, linux_head: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lds = "arch/loongarch/vdso/vdso.lds.S"
    mbox = _series(linux, linux_head, tmp_path, "la", [("LoongArch: vDSO: drop the getrandom export",
                                                        {lds: _drop_export(show(linux, linux_head, lds), "__vdso_getrandom")})])
    doc = _build(mbox, linux, tmp_path / "t", monkeypatch)
    (la,) = doc["builds"]
    assert la["target"] == "loongarch" and "LLVM=" in la["toolchain"] and [s["status"] for s in la["steps"]] == ["built", "built"]
    base, patched = (s["vdso"]["arch/loongarch/vdso/vdso.so.dbg"] for s in la["steps"])
    assert "__vdso_getrandom@@LINUX_5.10" in base and "__vdso_getrandom@@LINUX_5.10" not in patched
    (lost,) = [f for f in _ours(doc) if f["rule"] == "build/vdso-export"]
    assert lost["patch"] == 1 and "__vdso_getrandom" in lost["message"] and "__vdso_clock_gettime@@LINUX_5.10" in lost["quote"]


@pytest.fixture(scope="module")
def cold_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernel cache of these tests' own (its first build is slow enough to be interrupted)."""
    return tmp_path_factory.mktemp("kcache")


def _makes(cache: Path) -> list[int]:
    out = []
    for pid in processes_in(cache):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() in ("make", "cc1", "gcc", "ccache", "clang-19", "ld"):
                out.append(pid)
    return out


def test_ctrl_c_during_a_build_stops_make_and_the_next_build_is_whole(linux: Path, linux_head: str, tmp_path: Path,
                                                                      cold_cache: Path) -> None:
    sort = show(linux, linux_head, "lib/sort.c")
    mbox = _series(linux, linux_head, tmp_path, "c", [("lib/sort: a comment", {"lib/sort.c": sort.replace(SORT, SORT + "\t/* c */\n", 1)})])
    env = {"REVIEWER_BOOT_CACHE": str(cold_cache)}
    # kill -9 first (issue 34): nothing can run at the end of the review, yet what make half wrote is never trusted.
    killed = start(mbox, "--tree", linux, "--no-tests", "--no-checkpatch", "--build", "--format", "json", tmp=tmp_path / "tmp", env=env)
    wait_until(killed, lambda: bool(_makes(cold_cache)), timeout=600, what="make in the build stage")
    killed.send(signal.SIGKILL)
    assert killed.finish(timeout=60)[0] == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while _makes(cold_cache):  # the sandbox dies with its parent: make and the compilers with it
        assert time.monotonic() < deadline, _makes(cold_cache)
        time.sleep(0.1)
    assert list(cold_cache.glob("check-*.building")), "the killed build directory is marked half-built"
    run = start(mbox, "--tree", linux, "--no-tests", "--no-checkpatch", "--build", "--format", "json", tmp=tmp_path / "tmp", env=env)
    wait_until(run, lambda: bool(_makes(cold_cache)), timeout=600, what="make in the build stage")
    run.send(signal.SIGINT)
    rc, _ = run.finish(timeout=120)
    assert rc == ExitStatus.INTERRUPTED, run.stderr
    assert _makes(cold_cache) == []  # make, the compilers and ccache were stopped with the review
    assert list(cold_cache.glob("check-*.building")), "the interrupted build directory is marked half-built"
    again = review(mbox, "--tree", linux, "--no-tests", "--no-checkpatch", "--build", "--format", "json", tmp=tmp_path / "t2", env=env)
    assert again.rc == ExitStatus.OK, again.stderr
    (x86,) = again.json()["builds"]
    assert [s["status"] for s in x86["steps"]] == ["built", "built"] and not list(cold_cache.glob("check-*.building"))
    assert f"(pid {killed.proc.pid})" in run.stderr  # the worktrees the killed review left in TMPDIR were removed by the next one


def test_build_timeout_stops_the_stage_with_a_warning(linux: Path, linux_head: str, tmp_path: Path, cold_cache: Path) -> None:
    vget = "arch/powerpc/kernel/vdso/vgetrandom.c"
    mbox = _series(linux, linux_head, tmp_path, "t", [("powerpc/vdso: a comment", {vget: "/* t */\n" + show(linux, linux_head, vget)})])
    result = review(mbox, "--tree", linux, "--no-tests", "--no-checkpatch", "--build", "--arch", "ppc32", "--build-timeout", "10",
                    "--format", "json", tmp=tmp_path / "t", env={"REVIEWER_BOOT_CACHE": str(cold_cache)})
    assert result.rc == ExitStatus.OK, result.stderr  # a warning: exit 1 only with --strict
    doc = result.json()
    assert "--build-timeout reached" in next(st for st in doc["stages"] if st["name"] == "build")["detail"]
    (ppc,) = doc["builds"]
    assert ppc["target"] == "ppc32" and [s["status"] for s in ppc["steps"]] == ["timeout", "timeout"], ppc["steps"]
    (cut,) = [f for f in _ours(doc) if f["rule"] == "build/timeout"]
    assert cut["level"] == "warning" and "not built: the base, 1/1" in cut["message"]
    assert _makes(cold_cache) == []
    # A build directory make was killed in is marked, so that the next run starts it afresh (when the
    # checkout of a cold cache took all the time, make never started: nothing to mark).
    killed = any(s["status"] == "timeout" and s["seconds"] for s in ppc["steps"])
    assert bool(list(cold_cache.glob("check-ppc32-*.building"))) == killed
    result.assert_nothing_left()
