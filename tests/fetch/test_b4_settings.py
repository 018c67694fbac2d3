"""b4 and its settings against the real public-inbox on 127.0.0.1: `b4 mbox -o - ID | review -` reviews the
thread b4 wrote, and b4.midmask / b4.linkmask (git config or the tree's .b4-config) are read as b4 reads them,
after --lore-url and reviewer.loreUrl."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from reviewer.errors import ExitStatus
from tests.conftest import git
from tests.fetch.conftest import CLOSED_URL, Httpd
from tests.helpers import Result, review

ANTON = "20240910081500.31337-1-anton@example.org"  # a cover letter and 2 patches (fixtures/lore/shared-prefix.mbox)
LA = "20240816110717.10249-1-xry111@example.org"


def _gitconfig(*pairs: tuple[str, str]) -> None:
    """The user's git config: reviewer.loreUrl (the conftest's closed port) unset, PAIRS set."""
    subprocess.run(["git", "config", "--global", "--unset", "reviewer.loreUrl"], check=True)
    for key, value in pairs:
        subprocess.run(["git", "config", "--global", key, value], check=True)


def _doc(res: Result) -> dict[str, Any]:
    assert res.rc == ExitStatus.OK, res.stderr
    doc: dict[str, Any] = res.json()
    return doc


def _series(doc: dict[str, Any]) -> tuple[Any, ...]:
    s = doc["series"]
    return s["msgid"], s["version"], s["total"], [p["subject"] for p in doc["patches"]], [p["files"] for p in doc["patches"]]


def test_b4_mbox_piped_into_review_is_the_thread(lore: Httpd, tmp_path: Path) -> None:
    """docs/reference.md's `b4 mbox -o - ID | review -` (was: "no patches found": the mbox was read as one mail)."""
    _gitconfig(("b4.midmask", f"{lore.url}%s"))
    b4 = subprocess.run([str(Path(sys.executable).with_name("b4")), "-q", "--no-stdin", "mbox", "-o", "-", ANTON],
                        capture_output=True, timeout=120, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert b4.returncode == 0, b4.stderr
    assert sum(line.startswith(b"From mboxrd@z ") for line in b4.stdout.splitlines()) == 3  # the cover letter and 2 patches
    piped = _doc(review("-", "--format", "json", stdin=b4.stdout, tmp=tmp_path / "t1"))
    assert _series(piped)[:3] == (ANTON, 1, 2) and len(piped["patches"]) == 2
    assert piped["series"]["cover"] is not None and piped["series"]["source"] == "-"
    assert _series(piped) == _series(_doc(review(ANTON, "--format", "json", tmp=tmp_path / "t2")))  # as fetched by id


def test_b4_midmask_names_the_archive(lore: Httpd, tmp_path: Path) -> None:
    _gitconfig(("b4.midmask", f"{lore.url}%s"))
    assert _series(_doc(review(LA, "--format", "json", tmp=tmp_path / "t1")))[0] == LA

    # reviewer.loreUrl and --lore-url come first.
    subprocess.run(["git", "config", "--global", "reviewer.loreUrl", CLOSED_URL], check=True)
    review(LA, "--no-cache", tmp=tmp_path / "t2").assert_one_line_error(ExitStatus.FETCH, f"{CLOSED_URL}{LA}/t.mbox.gz: cannot connect")
    subprocess.run(["git", "config", "--global", "--unset", "b4.midmask"], check=True)
    assert _series(_doc(review(LA, "--no-cache", "--lore-url", lore.url, "--format", "json", tmp=tmp_path / "t3")))[0] == LA


def test_a_midmask_without_a_list_asks_all_as_b4_does(lore: Httpd, tmp_path: Path) -> None:
    _gitconfig(("b4.midmask", f"{lore.base}%s"))
    review(LA, tmp=tmp_path / "t").assert_one_line_error(ExitStatus.FETCH, f"no message <{LA}> on {lore.base}all/")


def test_the_trees_b4_config_and_a_bad_mask(lore: Httpd, tmp_path: Path) -> None:
    """A project's .b4-config at the top of the work tree sets the mask when git config does not."""
    _gitconfig()
    repo = tmp_path / "linux"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".b4-config").write_text(f"[b4]\n\tmidmask = {lore.url}%s\n")
    (repo / "sub").mkdir()
    assert _series(_doc(review(LA, "--format", "json", cwd=repo / "sub", tmp=tmp_path / "t1")))[0] == LA
    git(repo, "config", "b4.midmask", "lore.kernel.org/all/%s")  # git config wins, and is checked
    res = review(LA, "--no-cache", cwd=repo, tmp=tmp_path / "t2")
    res.assert_one_line_error(ExitStatus.CONFIG, "git config b4.midmask: expected an http:// or https:// URL ending in /%s")


def test_a_link_made_with_b4_linkmask_is_a_message_id(lore: Httpd, tmp_path: Path) -> None:
    """b4 adds `Link: <linkmask with the id>` to what it applies: that link, pasted, names the message."""
    _gitconfig(("b4.midmask", f"{lore.url}%s"), ("b4.linkmask", "https://msgid.example.org/show?id=%s"))
    link = "https://msgid.example.org/show?id=" + LA.replace("@", "%40")
    assert _series(_doc(review(link, "--format", "json", tmp=tmp_path / "t")))[0] == LA
