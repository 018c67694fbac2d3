"""The wheel's build step: put the shipped rules and the demo's fixtures into the package.

They live at the top of the clone (rules/, fixtures/), where `pip install -e .` reads them in
place (reviewer/rules/__init__.py, reviewer/demo.py); a built wheel gets copies of them:
  reviewer/rules/shipped/   rules/*.toml and rules/README.md
  reviewer/demo_data/       the demo series (one mbox) and kernel-mini.tar, the demo's tree
The tree is a tar because a wheel cannot hold a symlink (tools/arch/x86/vdso is one) and the
demo's base commit, which the series' base-commit: names, depends on every file's mode and kind.
The rest of fixtures/ is test data and stays out.
"""
from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
RULES = ROOT / "rules"
DEMO_MBOX = ROOT / "fixtures" / "series" / "loongarch-vdso-getrandom-v4.mbox"
DEMO_TREE = ROOT / "fixtures" / "kernel-mini"


def ship_rules(dest: Path) -> None:
    files = [*sorted(RULES.glob("*.toml")), RULES / "README.md"]
    shutil.rmtree(dest, ignore_errors=True)  # a rule deleted since the last build must not linger in build/
    dest.mkdir(parents=True)
    for path in files:
        shutil.copyfile(path, dest / path.name)


def ship_demo(dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    shutil.copyfile(DEMO_MBOX, dest / DEMO_MBOX.name)
    with tarfile.open(dest / "kernel-mini.tar", "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(DEMO_TREE.rglob("*")):  # rglob does not descend into the symlinked directory
            tar.add(path, arcname=str(path.relative_to(DEMO_TREE)), recursive=False, filter=_plain)


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """The same archive from the same files: no owner or time, the mode git records (644, 755 or a link)."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    if info.isfile():
        info.mode = 0o755 if info.mode & 0o100 else 0o644
    return info


def check_sources() -> None:
    """An sdist or a copy that lost them must not give a wheel whose demo or rules are missing."""
    link = DEMO_TREE / "tools" / "arch" / "x86" / "vdso"
    missing = [str(p) for p in (RULES / "README.md", DEMO_MBOX, DEMO_TREE) if not p.exists()]
    if missing or not list(RULES.glob("*.toml")):
        raise SystemExit(f"reviewer build: the shipped rules or the demo fixtures are missing: {', '.join(missing) or 'rules/*.toml'}")
    if not link.is_symlink():
        raise SystemExit(f"reviewer build: {link} is not a symlink (the copy of the source tree followed it)")


class BuildPy(build_py):
    """build_py, plus the shipped rules and demo data in the build directory (not for -e: it reads the clone)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        check_sources()
        lib = Path(self.build_lib) / "reviewer"
        ship_rules(lib / "rules" / "shipped")
        ship_demo(lib / "demo_data")


class Sdist(sdist):
    """sdist, plus the demo tree's symlinks, which its file list leaves out (a wheel built from it needs them)."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        for link in (p for p in DEMO_TREE.rglob("*") if p.is_symlink()):
            dest = Path(base_dir) / link.relative_to(ROOT)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.symlink_to(os.readlink(link))


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
