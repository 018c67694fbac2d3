"""The kernel cache's key: a commit's tree, not the commit (git am makes a new commit of the same tree every review),
and not its selftests (no kernel build reads tools/testing/)."""
from __future__ import annotations

from pathlib import Path

from reviewer.kernel import images
from reviewer.tree.git import git


def _repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """A repository with three commits: the second has the first's tree (an amended message), the third another."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f.c").write_text("int v;\n")
    git(repo, "add", "f.c")
    git(repo, "commit", "-q", "-m", "f: one")
    first = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "commit", "-q", "--amend", "-m", "f: one, as a second review's git am makes it", "--date", "2020-01-01T00:00:00")
    again = git(repo, "rev-parse", "HEAD").strip()
    (repo / "f.c").write_text("int w;\n")
    git(repo, "commit", "-q", "-am", "f: two")
    return repo / ".git", [first, again, git(repo, "rev-parse", "HEAD").strip()]


def test_a_commit_of_the_same_tree_has_the_same_image(tmp_path: Path) -> None:
    repo, (first, again, other) = _repo(tmp_path)
    assert first != again
    lines = ("CONFIG_PRINTK=y",)
    cache = tmp_path / "cache"
    path = images.image_path(repo, first, "vm-x86_64", lines, cache)
    assert path == images.image_path(repo, again, "vm-x86_64", lines, cache)
    assert path != images.image_path(repo, other, "vm-x86_64", lines, cache)
    assert path != images.image_path(repo, first, "vm-x86_64", ("CONFIG_PRINTK=y", "CONFIG_BUG=y"), cache)
    assert path != images.image_path(repo, first, "vm-x86_64", lines, cache, images.How(("ARCH=powerpc",), "vmlinux", "vmlinux"))


def test_the_second_commit_of_a_tree_reuses_its_kernel_without_building(tmp_path: Path) -> None:
    repo, (first, again, _) = _repo(tmp_path)
    cache = tmp_path / "cache"
    image = images.image_path(repo, first, "vm-x86_64", (), cache)
    image.parent.mkdir(parents=True)
    image.write_bytes(b"a kernel")
    built = images.build(repo, again, "vm-x86_64", (), cache, timeout=1.0)
    assert built.ok and built.image == image and built.log == "(cached image)"
    assert not (cache / "src").exists()  # nothing was checked out, so nothing was built


def test_a_commit_that_changes_only_the_selftests_has_its_parents_kernel(tmp_path: Path) -> None:
    repo, (first, _, _) = _repo(tmp_path)
    work = repo.parent
    git(work, "checkout", "-q", first)
    image = {}
    for name, path in (("test", "tools/testing/selftests/x/t.c"), ("objtool", "tools/objtool/check.c"), ("other", "tools/testing.c")):
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(f"/* {name} */\n")
        git(work, "add", path)
        git(work, "commit", "-q", "-m", name)
        image[name] = images.image_path(repo, "HEAD", "vm-x86_64", (), tmp_path / "cache")
        git(work, "reset", "-q", "--hard", first)
    assert image["test"] == images.image_path(repo, first, "vm-x86_64", (), tmp_path / "cache")
    assert image["objtool"] != image["test"] and image["other"] != image["test"] and image["objtool"] != image["other"]


def test_a_cached_image_in_use_is_not_pruned_by_the_other_sides_build(tmp_path: Path) -> None:
    # CI-sized cache: the base's image, the oldest of a full cache, was pruned by the patched build before its boot.
    import os

    repo, (first, _, _) = _repo(tmp_path)
    cache, lines = tmp_path / "cache", ("CONFIG_PRINTK=y",)
    base = images.image_path(repo, first, "vm-x86_64", lines, cache)
    base.parent.mkdir(parents=True)
    base.write_bytes(b"base kernel")
    os.utime(base, (1, 1))
    others = [base.with_name(f"{n:012x}-vm-x86_64-old.bzImage") for n in range(images.KEEP_IMAGES - 1)]
    for n, p in enumerate(others):
        p.write_bytes(b"an older review's kernel")
        os.utime(p, (100 + n, 100 + n))
    assert images.build(repo, first, "vm-x86_64", lines, cache, 60.0).image == base  # cached: no build
    base.with_name("fffffffffff0-vm-x86_64-new.bzImage").write_bytes(b"the patched kernel, just built")
    images._prune(base.parent)
    assert base.is_file() and not others[0].exists() and all(p.exists() for p in others[1:])
