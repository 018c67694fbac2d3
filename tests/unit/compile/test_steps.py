"""The build directories of a kernel cache are pruned: the least recently used go beyond KEEP_BUILDS (and their
configuration stamps with them); a base keeps the directory's configuration when Kconfig reads nothing that changed."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from reviewer.compile import steps
from reviewer.kernel import configured
from reviewer.kernel import make as kmake
from reviewer.run.sandbox import Sandbox
from tests.conftest import git


def test_prune_keeps_the_current_and_the_most_recently_used(tmp_path: Path) -> None:
    dirs = []
    for n in range(steps.KEEP_BUILDS + 3):
        d = tmp_path / f"check-x86_64-{n:012x}"
        d.mkdir()
        (d / ".reviewer-used").touch()
        os.utime(d / ".reviewer-used", (1000 + n, 1000 + n))
        dirs.append(d)
    (tmp_path / f"{dirs[1].name}.building").touch()
    (tmp_path / "src").mkdir()  # the source checkout and ccache are not build directories
    (tmp_path / "ccache").mkdir()
    steps._prune(tmp_path, keep=dirs[0])  # the oldest, but the one just used
    left = sorted(d.name for d in tmp_path.glob("check-*"))
    assert left == sorted([dirs[0].name, *(d.name for d in dirs[-(steps.KEEP_BUILDS - 1):])])
    assert (tmp_path / "src").is_dir() and (tmp_path / "ccache").is_dir()


def _commit(repo: Path, files: dict[str, str]) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", ", ".join(files))
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A kernel-shaped repository: a base, a second base with a C change, a third with a Kconfig change; (its git dir, commits)."""
    repo = tmp_path / "linux"
    repo.mkdir()
    git(repo, "init", "-q")
    base = _commit(repo, {"lib/Kconfig": "config CRC32\n\ttristate\n", "lib/string.c": "int a;\n"})
    c_change = _commit(repo, {"lib/string.c": "int a2;\n", "include/linux/string.h": "int b;\n"})
    kconfig_change = _commit(repo, {"lib/Kconfig": "config CRC32\n\tbool\n"})
    return repo / ".git", {"base": base, "c": c_change, "kconfig": kconfig_change}


def test_a_base_that_differs_in_files_no_kconfig_reads_keeps_the_configuration(tree: tuple[Path, dict[str, str]], tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Bases switched as a list's series come: the configuration is made again only where Kconfig may see a change."""
    repo, c = tree
    out = tmp_path / "check-x86_64-0123456789ab"
    out.mkdir()
    box = kmake.Box(Sandbox(tmp_path / "scratch"), tmp_path / "src", out, variables=("ARCH=x86_64",))
    runs: list[tuple[str, ...]] = []  # the fragments configured, in order

    def configure(b: kmake.Box, lines: tuple[str, ...], timeout: float) -> tuple[str, ...]:  # noqa: ARG001 (make's signature)
        runs.append(lines)
        (b.out / ".config").write_text(f"CONFIG_CRC32=y\n# configure {len(runs)}\n")
        return ("CONFIG_X=y was not kept (unmet dependency?)",)

    monkeypatch.setattr(kmake, "configure", configure)
    lines = ("CONFIG_CRC32=y", "CONFIG_X=y")
    not_kept = ("CONFIG_X=y was not kept (unmet dependency?)",)

    def base(sha: str) -> tuple[str, ...]:
        return steps._configuration(box, steps.Commit(0, sha), repo, lines, 60.0)

    assert base(c["base"]) == not_kept and len(runs) == 1  # configured once
    assert base(c["c"]) == not_kept and base(c["base"]) == not_kept and len(runs) == 1  # C and headers only: kept, both ways
    assert base(c["kconfig"]) == not_kept and len(runs) == 2  # Kconfig changed: configured again
    assert steps._configuration(box, steps.Commit(1, c["c"], ("lib/string.c",)), repo, lines, 60.0) == () and len(runs) == 2
    assert steps._configuration(box, steps.Commit(1, c["base"], ("lib/Kconfig",)), repo, lines, 60.0) == not_kept and len(runs) == 3
    assert base(c["kconfig"]) == not_kept and len(runs) == 4  # the patch's configuration is no base's
    (out / ".config").write_text("CONFIG_CRC32=y\nCONFIG_MODULES=y\n")  # the series' make runs with the directory writable
    assert base(c["kconfig"]) == not_kept and len(runs) == 5
    assert steps._configuration(box, steps.Commit(0, c["kconfig"]), repo, lines[:1], 60.0) == not_kept  # another fragment
    assert runs[-1] == lines[:1] and len(runs) == 6


def test_a_pruned_build_directory_takes_its_configuration_stamp_along(tmp_path: Path) -> None:
    dirs = [tmp_path / f"check-x86_64-{n:012x}" for n in range(steps.KEEP_BUILDS + 1)]
    for n, d in enumerate(dirs):
        d.mkdir()
        (d / ".reviewer-used").touch()
        os.utime(d / ".reviewer-used", (1000 + n, 1000 + n))
        configured.stamp_path(d).write_text("{}")
    steps._prune(tmp_path, keep=dirs[-1])
    assert not dirs[0].exists() and not configured.stamp_path(dirs[0]).exists()
    assert configured.stamp_path(dirs[1]).exists()
