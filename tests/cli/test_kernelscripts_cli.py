"""The kernel scripts through the command line, on the bundled kernel-shaped tree: without
scripts/ they are skipped with a note; with stand-in scripts the options reach them."""
from __future__ import annotations

from pathlib import Path

from reviewer.errors import ExitStatus
from tests.conftest import SERIES, git
from tests.helpers import review

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
# Stand-ins: checkpatch echoes the options it got (never --mailback, which hides its end-of-patch
# checks) as one warning at the mail's line 1 (a header);
# get_maintainer names one section whose list the demo series did not Cc.
CHECKPATCH = r"""#!/usr/bin/perl
my $opts = join(" ", grep { /^--(strict|codespell$|ignore|mailback)/ } @ARGV);
while (<STDIN>) { }
print "-:1: WARNING:STUB_TYPE: got [$opts]\n";
exit 1;
"""
GET_MAINTAINER = r"""#!/usr/bin/perl
print "LOONGARCH\nM:\tHuacai Chen <chenhuacai\@kernel.org>\nL:\tloongarch\@lists.linux.dev\nS:\tMaintained\nF:\tarch/loongarch/\n\n";
"""


def _with_scripts(repo: Path) -> Path:
    (repo / "scripts").mkdir(exist_ok=True)
    (repo / "scripts" / "checkpatch.pl").write_text(CHECKPATCH)
    (repo / "scripts" / "get_maintainer.pl").write_text(GET_MAINTAINER)
    return repo


def _run(repo: Path, tmp: Path, *args: str) -> dict:  # type: ignore[type-arg]
    result = review(DEMO, "--tree", repo, "--no-tests", "--format", "json", *args, cwd=repo, tmp=tmp)
    assert result.rc in (ExitStatus.OK, ExitStatus.FINDINGS), result.stderr
    result.assert_nothing_left()
    return result.json()  # type: ignore[no-any-return]


def _check_detail(doc: dict) -> str:  # type: ignore[type-arg]
    return next(st["detail"] for st in doc["stages"] if st["name"] == "check")


def test_a_tree_without_scripts_skips_them_with_a_note(kernel_repo: Path, tmp_path: Path) -> None:
    doc = _run(kernel_repo, tmp_path / "tmp")
    assert _check_detail(doc).endswith("; kernel scripts skipped: the tree has no scripts/checkpatch.pl, scripts/get_maintainer.pl")
    assert not [f for f in doc["findings"] if f["rule"].startswith(("checkpatch/", "get-maintainer/"))]


def test_options_and_config_reach_checkpatch(kernel_repo: Path, tmp_path: Path) -> None:
    repo = _with_scripts(kernel_repo)
    doc = _run(repo, tmp_path / "tmp")
    stub = [f for f in doc["findings"] if f["rule"] == "checkpatch/STUB_TYPE"]
    assert [(f["level"], f["patch"], f["path"], f["message"]) for f in stub] == [("warning", i, None, "got []") for i in (1, 2, 3, 4)]
    missing = [f for f in doc["findings"] if f["rule"] == "get-maintainer/missing-cc"]
    assert missing and all("loongarch@lists.linux.dev" in f["message"] for f in missing)
    git(repo, "config", "--add", "reviewer.checkpatchIgnore", "long_line,CAMELCASE")
    git(repo, "config", "--add", "reviewer.level.checkpatch", "info")
    doc = _run(repo, tmp_path / "tmp", "--checkpatch-strict", "--codespell")
    (first, *_) = [f for f in doc["findings"] if f["rule"] == "checkpatch/STUB_TYPE"]
    assert first["level"] == "info" and first["message"].startswith("got [--strict --codespell ")
    assert "--ignore=CAMELCASE,LONG_LINE" in first["message"]
    # new options: checkpatch runs again; get_maintainer's options did not change, so its results are reused
    assert _check_detail(doc).endswith("; checkpatch.pl --strict --codespell, get_maintainer.pl (4 of 4 from the cache)")
    doc = _run(repo, tmp_path / "tmp", "--no-checkpatch")
    assert not [f for f in doc["findings"] if f["rule"].startswith("checkpatch/")]
    assert _check_detail(doc).endswith("; get_maintainer.pl (4 of 4 from the cache)")


def test_a_tree_with_only_one_script_runs_that_one(kernel_repo: Path, tmp_path: Path) -> None:
    (kernel_repo / "scripts").mkdir(exist_ok=True)
    (kernel_repo / "scripts" / "get_maintainer.pl").write_text(GET_MAINTAINER)
    doc = _run(kernel_repo, tmp_path / "tmp")
    assert _check_detail(doc).endswith("; checkpatch.pl skipped: the tree has no scripts/checkpatch.pl, get_maintainer.pl")
    assert [f for f in doc["findings"] if f["rule"] == "get-maintainer/missing-cc"]
    assert not [f for f in doc["findings"] if f["rule"].startswith("checkpatch/")]
