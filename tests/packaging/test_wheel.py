"""A wheel built from the clone, installed in a fresh venv, gives the shipped rules and a working demo.

The wheel is built (`pip wheel --no-deps --no-build-isolation`) from a copy of the clone's files as
git sees them (tracked and untracked, not ignored), so nothing is written into the clone. The fresh
venv has no pip and no access to the clone: the wheel is installed into it by this interpreter's pip
(`pip --python`), and its dependencies are the ones the wheel declares, closed over theirs, taken
from this environment (a directory of links to just those distributions, named by a .pth file): no
registry is asked, and a module the wheel imports without declaring it fails. `review` then runs
from a directory outside the clone with a clean environment, and its output is compared with the
dev install's (`review` beside this interpreter).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.slow

DEMO_MBOX = "loongarch-vdso-getrandom-v4.mbox"
RULE_LINE = re.compile(r"^(\S+) \[\w+\] \(rule, (.+)\)$", re.MULTILINE)


def _run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _copy_clone(dest: Path) -> None:
    """The clone's files as git sees them (symlinks kept): what a fresh clone plus the working tree holds."""
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], ROOT)
    for name in filter(None, listed.split("\0")):
        src = ROOT / name
        if not src.is_symlink() and not src.exists():
            continue  # deleted in the working tree, not yet in the index
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dest / name)
        else:
            shutil.copy2(src, dest / name)


def _requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return Parser().parsestr(zf.read(meta).decode()).get_all("Requires-Dist") or []


def _closure(requirements: list[str]) -> list[metadata.Distribution]:
    """The installed distributions that REQUIREMENTS need (no extras of the wheel), and what they need."""
    todo = [(Requirement(r), "") for r in requirements]
    found: dict[str, metadata.Distribution] = {}
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        dist = metadata.distribution(req.name)
        assert req.specifier.contains(dist.version, prereleases=True), f"{req} but {dist.version} is installed"
        key = dist.metadata["Name"].lower()
        if key in found:
            continue
        found[key] = dist
        for wanted in ("", *req.extras):
            todo += [(Requirement(r), wanted) for r in dist.requires or []]
    return list(found.values())


def _link_deps(dists: list[metadata.Distribution], dest: Path) -> None:
    """A directory with a link to each top-level package, module and dist-info of DISTS."""
    dest.mkdir()
    for dist in dists:
        site = Path(str(dist.locate_file("")))
        tops = {f.parts[0] for f in dist.files or () if f.parts[0] not in ("..", "__pycache__") and not f.parts[0].endswith(".pth")}
        assert tops, f"{dist.metadata['Name']}: no files recorded"
        for top in tops:
            link = dest / top
            if not link.is_symlink():
                link.symlink_to(site / top)
            assert link.resolve() == (site / top).resolve(), f"{top} is in two distributions"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel of this clone installed, and only its declared dependencies."""
    top = tmp_path_factory.mktemp("wheel")
    _copy_clone(top / "src")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", "-w", top / "dist",
          top / "src"], top)
    (wheel,) = (top / "dist").glob("reviewer-*.whl")
    env = top / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", env], top)
    _run([sys.executable, "-m", "pip", "--python", env / "bin" / "python", "install", "-q", "--no-deps", "--no-index", wheel], top)
    purelib = _run([env / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], top).strip()
    _link_deps(_closure(_requirements(wheel)), top / "deps")
    (Path(purelib) / "reviewer-test-deps.pth").write_text(f"{top / 'deps'}\n")
    return env


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A working directory outside the clone and a clean environment (its own HOME, no PYTHON* variables)."""
    top = tmp_path_factory.mktemp("outside")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(top / "home"), "LANG": "C.UTF-8", "TMPDIR": str(top)}
    (top / "home").mkdir()
    (top / "work").mkdir()
    return top / "work", env


def review(bin_dir: Path, args: list[str], outside: tuple[Path, dict[str, str]]) -> str:
    return _finish(_start(bin_dir, args, outside))


def _start(bin_dir: Path, args: list[str], outside: tuple[Path, dict[str, str]]) -> subprocess.Popen[str]:
    cwd, env = outside
    return subprocess.Popen([str(bin_dir / "review"), *args], cwd=cwd, env={**env, "PATH": f"{bin_dir}:{env['PATH']}"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str], timeout: float = 300) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{proc.args} exited {proc.returncode}:\n{out[-3000:]}\n{err[-3000:]}"
    return out


def dev_bin() -> Path:
    review_script = Path(sys.executable).parent / "review"
    assert review_script.is_file(), f"the dev install's review is not beside {sys.executable}"
    return review_script.parent


TEMPLATES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "reviewer").glob("*/templates/*.html"))


def test_the_wheel_carries_the_rules_and_only_the_demo_fixtures(venv: Path, tmp_path: Path) -> None:
    (wheel,) = (venv.parent / "dist").glob("reviewer-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    data = sorted(n for n in names if not n.endswith(".py") and ".dist-info/" not in n)
    rules = sorted(p.name for p in (ROOT / "rules").glob("*.toml"))
    assert data == sorted([*(f"reviewer/rules/shipped/{n}" for n in [*rules, "README.md"]),
                           f"reviewer/demo_data/{DEMO_MBOX}", "reviewer/demo_data/kernel-mini.tar", "reviewer/kernel/guest_init.c",
                           *TEMPLATES])
    assert not [n for n in names if n.startswith(("fixtures/", "rules/", "tests/"))]
    with zipfile.ZipFile(wheel) as zf:
        for name in rules + ["README.md"]:
            assert zf.read(f"reviewer/rules/shipped/{name}") == (ROOT / "rules" / name).read_bytes()
        assert zf.read(f"reviewer/demo_data/{DEMO_MBOX}") == (FIXTURES / "series" / DEMO_MBOX).read_bytes()
        assert zf.read("reviewer/kernel/guest_init.c") == (ROOT / "reviewer" / "kernel" / "guest_init.c").read_bytes()
        for name in TEMPLATES:
            assert zf.read(name) == (ROOT / name).read_bytes()
        (tmp_path / "t.tar").write_bytes(zf.read("reviewer/demo_data/kernel-mini.tar"))
    # The tar holds the demo tree as git records it: every file, its mode, the symlink as a symlink.
    tree = FIXTURES / "kernel-mini"
    with tarfile.open(tmp_path / "t.tar") as tar:
        members = {m.name: (m.type, m.isfile() and m.mode & 0o100 != 0, m.linkname) for m in tar.getmembers()}
        for m in tar.getmembers():
            if m.isfile():
                assert tar.extractfile(m).read() == (tree / m.name).read_bytes()  # type: ignore[union-attr]
    walked = {str(p.relative_to(tree)): (tarfile.SYMTYPE if p.is_symlink() else tarfile.DIRTYPE if p.is_dir() else tarfile.REGTYPE,
                                         not p.is_symlink() and p.is_file() and os.access(p, os.X_OK),
                                         os.readlink(p) if p.is_symlink() else "")
              for p in tree.rglob("*")}
    assert members == walked


def test_the_html_page_from_the_wheel(venv: Path, outside: tuple[Path, dict[str, str]]) -> None:
    """The page's template is package data: the wheel's review finds it (and jinja2) outside the clone."""
    out = review(venv / "bin", [str(FIXTURES / "series" / DEMO_MBOX), "--format", "html"], outside)
    assert out.startswith("<!DOCTYPE html>") and "No errors or warnings; the series was not applied." in out


def test_review_rules_lists_the_shipped_rules_from_the_package(venv: Path, outside: tuple[Path, dict[str, str]]) -> None:
    out = review(venv / "bin", ["rules"], outside)
    listed = dict(RULE_LINE.findall(out))
    assert sorted(listed) == sorted(p.stem for p in (ROOT / "rules").glob("*.toml"))
    site = _run([venv / "bin" / "python", "-c", "import reviewer; print(reviewer.__file__)"], *outside).strip()
    assert Path(site).is_relative_to(venv)
    assert all(Path(path).is_relative_to(Path(site).parent / "rules" / "shipped") for path in listed.values()), listed
    # The same text as the dev install's, but for where the rule files are.
    dev = review(dev_bin(), ["rules"], outside)
    assert re.sub(r"\(rule, .*/", "(rule, ", out) == re.sub(r"\(rule, .*/", "(rule, ", dev)


VARYING = ("verdict", "verdict_text", "test", "p", "host_load")  # a benchmark's keys that vary from run to run


def _demo_facts(report: dict[str, Any]) -> dict[str, Any]:
    """What the demo found, without what varies from run to run (times, paths, benchmark figures)."""
    series = {k: v for k, v in report["series"].items() if k != "source"}
    return {
        "series": series,
        "findings": [f for f in report["findings"] if f["rule"] != "benchmarks"],  # slowdowns: timing, not install
        "stages": [(s["name"], s["status"]) for s in report["stages"]],
        "apply": report["apply"],
        "selftests": [(t["name"], t["tree"], t["env"], t["result"], [st["result"] for st in t["subtests"]]) for t in report["selftests"]],
        "benchmarks": sorted(json.dumps({k: v for k, v in b.items() if not isinstance(v, (int, float, list)) and k not in VARYING},
                                        sort_keys=True)
                             for b in report["benchmarks"]),
    }


def test_review_demo_from_the_wheel_finds_what_the_dev_install_finds(venv: Path, outside: tuple[Path, dict[str, str]]) -> None:
    dev_demo = _start(dev_bin(), ["demo", "--format", "json"], outside)  # at the same time: 15 s each
    try:
        wheel = json.loads(review(venv / "bin", ["demo", "--format", "json"], outside))
    except BaseException:
        dev_demo.kill()
        dev_demo.wait()
        raise
    assert wheel["series"]["source"].startswith(str(venv))  # the wheel's copy of the series, not the clone's
    facts = _demo_facts(wheel)
    # The tree rebuilt from the tar is the base the series names, and everything applies and passes.
    assert facts["apply"]["base"] == (FIXTURES / "base-commit.txt").read_text().strip() == wheel["series"]["base_commit"]
    assert {p["status"] for p in facts["apply"]["patches"]} == {"applied"}
    assert ("selftests", "ok") in facts["stages"] and facts["selftests"]
    assert {t[3] for t in facts["selftests"]} == {"pass"}
    dev = json.loads(_finish(dev_demo))
    assert dev["series"]["source"] == str(FIXTURES / "series" / DEMO_MBOX)
    assert facts == _demo_facts(dev)
