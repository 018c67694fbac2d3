"""Every bad input: a one-line error, the documented exit code, no traceback, nothing left behind."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from tests.conftest import FIXTURES, SERIES, git
from tests.helpers import review
from tests.unit.series.test_patchparse import huge_diff

BAD = SERIES / "bad"


@pytest.mark.parametrize(
    "path,fragment",
    [
        ("does-not-exist.mbox", "no such file or directory"),
        (BAD / "empty.mbox", "empty input"),
        (BAD / "no-patch.mbox", "no patches found"),
        (BAD / "not-a-patch.eml", "no patches found"),
    ],
    ids=["missing", "empty", "no-patch", "not-a-patch"],
)
def test_unreadable_inputs(path: Path | str, fragment: str, tmp_path: Path) -> None:
    result = review(path, cwd=tmp_path, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, fragment)
    assert result.stdout == ""
    result.assert_nothing_left()


def test_directory_without_patches(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("nothing here\n")
    result = review(tmp_path / "out", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "no *.patch files")


def test_unknown_git_range(kernel_repo: Path, tmp_path: Path) -> None:
    before = git(kernel_repo, "status", "--porcelain"), git(kernel_repo, "rev-parse", "HEAD")
    result = review("-C", kernel_repo, "v9.99..HEAD", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "unknown revision 'v9.99'")
    assert (git(kernel_repo, "status", "--porcelain"), git(kernel_repo, "rev-parse", "HEAD")) == before


def test_empty_git_range(kernel_repo: Path, tmp_path: Path) -> None:
    result = review("-C", kernel_repo, "HEAD..HEAD", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "holds no commits")


def test_missing_revision(tmp_path: Path) -> None:
    result = review(SERIES / "loongarch-vdso-getrandom-v3-v4.mbox", "--revision", "7", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "there is no v7 of this series (found v3, v4)")


def test_message_id_when_lore_is_unreachable(tmp_path: Path) -> None:
    # Never the real lore from a test: a closed loopback port (tests/fetch/ has a real server).
    result = review("20240816110717.10249-1-xry111", "--lore-url", "http://127.0.0.1:9/all/", cwd=tmp_path, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "http://127.0.0.1:9/all/20240816110717.10249-1-xry111/: cannot connect")
    result = review("20240816110717.10249-1-xry111", "--offline", cwd=tmp_path, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "<20240816110717.10249-1-xry111> is not in the cache")


@pytest.mark.parametrize("args,fragment", [
    (("--format", "xml"), "invalid value for '--format' / '-f': 'xml' is not one of"),
    (("--nosuch",), "no such option: --nosuch"),
    (("--revision", "abc"), "invalid value for '--revision' / '-r': 'abc' is not a valid int"),
    (("extra",), "got unexpected extra argument(s) (extra)"),
    (("--tree",), "option '--tree' requires an argument"),
    (("--bench-runs", "-1"), "invalid value for '--bench-runs': -1 is not in the range x>=0"),
], ids=["bad-choice", "unknown-option", "not-a-number", "extra-argument", "missing-value", "out-of-range"])
def test_usage_error_is_two_lines_and_exit_2(args: tuple[str, ...], fragment: str, tmp_path: Path) -> None:
    """typer parses; its usage errors (a usage line, a "Try" line, a blank line, `Error: ...`) are said
    in the documented form: `review: error: ...` and one hint line."""
    result = review(SERIES / "single-patch.mbox", *args, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.USAGE, fragment)
    assert result.stderr.splitlines()[1] == "hint: `review --help` lists the options and what they take"


def test_a_subcommands_usage_error_names_its_help(tmp_path: Path) -> None:
    result = review("rules", "--nosuch", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.USAGE, "no such option: --nosuch")
    assert "`review rules --help`" in result.stderr


def test_tree_that_is_not_git(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    result = review(SERIES / "single-patch.mbox", "--tree", tmp_path / "plain", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.CONFIG, "not a git repository")
    result.assert_nothing_left()


@pytest.mark.parametrize("name", ["qp.mbox", "base64.mbox", "latin1.mbox", "crlf.mbox"])
def test_encodings_parse(name: str, tmp_path: Path) -> None:
    result = review(FIXTURES / "series" / "encodings" / name, "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    assert doc["patches"][0]["files"] and doc["patches"][0]["added"] > 0
    assert not [f for f in doc["findings"] if f["level"] == "error"]


def test_undeclared_8bit_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    result = review(BAD / "undeclared-8bit.mbox", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    assert [f["rule"] for f in result.json()["findings"]] == ["patch-encoding"]


def test_huge_patch(tmp_path: Path) -> None:
    mail = (
        "From: Big Author <big@example.org>\nSubject: [PATCH] lib: add a big table\n"
        "Message-Id: <huge-1@example.org>\nDate: Fri, 16 Aug 2024 11:07:17 +0800\n\n"
        "A very large generated table.\n\nSigned-off-by: Big Author <big@example.org>\n---\n"
        + huge_diff(50_000)
    )
    (tmp_path / "huge.eml").write_text(mail)
    result = review(tmp_path / "huge.eml", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    assert result.json()["patches"][0]["added"] == 50_000


def test_unknown_build_target(tmp_path: Path) -> None:
    result = review(SERIES / "loongarch-vdso-getrandom-v4.mbox", "--build", "--arch", "x86_64,sparc64", tmp=tmp_path)
    result.assert_one_line_error(ExitStatus.USAGE, "--arch 'x86_64,sparc64': unknown build target sparc64")
    assert "choose from x86_64, ppc64le, ppc32" in result.stderr


# --- what was an internal error (exit 70) or a silent wrong answer ----------------------------------------------------

DIFF = (b"---\n mm/dmapool.c | 1 +\n 1 file changed, 1 insertion(+)\n\n"
        b"diff --git a/mm/dmapool.c b/mm/dmapool.c\nindex 9d78463..17ce5f9 100644\n--- a/mm/dmapool.c\n+++ b/mm/dmapool.c\n"
        b"@@ -1,4 +1,5 @@\n // SPDX-License-Identifier: GPL-2.0-only\n+\n /*\n  * DMA pool allocator (kernel-mini "
        b"sketch).\n  *\n--\n2.46.0\n")
HEAD = (b"From jorg@example.org Sun Sep  1 09:00:00 2024\nFrom: Jorg Author <jorg@example.org>\nTo: linux-mm@lists.example.org\n"
        b"Subject: [PATCH] mm/dmapool: Add a blank line\nDate: Sun, 1 Sep 2024 09:00:00 +0000\n")
BODY = b"Keep the licence line apart.\n\nSigned-off-by: Jorg Author <jorg@example.org>\n"


def test_message_id_colon_at_is_made_up_and_reviewed(tmp_path: Path) -> None:
    # Was: IndexError in the email package's Message-ID parser (the bare id `@` bracketed as `<@>`).
    (tmp_path / "at.mbox").write_bytes(HEAD + b"Message-Id:@\n\n" + BODY + DIFF)
    result = review(tmp_path / "at.mbox", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    assert result.json()["series"]["msgid"].endswith("@reviewer.invalid")


@pytest.mark.parametrize("text", ["J\u00f6rg's note".encode(), b"J\xf6rg's note", b"caf\xc3\xa9 \xff\xfe"], ids=["utf8", "latin1", "junk"])
@pytest.mark.parametrize("msgid", [b"", b"Message-Id: <mp-1@example.org>\n"], ids=["no-id", "id"])
def test_non_ascii_multipart_whose_boundary_never_comes(text: bytes, msgid: bytes, tmp_path: Path) -> None:
    """Declared multipart, first boundary missing, 8-bit text, no Message-Id (hashed for a made-up one).
    Was: UnicodeEncodeError from as_bytes(). git mailinfo and b4 read nothing before the first boundary."""
    head = HEAD + msgid + b'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="=-=b1"\n\n'
    (tmp_path / "mp.mbox").write_bytes(head + text + b"\n\n" + BODY + DIFF)
    result = review(tmp_path / "mp.mbox", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "mp.mbox: no patches found")
    result.assert_nothing_left()


def test_mime_parts_nested_a_thousand_deep(tmp_path: Path) -> None:
    # Was: RecursionError in the email package's parser (and walk(), and b4, each a level deeper).
    depth = 1000
    parts = b"".join(b'--b%d\nContent-Type: multipart/mixed; boundary="b%d"\n\n' % (n, n + 1) for n in range(depth))
    ends = b"".join(b"--b%d--\n" % n for n in range(depth, -1, -1))
    data = HEAD + b'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="b0"\n\n' + parts + b"--b%d\n\n" % depth + BODY + DIFF + ends
    (tmp_path / "deep.mbox").write_bytes(data)
    result = review(tmp_path / "deep.mbox", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.FETCH, "deep.mbox: message 1: its MIME parts are nested")


@pytest.mark.parametrize("names", [(b"a/mm/dma\x00pool.c", b"b/mm/dma\x00pool.c"), (b"a/mm/dmapool.c", b"b/mm/dma\x00pool.c")],
                         ids=["both", "new-name"])
def test_a_nul_in_a_diff_path_with_a_tree(names: tuple[bytes, bytes], kernel_repo: Path, tmp_path: Path) -> None:
    """Was: ValueError (embedded null byte) passing the path to git rev-list (the base's guess)."""
    diff = DIFF.replace(b"--- a/mm/dmapool.c\n+++ b/mm/dmapool.c", b"--- " + names[0] + b"\n+++ " + names[1])
    diff = diff.replace(b"diff --git a/mm/dmapool.c b/mm/dmapool.c", b"diff --git " + b" ".join(names))
    (tmp_path / "nul.mbox").write_bytes(HEAD + b"Message-Id: <nul-1@example.org>\n\n" + BODY + diff)
    result = review(tmp_path / "nul.mbox", "--tree", kernel_repo, "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.FINDINGS, result.stderr
    errors = [f for f in result.json()["findings"] if f["level"] == "error"]
    assert [f["rule"] for f in errors] == ["patch-damaged"], errors
    assert 'the file name "mm/dma\\000pool.c" holds a NUL byte' in errors[0]["message"]
    result.assert_nothing_left()


@pytest.mark.parametrize("option", ["--test-timeout", "--slower-than", "--build-timeout", "--boot-timeout"])
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e999"])
def test_a_number_that_is_not_finite_is_refused(option: str, value: str, tmp_path: Path) -> None:
    """NaN passes every range check (`--test-timeout nan` removed the cap); infinity is no number of seconds either."""
    result = review(SERIES / "single-patch.mbox", option, value, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.USAGE, f"invalid value for '{option}': '{value}' is not a finite number")


@pytest.mark.parametrize("args,option", [
    (("",), "'TARGET'"), (("--tree", ""), "'--tree' / '-t'"), (("-C", ""), "'-C'"), (("--rules", ""), "'--rules'"),
    (("--log-dir", ""), "'--log-dir'"), (("--reply", ""), "'--reply'"), (("--base", " "), "'--base'"),
    (("--tests", ""), "'--tests'"), (("--arch", ""), "'--arch'"), (("--lore-url", ""), "'--lore-url'"),
], ids=["target", "tree", "C", "rules", "log-dir", "reply", "base-blank", "tests", "arch", "lore-url"])
def test_an_empty_value_is_refused(args: tuple[str, ...], option: str, tmp_path: Path) -> None:
    """An empty path was Path('.'): `review ''` reviewed the current directory, `--tree ''` used it as the tree;
    `--tests ''` and `--arch ''` were the same as leaving the option out."""
    target = () if args == ("",) else (SERIES / "single-patch.mbox",)
    result = review(*args, *target, cwd=tmp_path, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.USAGE, f"invalid value for {option}: an empty value")


@pytest.mark.parametrize("name,fragment,hint", [
    ("nosuch:thing", "--tests nosuch:thing: the tree has no directory tools/testing/selftests/nosuch", "selftest directories: vDSO"),
    ("vdso", "--tests vdso: the tree has no directory tools/testing/selftests/vdso", "did you mean vDSO?"),
    ("vDSO:vdso_test_getrandm", "--tests vDSO:vdso_test_getrandm: tools/testing/selftests/vDSO has no test vdso_test_getrandm",
     "did you mean vDSO:vdso_test_getrandom? its Makefile lists vdso_test_chacha, vdso_test_getrandom, vdso_test_gettimeofday"),
])
def test_an_unknown_test_name_is_a_usage_error(name: str, fragment: str, hint: str, kernel_repo: Path, tmp_path: Path) -> None:
    """Was: nothing run, nothing said, exit 0. Checked against the base before anything is applied or built."""
    result = review(SERIES / "single-patch.mbox", "--tree", kernel_repo, "--tests", name, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.USAGE, fragment)
    assert hint in result.stderr.splitlines()[1], result.stderr
    result.assert_nothing_left()


def test_a_test_the_series_adds_is_known(kernel_repo: Path, tmp_path: Path) -> None:
    """A directory or program the series itself adds is no unknown name (the check reads the series too)."""
    series = tmp_path / "new.mbox"
    series.write_bytes(HEAD + b"Message-Id: <new-1@example.org>\nSubject: [PATCH] selftests: add a probe\n\n" + BODY +
                       b"---\ndiff --git a/tools/testing/selftests/probe/probe_me.sh b/tools/testing/selftests/probe/probe_me.sh\n"
                       b"new file mode 100755\nindex 0000000..e69de29\n--- /dev/null\n+++ b/tools/testing/selftests/probe/probe_me.sh\n"
                       b"@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo ok\n")
    result = review(series, "--tree", kernel_repo, "--tests", "probe:probe_me", "--no-tests", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc in (ExitStatus.OK, ExitStatus.FINDINGS), result.stderr


@pytest.mark.parametrize("kind", ["fifo", "chardev", "stdin-pipe"])
def test_a_fifo_or_a_device_as_target_is_refused(kind: str, tmp_path: Path) -> None:
    """Was: reading a FIFO waited for a writer forever, /dev/zero never ended (the helper's timeout fails a hang)."""
    if kind == "fifo":
        os.mkfifo(tmp_path / "pipe")
        target, what = str(tmp_path / "pipe"), "a FIFO (named pipe), not a file"
    else:
        target, what = (("/dev/zero", "a character device, not a file") if kind == "chardev"
                        else ("/dev/stdin", "a FIFO (named pipe), not a file"))
    if kind == "stdin-pipe":  # `review /dev/stdin` on a pipe: the hint says `-`
        result = review(target, stdin=b"x", tmp=tmp_path / "tmp", timeout=60)
    else:
        result = review(target, tmp=tmp_path / "tmp", timeout=60)
    result.assert_one_line_error(ExitStatus.FETCH, f"{target}: {what}")
    assert "- to read standard input" in result.stderr
    result.assert_nothing_left()


def test_a_fifo_among_the_rules_is_refused(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    os.mkfifo(tmp_path / "rules" / "wait.toml")
    result = review(SERIES / "single-patch.mbox", "--rules", tmp_path / "rules", tmp=tmp_path / "tmp", timeout=60)
    result.assert_one_line_error(ExitStatus.CONFIG, "wait.toml: not a regular file")


NESTED = "x = " + "[" * 5000 + "]" * 5000 + "\n"


def test_a_nested_reviewer_toml(kernel_repo: Path, tmp_path: Path) -> None:
    """Was: RecursionError from tomllib, an internal error."""
    (kernel_repo / ".reviewer.toml").write_text(NESTED)
    result = review(SERIES / "single-patch.mbox", "--tree", kernel_repo, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.CONFIG, f"{kernel_repo / '.reviewer.toml'}: cannot read it: arrays or tables nested too deeply")


def test_a_nested_rule_file(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "deep.toml").write_text("x = " + "{a=" * 3000 + "1" + "}" * 3000 + "\n")
    result = review(SERIES / "single-patch.mbox", "--rules", tmp_path / "rules", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.CONFIG, "deep.toml: invalid TOML: arrays or tables nested too deeply")
