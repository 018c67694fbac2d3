"""`review install-hook`: a real push to a local bare repository, blocked by an error finding, allowed after the fix."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from reviewer.errors import ExitStatus
from tests.conftest import FIXTURES, git
from tests.helpers import review

PATCHES = FIXTURES / "format-patch" / "loongarch-vdso-getrandom-v4"


def patches(dest: Path, *, drop_select: bool) -> list[Path]:
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


# --- a new branch: its base is never the root commit ---------------------------------------------------------

def _unsigned_commit(work: Path) -> None:
    """One commit without the author's Signed-off-by: an error finding (author-signoff)."""
    (work / "mm" / "dmapool.c").write_text((work / "mm" / "dmapool.c").read_text() + "/* a comment for the test */\n")
    git(work, "commit", "-q", "-a", "-m", "mm/dmapool: Add a comment\n\nA comment, no Signed-off-by.")


def _empty_remote(tmp_path: Path, work: Path, name: str) -> Path:
    bare = tmp_path / f"{name}.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    git(work, "remote", "add", name, str(bare))
    return bare


def _push_to(work: Path, remote: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(work), "push", remote, "feature"], capture_output=True, text=True, timeout=300)


def test_a_new_branch_to_a_remote_without_tracking_refs_is_reviewed(tmp_path: Path, kernel_repo: Path) -> None:
    """The fork has no refs yet: the commits since the branch left origin's are reviewed (was: since the root, i.e.
    nothing, and the unsigned commit went through)."""
    work = _clone(tmp_path, kernel_repo)
    _unsigned_commit(work)
    fork = _empty_remote(tmp_path, work, "fork")
    assert review("install-hook", "-C", work, tmp=tmp_path / "tmp").rc == 0
    blocked = _push_to(work, "fork")
    out = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, out
    base = git(work, "rev-parse", "HEAD~1").strip()
    assert f"review: checking refs/heads/feature ({base}..{git(work, 'rev-parse', 'HEAD').strip()}, the commits since where it leaves " \
           "the remote-tracking branches) before pushing to fork" in out, out
    assert "[error]" in out and "(author-signoff)" in out and "review: error: push blocked" in out, out
    assert git(fork, "branch") == ""

    git(work, "commit", "-q", "--amend", "--no-edit", "-s")  # signed: the push goes through
    allowed = _push_to(work, "fork")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "feature" in git(fork, "branch")


def test_a_new_branch_with_no_base_known_is_refused_with_the_fix(tmp_path: Path, kernel_repo: Path) -> None:
    """No remote-tracking ref and no upstream: the hook says so and blocks; the upstream it names fixes it."""
    work = kernel_repo
    git(work, "checkout", "-q", "-b", "feature")
    _unsigned_commit(work)
    fork = _empty_remote(tmp_path, work, "fork")
    assert review("install-hook", "-C", work, tmp=tmp_path / "tmp").rc == 0
    refused = _push_to(work, "fork")
    assert refused.returncode != 0
    assert "review: error: cannot tell which commits of feature are new: fork has no default branch here" in refused.stderr, refused.stderr
    assert "hint: give it one (git branch --set-upstream-to=UPSTREAM feature)" in refused.stderr
    assert git(fork, "branch") == ""

    git(work, "branch", "-q", "--set-upstream-to=master", "feature")  # the local branch it forked from
    blocked = _push_to(work, "fork")
    out = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0 and "the commits since where it leaves master" in out and "(author-signoff)" in out, out
    assert git(fork, "branch") == ""
