"""`review install-hook`: a real push to a local bare repository, blocked by an error finding, allowed after the fix."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from reviewer.errors import ExitStatus
from tests.conftest import FIXTURES, git
from tests.helpers import review

PATCHES = FIXTURES / "format-patch" / "loongarch-vdso-getrandom-v4"


def patches(dest: Path, drop_select: bool) -> list[Path]:
    """The demo's four patches; with DROP_SELECT patch 1 no longer selects VDSO_GETRANDOM."""
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for src in sorted(PATCHES.glob("v4-000[1-9]-*.patch")):
        text = src.read_text()
        if drop_select:
            text = text.replace("+\tselect VDSO_GETRANDOM\n", "+\t# select VDSO_GETRANDOM\n")
        (dest / src.name).write_text(text)
        out.append(dest / src.name)
    return out


def _clone(tmp_path: Path, kernel_repo: Path) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(kernel_repo), str(bare)], check=True)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True)
    git(work, "checkout", "-q", "-b", "feature")
    return work


def _push(work: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(work), "push", "origin", "feature"], capture_output=True, text=True, timeout=300)


def test_push_blocked_then_allowed(tmp_path: Path, kernel_repo: Path) -> None:
    work = _clone(tmp_path, kernel_repo)
    git(work, "am", "-q", *map(str, patches(tmp_path / "bad", drop_select=True)))
    installed = review("install-hook", "-C", work, tmp=tmp_path / "tmp")
    assert installed.rc == 0 and "installed the pre-push hook" in installed.stdout, installed.stderr

    blocked = _push(work)
    assert blocked.returncode != 0
    out = blocked.stdout + blocked.stderr
    assert "arch/loongarch/Kconfig: [error] arch/loongarch/Kconfig does not select VDSO_GETRANDOM" in out
    assert "review: error: push blocked" in out and "Traceback" not in out
    assert "feature" not in git(tmp_path / "remote.git", "branch")

    git(work, "reset", "-q", "--hard", "origin/master")
    git(work, "am", "-q", *map(str, patches(tmp_path / "good", drop_select=False)))
    allowed = _push(work)
    assert allowed.returncode == 0, allowed.stderr
    assert "feature" in git(tmp_path / "remote.git", "branch")

    removed = review("uninstall-hook", "-C", work, tmp=tmp_path / "tmp")
    assert removed.rc == 0 and "removed the pre-push hook" in removed.stdout
    assert not (work / ".git" / "hooks" / "pre-push").exists()
    again = review("uninstall-hook", "-C", work, tmp=tmp_path / "tmp")
    assert again.rc == 0 and "nothing to do" in again.stdout
    assert list((tmp_path / "tmp").iterdir()) == []


def test_foreign_hook_is_left_alone(tmp_path: Path, kernel_repo: Path) -> None:
    work = _clone(tmp_path, kernel_repo)
    hook = work / ".git" / "hooks" / "pre-push"
    hook.write_text("#!/bin/sh\nexit 0\n")
    review("install-hook", "-C", work, tmp=tmp_path / "tmp").assert_one_line_error(ExitStatus.CONFIG, "was not installed by reviewer")
    review("uninstall-hook", "-C", work, tmp=tmp_path / "tmp").assert_one_line_error(ExitStatus.CONFIG, "was not installed by reviewer")
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"
    review("install-hook", "-C", tmp_path / "tmp", tmp=tmp_path / "tmp2").assert_one_line_error(ExitStatus.CONFIG, "not a git repository")
    shutil.rmtree(work)
