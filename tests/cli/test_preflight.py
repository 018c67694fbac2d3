"""Everything that can be checked before work is checked before it (issue 13, item 5).

Each bad setting below is exit 3 with one line naming it, and nothing was done for it: the
target is a Message-ID served by a loopback server that records every request (none may come),
TMPDIR is left empty, and the kernel tree's `git worktree list` is what it was.
"""
from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from tests.conftest import git
from tests.helpers import Result, review

ID = "20240823182000.3131-1-solo@example.org"


class Recorder(ThreadingHTTPServer):
    """A lore that writes down what it was asked and has nothing (404)."""

    daemon_threads = True
    requests: list[str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/all/"


class _Handler(BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.requests.append(f"{self.command} {self.path}")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET  # noqa: N815 (b4's searches POST)


@pytest.fixture
def lore() -> Iterator[Recorder]:
    server = Recorder(("127.0.0.1", 0), _Handler)
    server.requests = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _worktrees(tree: Path) -> str:
    return git(tree, "worktree", "list", "--porcelain")


def _review(lore: Recorder, tmp_path: Path, *args: str | Path, cwd: Path | None = None) -> Result:
    # stdin is a pipe, never the terminal pytest may run in: --send cannot ask.
    return review(ID, "--lore-url", lore.url, *args, cwd=cwd, stdin=b"", tmp=tmp_path / "tmp")


def _refused_before_work(res: Result, fragment: str, lore: Recorder, tree: Path | None = None, worktrees: str = "") -> None:
    res.assert_one_line_error(ExitStatus.CONFIG, fragment)
    assert lore.requests == [], lore.requests  # nothing fetched
    res.assert_nothing_left()  # no worktree, no scratch directory in $TMPDIR
    if tree is not None:
        assert _worktrees(tree) == worktrees


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_dash_c_that_is_not_a_directory(lore: Recorder, tmp_path: Path, kind: str) -> None:
    path = tmp_path / "nowhere"
    if kind == "file":
        path.write_text("not a directory\n")
    res = _review(lore, tmp_path, "-C", path)
    _refused_before_work(res, f"-C {path}: {'no such directory' if kind == 'missing' else 'not a directory'}", lore)
    assert "git" not in res.stderr  # not "git could not be started"


@pytest.mark.parametrize("kind", ["missing", "file", "not-git"])
def test_tree_that_is_not_a_git_directory(lore: Recorder, tmp_path: Path, kind: str) -> None:
    path = tmp_path / "linux"
    if kind == "file":
        path.write_text("not a directory\n")
    elif kind == "not-git":
        path.mkdir()
    why = {"missing": "no such directory", "file": "not a directory", "not-git": "not a git repository"}[kind]
    _refused_before_work(_review(lore, tmp_path, "--tree", path), f"--tree {path}: {why}", lore)


def test_rules_directory_that_does_not_exist(lore: Recorder, tmp_path: Path, kernel_repo: Path) -> None:
    before = _worktrees(kernel_repo)
    res = _review(lore, tmp_path, "--tree", kernel_repo, "--rules", tmp_path / "my-rules")
    _refused_before_work(res, f"--rules {tmp_path / 'my-rules'}: no such directory", lore, kernel_repo, before)


@pytest.mark.parametrize("kind", ["no-directory", "under-a-file", "a-directory"])
def test_reply_that_cannot_be_written(lore: Recorder, tmp_path: Path, kernel_repo: Path, kind: str) -> None:
    """Found before the review (it used to be exit 70 after it, and the reply lost); tried, not
    guessed, so that it holds when the tests run as root too."""
    (tmp_path / "afile").write_text("x\n")
    (tmp_path / "adir").mkdir()
    path = {"no-directory": tmp_path / "missing" / "reply.eml", "under-a-file": tmp_path / "afile" / "reply.eml",
            "a-directory": tmp_path / "adir"}[kind]
    before = _worktrees(kernel_repo)
    res = _review(lore, tmp_path, "--tree", kernel_repo, "--reply", path)
    why = "is a directory" if kind == "a-directory" else "cannot write it: "
    _refused_before_work(res, f"--reply {path}: {why}", lore, kernel_repo, before)
    assert not (tmp_path / "missing").exists() and sorted(p.name for p in (tmp_path / "adir").iterdir()) == []


def test_a_good_reply_path_then_goes_on_to_fetch(lore: Recorder, tmp_path: Path) -> None:
    """The same command with a writable --reply FILE does ask lore (the recorder sees it; it has
    nothing: exit 4), and the probe that tried the new file did not leave it there."""
    subprocess.run(["git", "config", "--global", "user.email", "rev@example.org"], check=True)
    _refused_before_work(_review(lore, tmp_path, "--reply", tmp_path / "no" / "r.eml"), "cannot write it", lore)
    res = _review(lore, tmp_path, "--reply", tmp_path / "reply.eml")
    res.assert_one_line_error(ExitStatus.FETCH, f"no message <{ID}>")
    assert lore.requests[0] == f"GET /all/{ID}/t.mbox.gz"
    assert not (tmp_path / "reply.eml").exists()


def test_send_without_a_terminal_or_yes(lore: Recorder, tmp_path: Path, kernel_repo: Path) -> None:
    before = _worktrees(kernel_repo)
    res = _review(lore, tmp_path, "--tree", kernel_repo, "--send")
    _refused_before_work(res, "--send asks for confirmation, and standard input is not a terminal", lore, kernel_repo, before)
    assert "hint: add --yes" in res.stderr
    subprocess.run(["git", "config", "--global", "user.email", "rev@example.org"], check=True)
    res = _review(lore, tmp_path, "--tree", kernel_repo, "--send", "--yes")  # the control: now it fetches
    res.assert_one_line_error(ExitStatus.FETCH, f"no message <{ID}>")
    assert lore.requests[0] == f"GET /all/{ID}/t.mbox.gz"


@pytest.mark.parametrize(("key", "value", "fragment"), [
    ("reviewer.cachMinutes", "5", "git config reviewer.cachminutes: unknown key"),
    ("reviewer.Level.cover-letter", "info", "git config reviewer.Level.cover-letter: unknown key"),
    ("reviewer.cacheMinutes", "-3", "git config reviewer.cacheMinutes: expected a number of minutes (0 or more), got '-3'"),
    ("reviewer.cacheMinutes", "soon", "git config reviewer.cacheMinutes: expected a number of minutes"),
    ("reviewer.loreUrl", "lore.kernel.org/all", "git config reviewer.loreUrl: expected an http:// or https:// URL"),
    ("reviewer.rules", "/nonexistent/rules", "git config reviewer.rules /nonexistent/rules: no such directory"),
])
def test_unknown_or_invalid_git_config(lore: Recorder, tmp_path: Path, kernel_repo: Path, key: str, value: str, fragment: str) -> None:
    """As docs/guide.md (Configuration) promises: a typo'd key or a bad value is exit 3 before anything is fetched."""
    subprocess.run(["git", "config", "--global", key, value], check=True)
    before = _worktrees(kernel_repo)
    res = _review(lore, tmp_path, "--tree", kernel_repo)
    _refused_before_work(res, fragment, lore, kernel_repo, before)


def test_unknown_key_suggests_the_known_one(lore: Recorder, tmp_path: Path) -> None:
    subprocess.run(["git", "config", "--global", "reviewer.cachMinutes", "5"], check=True)
    res = _review(lore, tmp_path)
    assert "hint: did you mean reviewer.cacheMinutes?" in res.stderr


def test_bad_environment_variable(lore: Recorder, tmp_path: Path, kernel_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_LORE_DEADLINE", "-5")
    before = _worktrees(kernel_repo)
    res = _review(lore, tmp_path, "--tree", kernel_repo)
    _refused_before_work(res, "REVIEWER_LORE_DEADLINE='-5': expected a number of seconds above 0", lore, kernel_repo, before)
