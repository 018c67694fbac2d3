"""Issue 30, item 2, with the kernel's own checkers: every fixture series reviewed on the
kernel-shaped base with Debian 6.12's scripts/checkpatch.pl and scripts/get_maintainer.pl
(copied from the real tree, reading the base's own MAINTAINERS). Their reports are where the
trial's replies repeated themselves: the same "To/Cc misses" paragraph per patch, checkpatch's
block with a `FILE:` line at column 0. Each reply keeps the rules of tests/report/properties.py,
and the Cc check is an info said once per series."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.model import Level
from reviewer.tree.plainrepo import build_base_repo
from tests.conftest import FIXTURES
from tests.realkernel.kernel import show
from tests.report import gitseries
from tests.report.properties import SECTION
from tests.report.test_reply_properties import FILES, check_all, reviewed

SCRIPTS = ("scripts/checkpatch.pl", "scripts/get_maintainer.pl", "scripts/spelling.txt", "scripts/const_structs.checkpatch")
# get_maintainer.pl and checkpatch.pl insist on the top of a kernel tree: these must exist there.
TOP_FILES, TOP_DIRS = ("COPYING", "CREDITS", "Kbuild", "README"), ("include", "drivers", "fs", "init", "ipc", "kernel")


@pytest.fixture(scope="module")
def base(linux: Path, linux_head: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("scripts") / "linux"
    build_base_repo(FIXTURES / "kernel-mini", repo)
    for script in SCRIPTS:
        (repo / script).parent.mkdir(exist_ok=True)
        (repo / script).write_text(show(linux, linux_head, script))
    for name in TOP_FILES:
        (repo / name).write_text("")
    for name in TOP_DIRS:
        (repo / name).mkdir(exist_ok=True)
    return repo


@pytest.mark.parametrize("path", [*FILES, "made"], ids=lambda p: str(p.relative_to(FIXTURES)) if isinstance(p, Path) else p)
def test_every_reply_with_the_kernels_checkers(path: Path | str, base: Path, tmp_path: Path) -> None:
    target = gitseries.not_applying(base, tmp_path / "s.mbox") if path == "made" else path
    assert isinstance(target, Path)
    result = reviewed(target, base)
    stage = next(st for st in result.stages if st.name == "check")
    assert stage.detail.endswith(("checkpatch.pl, get_maintainer.pl", "checkpatch.pl")), stage.detail  # both really ran
    check_all(result)
    cc = [f for f in result.findings if f.rule == "get-maintainer/missing-cc"]
    sections = [m["name"] for f in cc if (m := SECTION.search(f.message))]
    assert all(f.level is Level.INFO for f in cc) and len(set(sections)) == len(sections) == len(cc), [f.message for f in cc]


def test_the_demo_series_says_each_missing_cc_once(base: Path) -> None:
    """The v4 series Cc's neither linux-crypto (VDSO GETRANDOM) nor the selftests' maintainer, in 3 of its 4 patches."""
    result = reviewed(FIXTURES / "series/loongarch-vdso-getrandom-v4.mbox", base)
    cc = sorted(f.message for f in result.findings if f.rule == "get-maintainer/missing-cc")
    assert cc == ["every patch touches VDSO GETRANDOM, but To/Cc misses the list linux-crypto@vger.example.org",
                  "patches 2/4, 3/4 and 4/4 touch KERNEL SELFTEST FRAMEWORK, but To/Cc misses all its maintainers "
                  "(Selma Tester <selma@example.org>)"]
    text = check_all(result)
    assert "To/Cc misses" not in text  # an info: in the terminal and the JSON, not in the reply
