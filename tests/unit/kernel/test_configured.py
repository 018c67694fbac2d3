"""boot/configured.py: a build directory's configuration is kept only for the same fragment and make variables, an
untouched .config, and commits that differ only in files no Kconfig reads, whichever repository made them (the real tree's
case: tests/realkernel/test_configured_real.py)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from reviewer.kernel import configured

LINES = ("CONFIG_PRINTK=y", "CONFIG_DMAPOOL_TEST=y")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, path: str, text: str) -> str:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    _git(repo, "add", path)
    _git(repo, "-c", "user.name=A", "-c", "user.email=a@example.org", "commit", "-q", "-m", path)
    return _git(repo, "rev-parse", "HEAD")


def _kept(repo: Path, out: Path, commit: str, lines: tuple[str, ...], variables: tuple[str, ...] | None) -> tuple[str, ...] | None:
    return configured.kept(out, configured.inputs(repo / ".git", commit), lines, variables)


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path, str]:
    repo = tmp_path / "linux"
    repo.mkdir()
    _git(repo, "init", "-q")
    base = _commit(repo, "init/Kconfig", "config PRINTK\n\tbool\n")
    out = tmp_path / "build-plain"
    out.mkdir()
    (out / ".config").write_text("CONFIG_PRINTK=y\n")
    problems = ("CONFIG_DMAPOOL_TEST=y was not kept (unmet dependency?)",)
    configured.remember(out, configured.inputs(repo / ".git", base), LINES, None, problems)
    return repo, out, base


@pytest.mark.parametrize("path", ["mm/dmapool.c", "include/linux/dmapool.h", "arch/x86/entry/entry_64.S",
                                  "Documentation/mm/index.rst", "tools/testing/selftests/vDSO/Makefile"])
def test_kept_across_files_no_kconfig_reads(built: tuple[Path, Path, str], path: str) -> None:
    repo, out, _ = built
    tip = _commit(repo, path, "x\n")
    assert _kept(repo, out, tip, LINES, None) == ("CONFIG_DMAPOOL_TEST=y was not kept (unmet dependency?)",)


@pytest.mark.parametrize("path", ["mm/Kconfig", "arch/x86/Kconfig.cpu", "Makefile", "arch/powerpc/Makefile",
                                  "scripts/kconfig/confdata.c", "arch/powerpc/tools/gcc-check-mprofile-kernel.sh",
                                  "arch/x86/configs/tiny.config", "kernel/configs/tiny.config"])
def test_configured_again_when_kconfig_may_read_what_changed(built: tuple[Path, Path, str], path: str) -> None:
    repo, out, _ = built
    tip = _commit(repo, path, "x\n")
    assert _kept(repo, out, tip, LINES, None) is None


def test_configured_again_for_another_fragment_toolchain_or_a_config_the_build_rewrote(built: tuple[Path, Path, str]) -> None:
    repo, out, base = built
    tip = _commit(repo, "mm/dmapool.c", "x\n")
    assert _kept(repo, out, tip, LINES, None) is not None
    assert _kept(repo, out, tip, LINES[:1], None) is None
    assert _kept(repo, out, tip, LINES, ("ARCH=powerpc", "CROSS_COMPILE=powerpc64le-linux-gnu-")) is None
    assert _kept(repo, out, "0" * 40, LINES, None) is None  # a commit this repository does not have
    (out / ".config").write_text("CONFIG_PRINTK=y\nCONFIG_MODULES=y\n")  # the series' make runs with OUT writable
    assert _kept(repo, out, tip, LINES, None) is None
    (out / ".config").write_text("CONFIG_PRINTK=y\n")
    configured.forget(out)  # a configure about to run
    assert _kept(repo, out, tip, LINES, None) is None
    assert not configured.stamp_path(out).exists() and (out / ".config").exists()


def test_kept_after_the_repository_of_the_commit_it_was_made_for_is_gone(tmp_path: Path) -> None:
    """A review's patched commit is made in its own shadow repository, removed when it ends: the next review's build
    (another shadow, another commit) keeps the configuration when no file Kconfig reads differs, and only then."""
    out = tmp_path / "build-vm-x86_64"
    out.mkdir()
    (out / ".config").write_text("CONFIG_PRINTK=y\n")
    shadows = []
    for name, c_text in (("one", "a\n"), ("two", "b\n")):
        repo = tmp_path / name
        repo.mkdir()
        _git(repo, "init", "-q")
        _commit(repo, "init/Kconfig", "config PRINTK\n\tbool\n")
        shadows.append((repo, _commit(repo, "lib/vdso/getrandom.c", c_text)))
    (first, first_commit), (second, second_commit) = shadows
    configured.remember(out, configured.inputs(first / ".git", first_commit), LINES, None, ())
    shutil.rmtree(first)  # the first review's shadow is removed
    assert _kept(second, out, second_commit, LINES, None) == ()
    kconfig = _commit(second, "init/Kconfig", "config PRINTK\n\tbool \"printk\"\n")
    assert _kept(second, out, kconfig, LINES, None) is None
