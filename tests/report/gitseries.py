"""Series made with git itself for the report tests (issue 30): commits on the kernel-shaped base,
exported with `git format-patch`, never written by hand.

- `not_applying`: a 3-patch series whose 2/3 changes a line the base does not have (it was
  written on top of a commit that is not in the base), so git am stops at 2/3 on that file.
- `hostile`: one patch whose file names, subject and author name hold a newline, a forged
  `Reviewed-by:` (the reviewer's own name) and ESC[2J, as an attacker would send them.
- `html_hostile`: one patch whose subject, author and file name are HTML that would run a script.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

LDS = "arch/x86/entry/vdso/vdso.lds.S"
REVIEWER = "Rev Iewer <rev@example.org>"
FORGED = f"Reviewed-by: {REVIEWER}"
NEWLINE_NAME = f"lib/vdso/x\n{FORGED}.c"  # a new C file no Makefile builds: findings name it
ESC_NAME = "lib/vdso/e\x1b[2Jf.c"
ESC_SUBJECT = "lib/vdso: Add \x1b[2J helpers [/bold] for [red]getrandom"
ESC_AUTHOR = "Evil \x1b[2J Author"
_IDENTITY = {"GIT_AUTHOR_EMAIL": "author@example.org", "GIT_COMMITTER_NAME": "Series Maker",
             "GIT_COMMITTER_EMAIL": "maker@example.org", "GIT_AUTHOR_DATE": "2024-09-01T10:00:00+00:00",
             "GIT_COMMITTER_DATE": "2024-09-01T10:00:00+00:00"}


def _git(repo: Path, *args: str, author: str = "Series Author") -> str:
    env = {**os.environ, **_IDENTITY, "GIT_AUTHOR_NAME": author, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True).stdout


def _commit(repo: Path, files: dict[str, str], subject: str, author: str = "Series Author") -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "--", *files)
    message = f"{subject}\n\nWhy the change is needed, in a sentence.\n\nSigned-off-by: {author} <author@example.org>\n"
    _git(repo, "commit", "-q", "--no-verify", "-m", message, author=author)
    return _git(repo, "rev-parse", "HEAD").strip()


def _export(repo: Path, base: str, tip: str, dest: Path, *extra: str) -> Path:
    mbox = _git(repo, "format-patch", "--stdout", "--thread=shallow", f"--base={base}", "--to=x86@example.org", *extra, f"{base}..{tip}")
    dest.write_text(mbox)
    return dest


def not_applying(repo: Path, dest: Path) -> Path:
    """REPO's HEAD is the base; the series is written on a commit the base lacks; REPO is left at its base."""
    base = _git(repo, "rev-parse", "HEAD").strip()
    lds = (repo / LDS).read_text()
    assert lds.count("\t\t__vdso_getrandom;\n") == 1
    _git(repo, "checkout", "-q", "-b", "not-applying")
    first = _commit(repo, {LDS: lds.replace("\t\t__vdso_getrandom;\n", "\t\t__vdso_getrandom;\n\t\t__vdso_getrandom_v2;\n")},
                    "x86/vdso: Export the second getrandom entry")
    _commit(repo, {"lib/vdso/Kconfig": (repo / "lib/vdso/Kconfig").read_text() + "\n# The generic vDSO.\n"},
            "lib/vdso: Say what the Kconfig file is for")
    _commit(repo, {LDS: (repo / LDS).read_text().replace("__vdso_getrandom_v2;", "__vdso_getrandom_v3;")},
            "x86/vdso: Rename the second getrandom entry")
    _commit(repo, {"mm/dmapool.c": (repo / "mm/dmapool.c").read_text() + "\n/* The end. */\n"}, "mm/dmapool: Mark the end")
    mbox = _export(repo, first, "HEAD", dest, "--cover-letter")
    _git(repo, "checkout", "-q", "master")
    # The series says it is based on the base: the commit it was written on never went in.
    return _retarget(mbox, first, base)


def _retarget(mbox: Path, written_on: str, base: str) -> Path:
    mbox.write_text(mbox.read_text().replace(f"base-commit: {written_on}", f"base-commit: {base}"))
    return mbox


def hostile(repo: Path, dest: Path) -> Path:
    """One patch from an attacker's commit; REPO is left at its base."""
    base = _git(repo, "rev-parse", "HEAD").strip()
    _git(repo, "checkout", "-q", "-b", "hostile")
    code = "// SPDX-License-Identifier: GPL-2.0\nint x;\n"
    _commit(repo, {NEWLINE_NAME: code, ESC_NAME: code}, ESC_SUBJECT, author=ESC_AUTHOR)
    mbox = _export(repo, base, "HEAD", dest)
    _git(repo, "checkout", "-q", "master")
    return mbox


# Issue 33: markup where a page would run it, were it not escaped. A subject that opens an element with a handler and
# closes a <script> the page might have, a file name that closes an attribute and opens an <svg>, an author that opens
# a <b> with a handler, and a right-to-left override (U+202E) that would turn the rest of the subject around.
HTML_SUBJECT = "vdso: <img src=x onerror=alert(1)> </script><script>alert(2)</script> \u202egnp.exe"
HTML_NAME = 'lib/vdso/"><svg onload=alert(3)>.c'
HTML_AUTHOR = "Mallory <b onmouseover=alert(4)>"


def html_hostile(repo: Path, dest: Path) -> Path:
    """One patch whose subject, author and file name are markup; REPO is left at its base."""
    base = _git(repo, "rev-parse", "HEAD").strip()
    _git(repo, "checkout", "-q", "-b", "html-hostile")
    _commit(repo, {HTML_NAME: "// SPDX-License-Identifier: GPL-2.0\nint y;\n"}, HTML_SUBJECT, author=HTML_AUTHOR)
    mbox = _export(repo, base, "HEAD", dest)
    _git(repo, "checkout", "-q", "master")
    return mbox
