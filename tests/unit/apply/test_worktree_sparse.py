"""The apply check's narrow worktree (only what `git am` and the listings read), with real git.

A series of a change, a new file in a new directory, a rename and a delete is applied to
bases where it applies plainly, by a clean 3-way merge, through a rename made in the base
(the 3-way result lands outside the narrow checkout) and not at all; each outcome must be the
one a full checkout gives, and the user's repository must come out as it went in.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from reviewer import boot
from reviewer.apply import worktree
from reviewer.model import PatchApply, Series
from reviewer.series import target as targets
from reviewer.series.patchparse import parse_diff
from tests.conftest import git

LINES = "".join(f"line {i}\n" for i in range(1, 31))
KUNIT = "#include <kunit/test.h>\nstatic struct kunit_suite s = {\n\t.name = \"{name}\",\n};\nkunit_test_suite(s);\n"
FILES = {
    "Makefile": "all:\n", "README": "top\n",
    "drivers/net/a.c": LINES, "drivers/net/other.c": "x\n", "drivers/net/a_kunit.c": KUNIT.replace("{name}", "a-suite"),
    "drivers/net/tests/test_a.c": KUNIT.replace("{name}", "a-tests"), "drivers/net/sub/deep.c": "deep\n",
    "drivers/net/Makefile": "obj-$(CONFIG_A_KUNIT) += a_kunit.o\nobj-y += other.o\n",
    "drivers/net/tests/Makefile": "obj-$(CONFIG_A_TESTS) += test_a.o\n",
    "mm/b.c": "".join(f"mm {i}\n" for i in range(1, 31)), "mm/c.c": "c\n", "lib/sub/gone.c": "gone\n", "other/x.c": "x\n",
}
# What the narrow checkout holds for the series below: top-level files, the touched paths, the
# KUnit suites named after them (and their Makefiles); not other.c, sub/, mm/c.c or other/.
NARROW = {"Makefile", "README", "drivers/net/a.c", "drivers/net/a_kunit.c", "drivers/net/Makefile",
          "drivers/net/tests/test_a.c", "drivers/net/tests/Makefile", "mm/b.c", "lib/sub/gone.c"}


def _commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    for path, text in files.items():
        if text is None:
            git(repo, "rm", "-q", path)
            continue
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
        git(repo, "add", path)
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The user's tree: a base commit, the series on a branch, and bases it meets differently (tags)."""
    repo = tmp_path / "linux"
    git(tmp_path, "init", "-q", str(repo))
    _commit(repo, FILES, "base")
    git(repo, "tag", "base")
    git(repo, "checkout", "-q", "-b", "series")
    _commit(repo, {"newdir/deep/n.c": "new\n"}, "newdir: add n.c")
    _commit(repo, {"drivers/net/a.c": LINES.replace("line 5\n", "line 5 changed\n")},
            "net: change line 5\n\nFrom the start: a line mbox must escape.")
    git(repo, "mv", "mm/b.c", "mm/b2.c")
    _commit(repo, {}, "mm: rename b.c")
    _commit(repo, {"lib/sub/gone.c": None}, "lib: delete gone.c")
    git(repo, "checkout", "-q", "master")
    edge = LINES.replace("line 2\n", "line 2 base\n").replace("line 8\n", "line 8 base\n")
    for tag, change in (("threeway", {"drivers/net/a.c": edge}),  # the hunk's context changed: a clean 3-way
                        ("conflict", {"drivers/net/a.c": LINES.replace("line 5\n", "line 5 other\n")})):
        git(repo, "checkout", "-q", "-b", tag, "base")
        _commit(repo, change, tag)
        git(repo, "tag", f"{tag}-base")
    git(repo, "checkout", "-q", "-b", "renamed", "base")
    git(repo, "mv", "drivers/net/a.c", "drivers/net/moved.c")
    _commit(repo, {"drivers/net/moved.c": edge}, "renamed in the base")
    git(repo, "tag", "renamed-base")
    git(repo, "checkout", "-q", "master")
    return repo


def _series(repo: Path, tmp_path: Path) -> Series:
    mbox = tmp_path / "series.mbox"
    mbox.write_text(git(repo, "format-patch", "--stdout", "--pretty=mboxrd", "--base=base", "base..series"))
    series = targets.load(targets.classify(str(mbox), tmp_path), tmp_path)
    return replace(series, patches=tuple(replace(p, files=parse_diff(p.diff, p.subject)) for p in series.patches))


def _touched(series: Series) -> list[str]:
    return sorted({p for patch in series.patches for f in patch.files for p in (f.path, f.old_path) if p})


def _files(wt: Path) -> set[str]:
    return {str(p.relative_to(wt)) for p in wt.rglob("*") if p.is_file() and ".git" not in p.relative_to(wt).parts}


def _apply(repo: Path, base: str, series: Series, touched: list[str] | None) -> tuple[tuple[PatchApply, ...], str, set[str]]:
    """(outcomes, the patched tree's id, files checked out before the apply) in a worktree; None: a full checkout."""
    with worktree.isolated(repo, base, touched, build=False) as wt:
        before = _files(wt)
        results = worktree.apply_series(wt, series)
        assert git(wt, "status", "--porcelain", "--untracked-files=no") == ""
        return results, git(wt, "rev-parse", "HEAD^{tree}").strip(), before


def _state(repo: Path) -> list[str]:
    cmds = (("config", "--local", "--list"), ("status", "--porcelain"), ("worktree", "list"), ("show-ref",), ("rev-parse", "HEAD"))
    return [git(repo, *c) for c in cmds] + [str(sorted(p.name for p in (repo / ".git").iterdir())), _bytes(repo / ".git")]


def _bytes(git_dir: Path) -> str:
    """A digest of every byte of the repository that the review could write: objects (loose and packed),
    refs, hooks, config, worktrees/ (not the index, which `git status` refreshes)."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for p in git_dir.rglob("*") if p.is_file() and p.name != "index"):
        digest.update(str(path.relative_to(git_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_narrow_checkout_is_the_touched_paths_and_their_kunit_suites(repo: Path, tmp_path: Path) -> None:
    series = _series(repo, tmp_path)
    assert set(_touched(series)) == {"drivers/net/a.c", "newdir/deep/n.c", "mm/b.c", "mm/b2.c", "lib/sub/gone.c"}
    _, _, checked_out = _apply(repo, "base", series, _touched(series))
    assert checked_out == NARROW


@pytest.mark.parametrize(("base", "statuses"), [
    ("base", ["applied"] * 4),
    ("threeway-base", ["applied", "applied (3-way merge)", "applied", "applied"]),
    ("renamed-base", ["applied", "applied (3-way merge)", "applied", "applied"]),
])
def test_series_applies_as_on_a_full_checkout(repo: Path, tmp_path: Path, base: str, statuses: list[str]) -> None:
    series = _series(repo, tmp_path)
    narrow, narrow_tree, _ = _apply(repo, base, series, _touched(series))
    full, full_tree, everything = _apply(repo, base, series, None)
    assert [r.status for r in narrow] == [r.status for r in full] == statuses
    assert narrow_tree == full_tree
    assert "other/x.c" in everything  # the comparison really was with a full checkout


def test_renamed_in_base_the_merge_lands_outside_the_narrow_set(repo: Path, tmp_path: Path) -> None:
    series = _series(repo, tmp_path)
    with worktree.isolated(repo, "renamed-base", _touched(series), build=False) as wt:
        assert not (wt / "drivers/net/moved.c").exists()
        worktree.apply_series(wt, series)
        assert "line 5 changed" in (wt / "drivers/net/moved.c").read_text()
        assert (wt / "newdir/deep/n.c").read_text() == "new\n" and (wt / "mm/b2.c").is_file()
        assert not (wt / "mm/b.c").exists() and not (wt / "lib/sub/gone.c").exists()
        assert git(wt, "log", "-1", "--format=%B").startswith("lib: delete gone.c")
        assert "From the start: a line mbox must escape." in git(wt, "log", "-1", "--skip=2", "--format=%B")


def test_failed_patch_names_patch_file_and_hunk_and_keeps_the_earlier_ones(repo: Path, tmp_path: Path) -> None:
    git(repo, "checkout", "-q", "-b", "late-conflict", "base")
    _commit(repo, {"mm/b.c": "rewritten\n"}, "mm: rewrite b.c")  # patch 3 (the rename) still applies...
    _commit(repo, {"lib/sub/gone.c": "changed\n"}, "lib: change gone.c")  # ...patch 4 (the delete) cannot
    git(repo, "checkout", "-q", "master")
    series = _series(repo, tmp_path)
    with worktree.isolated(repo, "late-conflict", _touched(series), build=False) as wt:
        results = worktree.apply_series(wt, series)
        assert [r.status for r in results] == ["applied", "applied", "applied", "failed"]
        assert results[-1].index == 4
        # the shadow repository has the user's objects, not their refs: name the commit
        assert git(wt, "rev-list", "--count", git(repo, "rev-parse", "late-conflict").strip() + "..HEAD").strip() == "3"
        assert git(wt, "status", "--porcelain", "--untracked-files=no") == ""
    assert "lib/sub/gone.c" in results[-1].detail


def test_failed_hunk_is_named_with_the_narrow_checkout(repo: Path, tmp_path: Path) -> None:
    series = _series(repo, tmp_path)
    hunk = series.patches[1].files[0].hunks[0].header
    results, _, _ = _apply(repo, "conflict-base", series, _touched(series))
    assert [r.status for r in results] == ["applied", "failed"]
    assert results[1].detail.startswith(f"drivers/net/a.c: hunk {hunk} does not apply; "), results[1].detail
    assert "Patch failed at 0002" in results[1].detail


def test_the_users_repository_is_left_as_it_was(repo: Path, tmp_path: Path) -> None:
    (repo / "untracked.txt").write_text("mine\n")
    before = _state(repo)
    series = _series(repo, tmp_path)
    with pytest.raises(RuntimeError), worktree.isolated(repo, "base", _touched(series), build=False) as wt:
        worktree.apply_series(wt, series)
        assert git(repo, "worktree", "list").count("\n") == 1  # registered in our shadow, not in the user's repository
        raise RuntimeError("a later stage failed")
    assert not wt.exists() and not list(wt.parent.glob(f"reviewer-*-{os.getpid()}-*"))  # nor its trash
    _apply(repo, "conflict-base", series, _touched(series))
    assert _state(repo) == before
    assert "worktreeconfig" not in git(repo, "config", "--list").lower()  # `git sparse-checkout set` would add it


def test_boot_listing_reads_the_same_suites_as_on_a_full_checkout(repo: Path, tmp_path: Path) -> None:
    series = _series(repo, tmp_path)
    touched = _touched(series)
    with worktree.isolated(repo, "base", touched, build=False) as narrow, worktree.isolated(repo, "base") as full:
        worktree.apply_series(narrow, series)
        worktree.apply_series(full, series)
        found = [(t.name, why) for t, why in boot.relevant(touched, narrow)]
        assert found == [(t.name, why) for t, why in boot.relevant(touched, full)]
    assert {name for name, _ in found} == {"kunit:a-suite", "kunit:a-tests"}


def test_a_build_keeps_the_broad_checkout(repo: Path, tmp_path: Path) -> None:
    touched = _touched(_series(repo, tmp_path))
    patterns = worktree.sparse_patterns(touched, build=True)
    assert {"/include/", "/scripts/", "/tools/", "/drivers/net/", "/mm/", "/newdir/deep/"} <= set(patterns)
    with worktree.isolated(repo, "base", touched, build=True) as wt:  # a small tree: all of it
        assert _files(wt) == set(FILES)
    ppc = worktree.sparse_patterns(["arch/powerpc/kernel/vdso/vgetrandom.c", "lib/vdso/getrandom.c"], build=True)
    assert "/arch/powerpc/" in ppc and "/arch/powerpc/kernel/vdso/" in ppc  # the tests may be built with ARCH=powerpc
    assert "/lib/" not in ppc and "/lib/vdso/" in ppc  # only arch/ is widened


def test_paths_with_glob_characters_match_only_themselves(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", str(repo))
    _commit(repo, {"d/a[1].c": "1\n", "d/a1.c": "2\n", "d/x*y.c": "3\n", "d/xzy.c": "4\n"}, "base")
    with worktree.isolated(repo, "HEAD", ["d/a[1].c", "d/x*y.c"], build=False) as wt:
        assert _files(wt) == {"d/a[1].c", "d/x*y.c"}


def test_cached_worktree_is_narrowed_and_widened_again(repo: Path, tmp_path: Path) -> None:
    touched = _touched(_series(repo, tmp_path))
    before = _state(repo)
    for build, expected in ((False, NARROW), (True, set(FILES)), (False, NARROW)):
        with worktree.cached(repo, "base", touched, tmp_path / "cache", build=build) as wt:
            assert _files(wt) == expected
    assert _state(repo)[:2] == before[:2]  # config and status; the slot stays registered, by design


def test_file_count_from_the_index_or_the_tree(repo: Path, tmp_path: Path) -> None:
    assert worktree._file_count(repo, "base") == len(FILES)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(repo), str(clone)], check=True)
    assert not (clone / ".git" / "index").exists()
    assert worktree._file_count(clone, "base") == len(FILES)


def test_widening_a_patched_sparse_worktree_checks_out_the_guest_arch(repo: Path, tmp_path: Path) -> None:
    # --arch ppc64le on a series that leaves arch/ alone: `make ARCH=powerpc headers` needs arch/powerpc/.
    series = _series(repo, tmp_path)
    _commit(repo, {"arch/powerpc/Makefile": "ppc\n", "arch/powerpc/include/uapi/asm/a.h": "a\n", "arch/x86/Makefile": "x86\n"}, "arches")
    with worktree.isolated(repo, "master", _touched(series), build=False) as wt:
        worktree.apply_series(wt, series)
        head, applied = git(wt, "rev-parse", "HEAD").strip(), _files(wt)
        assert not any(f.startswith("arch/") for f in applied)
        assert worktree.widen(wt, ["arch/powerpc"]) == ["arch/powerpc"]
        assert _files(wt) == applied | {"arch/powerpc/Makefile", "arch/powerpc/include/uapi/asm/a.h"}  # not arch/x86
        assert git(wt, "rev-parse", "HEAD").strip() == head and git(wt, "status", "--porcelain") == ""  # the series' commits kept
        assert worktree.widen(wt, ["arch/powerpc"]) == []  # already there: nothing to do
    with worktree.isolated(repo, "base") as full:  # a full checkout is left as it is
        assert worktree.widen(full, ["arch/powerpc"]) == []


def test_a_build_worktree_checks_out_the_guest_arch_at_once(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The guests' arch/ named up front (MORE) is in the first checkout of a large tree: widen() then has nothing to do.
    monkeypatch.setattr(worktree, "SPARSE_ABOVE", 3)  # this small tree counts as a large one
    _commit(repo, {"arch/powerpc/Makefile": "ppc\n", "arch/powerpc/include/uapi/asm/a.h": "a\n", "arch/x86/Makefile": "x86\n"}, "arches")
    touched = _touched(_series(repo, tmp_path))
    with worktree.isolated(repo, "master", touched, build=True, more=["arch/powerpc", "arch/powerpc"]) as wt:
        files = _files(wt)
        assert {"arch/powerpc/Makefile", "arch/powerpc/include/uapi/asm/a.h", "arch/x86/Makefile"} <= files  # x86: BUILD's
        assert "other/x.c" not in files and "mm/c.c" in files  # still sparse: the touched directories whole, nothing else
        assert worktree.widen(wt, ["arch/powerpc"]) == []
    with worktree.isolated(repo, "master", touched, build=True) as wt:
        assert not any(f.startswith("arch/powerpc/") for f in _files(wt))
