"""Kept selftest builds (selftests/kept.py): when the base's build may start the patched one, and a build
saved, restored into another checkout and made again with real make and gcc."""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from reviewer.selftests import kept
from reviewer.selftests.run import RunList, needs_headers
from tests.conftest import git

SELFTESTS = "tools/testing/selftests"
VDSO_MAKEFILE = """TEST_GEN_PROGS := vdso_test_gettimeofday vdso_test_chacha
include ../lib.mk
$(OUTPUT)/vdso_test_chacha: $(top_srcdir)/tools/arch/$(SRCARCH)/vdso/vgetrandom-chacha.S
"""
CHACHA_C = '#include "../../../../lib/crypto/chacha-ref.c"\nint main(void) { return 0; }\n'


def _selftests(tmp: Path) -> Path:
    """A tree with tools/testing/selftests/vDSO: a Makefile naming an .S file outside it, a .c including a kernel .c."""
    wt = tmp / "wt"
    vdso = wt / SELFTESTS / "vDSO"
    vdso.mkdir(parents=True)
    (vdso / "Makefile").write_text(VDSO_MAKEFILE)
    (vdso / "vdso_test_chacha.c").write_text(CHACHA_C)
    (vdso / "vdso_test_gettimeofday.c").write_text("int main(void) { return 0; }\n")
    return wt


@pytest.mark.parametrize("touched", [
    [],
    ["mm/dmapool.c"],
    ["arch/x86/entry/vdso/vma.c", "kernel/time/vsyscall.c", "Documentation/arch/x86/vdso.rst"],
    ["arch/x86/lib/chacha.S"],  # in the Makefile only inside a longer name (vgetrandom-chacha.S)
    ["lib/crypto/chacha-ref.c.orig"],
])
def test_a_series_leaving_the_builds_inputs_alone_may_start_from_the_base(tmp_path: Path, touched: list[str]) -> None:
    assert kept.reusable(_selftests(tmp_path), touched, ["vDSO"])


@pytest.mark.parametrize("path", [
    "tools/arch/x86/vdso/vgetrandom-chacha.S",
    "tools/lib/string.c",
    "usr/gen_init_cpio.c",
    "scripts/syscallhdr.sh",
    "include/vdso/datapage.h",
    "include/asm-generic/vmlinux.lds.S",  # any include/ directory, whatever the file
    "arch/x86/include/asm/vdso/getrandom.S",
    "arch/x86/include/uapi/asm/unistd.h",
    "drivers/char/random_local.h",  # a header anywhere
    "Makefile",
    "arch/x86/entry/vdso/Makefile",
    "arch/x86/Makefile.postlink",
    "arch/x86/Kbuild",
    "arch/x86/boot/compressed/vars.mk",
    "arch/x86/entry/vdso/vgetrandom-chacha.S",  # named in the vDSO Makefile
    "lib/crypto/chacha-ref.c",  # named in a source of the directory
])
def test_a_series_touching_what_make_may_not_see_is_built_afresh(tmp_path: Path, path: str) -> None:
    assert not kept.reusable(_selftests(tmp_path), ["mm/dmapool.c", path], ["vDSO"])


def test_odd_files_in_a_selftest_directory_neither_hang_nor_crash(tmp_path: Path) -> None:
    wt = _selftests(tmp_path)
    vdso = wt / SELFTESTS / "vDSO"
    os.mkfifo(vdso / "fifo")  # nobody writes it: a blocking open would never return
    (vdso / "to-fifo").symlink_to("fifo")
    (vdso / "zero").symlink_to("/dev/zero")
    (vdso / "loop").symlink_to("loop")
    (vdso / "root").symlink_to("/")  # a directory link: not walked
    (vdso / "dangling").symlink_to("no-such-file")
    (vdso / "big.c").write_bytes(b"x" * (3 << 20) + b" dmapool.c\n")  # the mention lies past what is read
    out: list[bool] = []
    walker = threading.Thread(target=lambda: out.append(kept.reusable(wt, ["mm/dmapool.c"], ["vDSO"])), daemon=True)
    walker.start()
    walker.join(10)
    assert out == [True]
    (vdso / "Makefile").write_text(VDSO_MAKEFILE + "# dmapool.c\n")
    assert not kept.reusable(wt, ["mm/dmapool.c"], ["vDSO"])


def test_a_series_changing_only_a_syscall_table_makes_the_uapi_headers_again(tmp_path: Path) -> None:
    wt = _selftests(tmp_path)
    (wt / "Makefile").write_text("headers_install:\nheaders: headers_install\n")
    (wt / SELFTESTS / "vDSO" / "Makefile").write_text(VDSO_MAKEFILE + "CFLAGS += $(KHDR_INCLUDES)\n")
    touched = ["arch/x86/entry/syscalls/syscall_64.tbl"]  # make headers writes asm/unistd_64.h from it
    assert needs_headers(wt, ["vDSO"])
    (wt / "usr/include/linux").mkdir(parents=True)  # as restore() leaves the base's build (stage.py _build: reusable, restore)
    assert not kept.reusable(wt, touched, ["vDSO"]) or needs_headers(wt, ["vDSO"])


# A selftest directory: `prog` from a .c beside it and a kernel file outside it, `other` from its own .c alone.
MAKEFILE = """.PHONY: all
all: prog other
prog: prog.c ../../../../arch/x/foo.c
\t$(CC) -o $@ $^
other: other.c
\t$(CC) -o $@ $<
"""
PROG_C = '#include <stdio.h>\nint foo(void);\nint main(void) { printf("%d\\n", foo()); return 0; }\n'
# Another, which reaches the kernel file through a link of its own (as powerpc's copyloops do): its sources never name it.
LINKS_MAKEFILE = """prog: prog.c kfoo.c
\t$(CC) -o $@ $^
"""
# The same, its object files in a subdirectory ($(OUTPUT)/... as many selftests do), listed after the program.
OBJS_MAKEFILE = """prog: obj/prog.o
\t$(CC) -o $@ $^
obj/prog.o: prog.c | obj
\t$(CC) -c -o $@ $<
obj:
\tmkdir -p $@
"""
DIRS = ("t", "links", "objs")
LISTS = {"t": RunList(("prog",), (("other", "TEST_GEN_PROGS_EXTENDED"),)), "links": RunList(("prog",)), "objs": RunList(("prog",))}
KEY = "0123456789abcdef"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two commits: the second changes only arch/x/foo.c, which the selftest's prog is built from."""
    repo = tmp_path / "repo"
    t, links, objs = (repo / SELFTESTS / d for d in DIRS)
    for d in (t, links, objs, repo / "arch/x"):
        d.mkdir(parents=True)
    (t / "Makefile").write_text(MAKEFILE)
    (t / "prog.c").write_text(PROG_C)
    (t / "other.c").write_text("int main(void) { return 0; }\n")
    (links / "Makefile").write_text(LINKS_MAKEFILE)
    (links / "prog.c").write_text(PROG_C)
    (links / "kfoo.c").symlink_to("../../../../arch/x/foo.c")
    (objs / "Makefile").write_text(OBJS_MAKEFILE)
    (objs / "prog.c").write_text("int main(void) { return 0; }\n")
    (repo / "arch/x/foo.c").write_text("int foo(void) { return 1; }\n")
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    (repo / "arch/x/foo.c").write_text("int foo(void) { return 2; }\n")
    git(repo, "commit", "-q", "-am", "two")
    return repo


def _checkout(repo: Path, rev: str, where: Path) -> Path:
    git(repo, "worktree", "add", "-q", "--detach", str(where), rev)
    return where


def _make(wt: Path, d: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-C", str(wt / SELFTESTS / d), *args], capture_output=True, text=True, timeout=120, check=False)


def _run(wt: Path, d: str, prog: str) -> str:
    return subprocess.run([str(wt / SELFTESTS / d / prog)], capture_output=True, text=True, timeout=30, check=True).stdout


@pytest.fixture
def entry(repo: Path, tmp_path: Path) -> Path:
    """The build of the first commit, saved into a kept entry."""
    built = _checkout(repo, "HEAD~1", tmp_path / "built")
    assert all(_make(built, d).returncode == 0 for d in DIRS)
    (built / "arch/x/junk.o").write_text("not kept: outside tools/ and usr/include/\n")
    store = kept.store()
    assert store.root == Path(os.environ["XDG_CACHE_HOME"]) / "reviewer" / "selftests"
    return store.publish(KEY, lambda into: kept.save(into, built, LISTS))


def test_save_keeps_what_the_build_wrote_under_tools_and_usr_include(entry: Path) -> None:
    files = sorted(str(p.relative_to(entry / "files")) for p in (entry / "files").rglob("*") if p.is_file())
    assert files == [f"{SELFTESTS}/links/prog", f"{SELFTESTS}/objs/obj/prog.o", f"{SELFTESTS}/objs/prog", f"{SELFTESTS}/t/other",
                     f"{SELFTESTS}/t/prog"]
    assert kept.lists_of(entry) == LISTS


def test_the_same_commit_restored_is_up_to_date(repo: Path, entry: Path, tmp_path: Path) -> None:
    wt = _checkout(repo, "HEAD~1", tmp_path / "same")
    when = kept.restore(entry, wt)
    assert when == (entry / ".complete").stat().st_mtime
    for d in ("t", "links"):
        assert _make(wt, d, "-q").returncode == 0  # the restored files are newer than the checkout's
        assert _run(wt, d, "prog") == "1\n"  # and still executable


@pytest.mark.parametrize(("d", "reusable"), [("links", True), ("t", False)])
def test_a_restored_build_with_the_changed_file_touched_rebuilds_exactly_what_lists_it(
        repo: Path, entry: Path, tmp_path: Path, d: str, reusable: bool) -> None:  # noqa: FBT001 (a parameter)
    """The stage restores the base's build only when no source of the directory names a touched file (links), else it
    builds afresh (t: its Makefile names foo.c); the restore and the touch are right for both."""
    wt = _checkout(repo, "HEAD", tmp_path / "patched")
    touched = git(repo, "diff", "--name-only", "HEAD~1", "HEAD").split()
    assert touched == ["arch/x/foo.c"] and kept.reusable(wt, touched, [d]) is reusable
    kept.restore(entry, wt, touched=touched)
    other = (wt / SELFTESTS / "t" / "other").stat().st_mtime_ns
    assert _make(wt, d, "-q").returncode == 1
    done = _make(wt, d)
    assert done.returncode == 0, done.stderr
    recipes = [ln for ln in done.stdout.splitlines() if ln.startswith(("cc ", "gcc "))]
    assert len(recipes) == 1 and " -o prog " in recipes[0], done.stdout  # not other
    assert (wt / SELFTESTS / "t" / "other").stat().st_mtime_ns == other
    assert _run(wt, d, "prog") == "2\n"


def test_without_the_touch_make_would_keep_the_base_s_program(repo: Path, entry: Path, tmp_path: Path) -> None:
    """What the touch is for: restored files are newer than the whole checkout, the changed kernel file included."""
    wt = _checkout(repo, "HEAD", tmp_path / "untouched")
    kept.restore(entry, wt)
    assert _make(wt, "links", "-q").returncode == 0 and _run(wt, "links", "prog") == "1\n"


def test_a_restored_build_with_objects_in_a_subdirectory_is_up_to_date(repo: Path, entry: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    wt = _checkout(repo, "HEAD~1", tmp_path / "same")
    copy = shutil.copyfile

    def slow(src: str, dst: str, **kw: bool) -> str:  # a busy disk: each copy a timestamp tick after the one before
        out = copy(src, dst, **kw)
        time.sleep(0.01)
        return out

    monkeypatch.setattr(kept.shutil, "copyfile", slow)
    kept.restore(entry, wt)
    assert _make(wt, "objs", "-q").returncode == 0


def test_clean_removes_a_half_restored_build_only(repo: Path, entry: Path, tmp_path: Path) -> None:
    wt = _checkout(repo, "HEAD~1", tmp_path / "half")
    kept.restore(entry, wt)
    (wt / "arch/x/untracked.txt").write_text("the user's, not the build's\n")
    kept.clean(wt)
    assert git(wt, "status", "--porcelain", "--ignored") == "?? arch/x/untracked.txt\n"


def test_keys_follow_the_content_and_the_build_s_inputs(repo: Path, tmp_path: Path) -> None:
    one, also_one, two = (_checkout(repo, rev, tmp_path / name) for rev, name in (("HEAD~1", "a"), ("HEAD~1", "b"), ("HEAD", "c")))
    ids = {name: kept.tree_of(wt) for name, wt in (("one", one), ("also_one", also_one), ("two", two))}
    k = kept.key(ids["one"], ["t"], (), {})
    assert k == kept.key(ids["also_one"], ["t"], (), {}) and len(k) == 32
    others = {kept.key(ids["two"], ["t"], (), {}), kept.key(ids["one"], ["t", "objs"], (), {}),
              kept.key(ids["one"], ["t"], ("ARCH=arm64",), {}),
              kept.key(ids["one"], ["t"], (), {"VDSO_BENCH_CALLS": "20000"})}
    assert k not in others and len(others) == 4
    (one / "arch/x/foo.c").write_text("int foo(void) { return 3; }\n")  # a change not committed is built too
    assert kept.key(kept.tree_of(one), ["t"], (), {}) not in (k, kept.key(ids["two"], ["t"], (), {}))
    assert kept.key(kept.tree_of(one), ["objs", "t"], (), {}) == kept.key(kept.tree_of(one), ["t", "objs"], (), {})
