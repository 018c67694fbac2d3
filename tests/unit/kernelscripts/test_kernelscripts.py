"""checkpatch.pl and get_maintainer.pl outputs saved from Debian's 6.12 tree (fixtures/kernelscripts/),
parsed into findings; the mails they read and the map from mail lines to file lines."""
from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from reviewer import config
from reviewer.kernelscripts import Options, checkpatch, gather, get_maintainer, review
from reviewer.kernelscripts.mails import Where, render
from reviewer.model import Level, Patch, Person, Series
from reviewer.series import fetch
from reviewer.series.patchparse import parse_diff
from tests.conftest import FIXTURES

HERE = FIXTURES / "kernelscripts"
DIFF = """diff --git a/drivers/net/dummy.c b/drivers/net/dummy.c
index e9c5e1e11..5c7f2ee94 100644
--- a/drivers/net/dummy.c
+++ b/drivers/net/dummy.c
@@ -10,3 +10,4 @@ static int x;
 int a;
-int b;
+int c;
+int d;
 int e;
diff --git a/net/new.c b/net/new.c
new file mode 100644
index 000000000..111111111
--- /dev/null
+++ b/net/new.c
@@ -0,0 +1,2 @@
+// SPDX-License-Identifier: GPL-2.0
+int f;

base-commit: c4bac1c886854f5c8a081f90908d249b47d5d650
"""


def _patch(diff: str = DIFF, to: tuple[str, ...] = (), cc: tuple[str, ...] = ()) -> Patch:
    return Patch(1, 2, "net: Two files", "m@x", Person("A U Thor", "author@example.org"), None,
                 "A message.\n\nSigned-off-by: A U Thor <author@example.org>\n", diff, files=parse_diff(diff), to=to, cc=cc)


def _series(*patches: Patch) -> Series:
    return Series("s", 1, "m@x", Person("A U Thor", "author@example.org"), None, len(patches), patches)


def _hello() -> Patch:
    series = fetch.build_series(fetch.read_mbox(HERE / "dummy-hello.mbox"), "dummy-hello.mbox")
    patch = series.patches[0]
    return dataclasses.replace(patch, files=parse_diff(patch.diff))


def test_the_mail_is_format_patch_shaped_and_maps_lines_to_files() -> None:
    mail = render(_patch())
    lines = mail.text.splitlines()
    assert lines[:2] == ["From: A U Thor <author@example.org>", "Subject: [PATCH 1/2] net: Two files"]
    assert "---" in lines and lines[lines.index("---") + 1].startswith("diff --git ")
    at = {ln: n for n, ln in enumerate(lines, 1)}
    assert mail.where(at["A message."]) == Where()
    assert mail.where(at["+int c;"]) == Where("drivers/net/dummy.c", 11, "int c;")
    assert mail.where(at["+int d;"]) == Where("drivers/net/dummy.c", 12, "int d;")
    assert mail.where(at[" int e;"]) == Where("drivers/net/dummy.c", 13)
    assert mail.where(at["-int b;"]) == Where("drivers/net/dummy.c")
    assert mail.where(at["+int f;"]) == Where("net/new.c", 2, "int f;")
    assert mail.where(at["base-commit: c4bac1c886854f5c8a081f90908d249b47d5d650"]) == Where()
    assert mail.where(len(lines) + 1) == Where()


def test_checkpatch_reports_become_findings_at_the_patch_file_and_line() -> None:
    mail = render(_hello())
    found = list(checkpatch.parse((HERE / "dummy-hello.checkpatch.txt").read_text(), mail))
    got = [(f.rule, f.level, f.patch, f.path, f.line) for f in found]
    assert got == [
        ("checkpatch/COMMIT_LOG_LONG_LINE", Level.WARNING, 1, None, None),
        ("checkpatch/TRAILING_WHITESPACE", Level.ERROR, 1, "drivers/net/dummy.c", 169),
        ("checkpatch/PRINTK_WITHOUT_KERN_LEVEL", Level.WARNING, 1, "drivers/net/dummy.c", 169),
        ("checkpatch/MISSING_SIGN_OFF", Level.ERROR, 1, None, None),  # reported at the mail's end: the whole patch
    ]
    assert found[1].quote == ('+\tprintk("hello\\n"); ',) and found[1].message == "trailing whitespace"
    ignored = list(checkpatch.parse((HERE / "dummy-hello.checkpatch.txt").read_text(), mail, ["TRAILING_WHITESPACE"]))
    assert [f.rule for f in ignored] == ["checkpatch/COMMIT_LOG_LONG_LINE", "checkpatch/PRINTK_WITHOUT_KERN_LEVEL",
                                         "checkpatch/MISSING_SIGN_OFF"]


def test_check_reports_are_info_and_other_lines_are_ignored() -> None:
    mail = render(_patch())
    text = "-:28: CHECK:CAMELCASE: Avoid CamelCase: <fooBar>\nNOTE: For some of the reported defects\nNo codespell typos\n"
    (found,) = checkpatch.parse(text, mail)
    assert (found.rule, found.level, found.path, found.line) == ("checkpatch/CAMELCASE", Level.INFO, "net/new.c", 2)


def test_checkpatch_command_line() -> None:
    tree = Path("/src/linux")
    args = checkpatch.argv(tree, checkpatch.Options(strict=True, codespell_file=Path("/d.txt"),
                                                    ignore=frozenset({"LONG_LINE", "CAMELCASE"})))
    assert args[:2] == ["perl", "/src/linux/scripts/checkpatch.pl"] and args[-1] == "-"
    for flag in ("--root=/src/linux", "--terse", "--no-summary", "--show-types", "--emacs", "--strict",
                 "--codespell", "--codespellfile=/d.txt", "--ignore=CAMELCASE,LONG_LINE"):
        assert flag in args
    assert "--strict" not in checkpatch.argv(tree, checkpatch.Options())
    # --mailback would make checkpatch exit before its end-of-patch checks on an otherwise clean patch
    assert not [a for a in args + checkpatch.argv(tree, checkpatch.Options()) if a.startswith("--mailback")]


def test_get_maintainer_sections_once_each_in_order() -> None:
    sections = get_maintainer.parse((HERE / "tcp-e1000.sections.txt").read_text())
    assert [s.name for s in sections] == ["NETWORKING [TCP]", "NETWORKING [IPv4/IPv6]", "NETWORKING [GENERAL]", "THE REST",
                                          "INTEL ETHERNET DRIVERS", "NETWORKING DRIVERS"]
    intel = sections[4]
    assert intel.maintainers == ("Tony Nguyen <anthony.l.nguyen@intel.com>", "Przemek Kitszel <przemyslaw.kitszel@intel.com>")
    assert intel.lists == ("intel-wired-lan@lists.osuosl.org",) and "drivers/net/ethernet/intel/" in intel.files
    assert sections[2].reviewers == ("Simon Horman <horms@kernel.org>",)


E1000 = "drivers/net/ethernet/intel/e1000/e1000_main.c"
TCP_DIFF = "".join(f"diff --git a/{p} b/{p}\nindex 1..2 100644\n--- a/{p}\n+++ b/{p}\n@@ -1,1 +1,2 @@\n x\n+y\n"
                   for p in ("net/ipv4/tcp.c", E1000))


def test_missing_cc_names_the_section_its_file_and_what_is_missing() -> None:
    sections = get_maintainer.parse((HERE / "tcp-e1000.sections.txt").read_text())
    patch = _patch(TCP_DIFF, to=("netdev@vger.kernel.org",),
                   cc=("Eric Dumazet <edumazet@google.com>", "davem@davemloft.net", "Andrew Lunn <andrew@lunn.ch>"))
    found = list(get_maintainer.missing_cc([patch], [sections]))
    assert [(f.rule, f.level, f.patch, f.path) for f in found] == [("get-maintainer/missing-cc", Level.INFO, 1, E1000)]
    assert "INTEL ETHERNET DRIVERS" in found[0].message and "intel-wired-lan@lists.osuosl.org" in found[0].message
    assert "all its maintainers (Tony Nguyen" in found[0].message
    # andrew+netdev@ is Andrew's sub-address: Cc'ing andrew@ counts; LKML (THE REST) is never required
    everyone = patch.cc + ("intel-wired-lan@lists.osuosl.org", "anthony.l.nguyen@intel.com")
    assert list(get_maintainer.missing_cc([dataclasses.replace(patch, cc=everyone)], [sections])) == []


def test_missing_list_alone_is_reported() -> None:
    sections = get_maintainer.parse((HERE / "tcp-e1000.sections.txt").read_text())[:1]
    (found,) = get_maintainer.missing_cc([_patch(TCP_DIFF, to=("edumazet@google.com",))], [sections])
    assert found.message == "touches NETWORKING [TCP], but To/Cc misses the list netdev@vger.kernel.org"
    assert found.path == "net/ipv4/tcp.c"



def test_missing_cc_is_said_once_for_the_series_naming_its_patches() -> None:
    """Issue 30: a section several patches touch without Cc'ing it is one info, not one warning per patch."""
    sections = get_maintainer.parse((HERE / "tcp-e1000.sections.txt").read_text())[:1]
    patches = [dataclasses.replace(_patch(TCP_DIFF, to=to), index=i, total=3)
               for i, to in ((1, ("edumazet@google.com",)), (2, ("netdev@vger.kernel.org", "edumazet@google.com")),
                             (3, ("edumazet@google.com",)))]
    (found,) = get_maintainer.missing_cc(patches, [sections] * 3)
    assert (found.level, found.patch, found.path) == (Level.INFO, None, "net/ipv4/tcp.c")
    assert found.message == "patches 1/3 and 3/3 touch NETWORKING [TCP], but To/Cc misses the list netdev@vger.kernel.org"
    (every,) = get_maintainer.missing_cc(patches[:1] * 3, [sections] * 3)
    assert every.message.startswith("every patch touches NETWORKING [TCP], ")

def test_recipients_for_an_unmailed_series() -> None:
    sections = get_maintainer.parse((HERE / "tcp-e1000.sections.txt").read_text())
    assert not get_maintainer.mailed(_series(_patch()))
    assert get_maintainer.mailed(_series(_patch(cc=("x@y",))))
    found = get_maintainer.recipients(sections)
    assert (found.rule, found.level, found.patch) == ("get-maintainer/recipients", Level.INFO, None)
    to, cc = found.message.removeprefix("send to: To: ").split("; Cc: ")
    assert "Eric Dumazet <edumazet@google.com>" in to and "Torvalds" not in to
    assert cc.split(", ") == ["netdev@vger.kernel.org", "Simon Horman <horms@kernel.org>", "linux-kernel@vger.kernel.org",
                              "intel-wired-lan@lists.osuosl.org"]


def test_a_tree_without_the_scripts_is_a_note(tmp_path: Path) -> None:
    out = review(_series(_patch()), tmp_path, Options())
    assert out.findings == () and out.note == "kernel scripts skipped: the tree has no scripts/checkpatch.pl, scripts/get_maintainer.pl"
    assert review(_series(_patch()), tmp_path, Options(checkpatch=False, get_maintainer=False)).note.endswith("(--no-checkpatch)")


def test_gather_keeps_the_order() -> None:
    assert gather(lambda n: n * n, list(range(20)), 4) == [n * n for n in range(20)]
    assert gather(lambda n: n, [1, 2], 1) == [1, 2]


def test_checkpatch_ignore_from_git_config_and_the_tree(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for value in ("long_line,CAMELCASE", "SPDX_LICENSE_TAG"):
        subprocess.run(["git", "-C", str(tmp_path), "config", "--add", "reviewer.checkpatchIgnore", value], check=True)
    (tmp_path / ".reviewer.toml").write_text('[checkpatch]\nignore = ["FILE_PATH_CHANGES"]\n')
    got = config.load(tmp_path, tmp_path).checkpatch_ignore
    assert got == {"LONG_LINE", "CAMELCASE", "SPDX_LICENSE_TAG", "FILE_PATH_CHANGES"}
