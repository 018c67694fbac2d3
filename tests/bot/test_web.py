"""`review bot serve` (reviewer/bot/web.py): the dashboard served on 127.0.0.1 from a bot home the bot's loop made
(tests/bot/webhome.py: a real inbox, the static and apply stages on a kernel-shaped tree), read over HTTP as a
browser or a script would: pages and their JSON, headers, what changed from v1 to v2 (git range-diff, or the
patches' texts without a tree), nothing written, and the command itself (bad --listen, a port in use, SIGTERM)."""
from __future__ import annotations

import dataclasses
import json
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from reviewer.bot import config, operate, revisions, web
from reviewer.bot.jobs import Jobs, Spec
from reviewer.errors import ConfigError, ExitStatus
from reviewer.model import Finding, Level
from tests.bot import webhome
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> webhome.Home:
    return webhome.make(tmp_path_factory.mktemp("web-home"))


@pytest.fixture(scope="module")
def site(home: webhome.Home) -> Iterator[str]:
    with web.running(web.make(home.cfg, "127.0.0.1", 0)) as url:
        yield url


@dataclasses.dataclass
class Got:
    status: int
    headers: dict[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


def get(url: str, accept: str = "text/html") -> Got:
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return Got(r.status, dict(r.headers), r.read().decode())
    except urllib.error.HTTPError as e:
        return Got(e.code, dict(e.headers), e.read().decode())


def series_url(site: str, root: str) -> str:
    return f"{site}/lists/test/series/{urllib.parse.quote(root, safe='@')}"


def test_the_front_page_counts_the_lists_series(site: str) -> None:
    page = get(site + "/")
    assert page.status == 200 and page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert 'href="/lists/test"' in page.text and "3 series, 3 reported" in page.text
    data = get(site + "/?format=json").json()
    assert [(x["name"], x["series"], x["reported"], x["jobs"]) for x in data["lists"]] == [("test", 3, 3, {"done": 6})]


def test_every_answer_carries_the_strict_headers(site: str, home: webhome.Home) -> None:
    for path in ("/", "/lists/test", f"/lists/test/series/{home.v1}", "/queue", "/nothing", "/lists/test?format=json"):
        got = get(site + path)
        assert got.headers["Content-Security-Policy"] == web.CSP, path
        assert "script-src" not in web.CSP and "default-src 'none'" in web.CSP
        assert got.headers["X-Content-Type-Options"] == "nosniff" and got.headers["Referrer-Policy"] == "no-referrer"


def test_the_list_page_shows_each_series_newest_first_with_its_stages(site: str, home: webhome.Home) -> None:
    data = get(site + "/lists/test", accept="application/json").json()
    assert data == get(site + "/lists/test?format=json").json()  # the Accept header or ?format=json: the same data
    rows = data["series"]
    assert [r["root"] for r in rows] == [home.hostile, home.v2, home.v1]
    v2 = rows[1]
    assert (v2["subject"], v2["revision"], v2["rfc"], v2["state"]) == (webhome.SUBJECT, 2, False, "ready")
    assert v2["supersedes"] == f"test/{home.v1}" and rows[2]["superseded_by"] == 2 and v2["superseded_by"] is None
    assert [(s["stage"], s["state"]) for s in v2["stages"]] == [("apply", "done"), ("static", "done")]
    assert rows[2]["findings"]["error"] == 1 and v2["findings"]["error"] == 0  # v1's missing sign-off
    assert all(r["report"]["verdict"] == "never" and 0 <= r["seconds_to_result"] < 300 for r in rows)
    page = get(site + "/lists/test").text
    assert page.count("<tr data-key=") == 3
    for r in rows:
        assert f'href="{r["url"]}"' in page
    assert "&lt;img src=x onerror=alert(1)&gt; &lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert "<img" not in page and "<script" not in page


def test_the_series_page_shows_the_review_and_what_changed_from_v1(site: str, home: webhome.Home) -> None:
    data = get(series_url(site, home.v2) + "?format=json").json()
    assert [r["revision"] for r in data["revisions"]] == [1, 2] and [r["current"] for r in data["revisions"]] == [False, True]
    changes = data["changes"]
    assert changes["from"] == {"revision": 1, "key": f"test/{home.v1}", "url": f"/lists/test/series/{home.v1}", "reviewed": True}
    assert [(f["rule"], f["patch"]) for f in changes["fixed"]] == [("author-signoff", 2)]
    assert [f["rule"] for f in changes["new"]] == ["changelog"]  # a v2 without `Changes since v1:`
    diff = changes["diff"]
    assert diff["kind"] == "range-diff" and str(home.tree) in diff["why"]
    assert "1:  " in diff["text"] and " ! 1:  " in diff["text"] and "++new 1 v2" in diff["text"]  # the pair of patch 1, changed
    assert {f["rule"] for f in data["review"]["findings"]} >= {"changelog", "base-commit"}
    page = get(series_url(site, home.v2)).text
    for part in ('id="findings"', 'id="changes"', 'id="fixed"', f'href="/lists/test/series/{home.v1}"', "++new 1 v2", "no Signed-off-by"):
        assert part in page, part
    assert get(series_url(site, home.v1) + "?format=json").json()["changes"] is None  # nothing before v1


def test_the_range_diff_leaves_nothing_in_the_tree_and_is_kept(site: str, home: webhome.Home) -> None:
    for kept in (home.cfg.home / "web" / "changes").glob("*"):
        kept.unlink()  # made again now
    before = [subprocess.run(["git", "-C", str(home.tree), *a], capture_output=True, text=True, check=True).stdout
              for a in (("worktree", "list"), ("for-each-ref",), ("status", "--porcelain"), ("count-objects",))]
    get(series_url(site, home.v2))
    after = [subprocess.run(["git", "-C", str(home.tree), *a], capture_output=True, text=True, check=True).stdout
             for a in (("worktree", "list"), ("for-each-ref",), ("status", "--porcelain"), ("count-objects",))]
    assert after == before and len(after[0].splitlines()) == 1
    assert len(list((home.cfg.home / "web" / "changes").glob("*-range-diff.json"))) == 1


def test_the_queue_page_shows_the_status(site: str, home: webhome.Home) -> None:
    data = get(site + "/queue?format=json").json()
    want = operate.status(home.cfg)
    assert {k: v for k, v in data.items() if k != "time"} == {k: v for k, v in want.items() if k != "time"}
    pools = data["lists"]["test"]["pools"]
    assert (pools["static"]["done"], pools["apply"]["done"], pools["report"]["done"]) == (3, 3, 3)
    page = get(site + "/queue").text
    cells = '<td class="n">0</td><td class="n">0</td><td class="n">3</td>'  # queued, running, done
    assert f'<tr data-pool="test/static"><td>test</td><td class="mono">static</td>{cells}' in page
    assert "No failed jobs." in page


def test_unknown_paths_are_404_in_both_forms(site: str) -> None:
    for path in ("/lists/nolist", "/lists/test/series/nobody@example.org", "/x/y", "/lists/test/series"):
        assert get(site + path).status == 404
        assert get(site + path + "?format=json").json()["error"] == "not found"


def test_the_patches_are_compared_as_text_without_a_tree(home: webhome.Home) -> None:
    assert home.cfg.lists is not None
    cfg = dataclasses.replace(home.cfg, lists={"test": dataclasses.replace(home.cfg.lists["test"], tree=None)})
    data = web.answer(cfg, f"/lists/test/series/{home.v2}").data
    diff = data["changes"]["diff"]
    assert diff["kind"] == "patches" and "no kernel tree is configured" in diff["why"]
    assert "--- v1 patch 1\n+++ v2 patch 1\n" in diff["text"] and "-+new 1\n++new 1 v2\n" in diff["text"]


def test_findings_are_compared_without_the_numbers_that_move() -> None:
    def f(msg: str, rule: str = "r", path: str | None = "a.c", patch: int = 1) -> Finding:
        return Finding(rule=rule, level=Level.WARNING, message=msg, patch=patch, path=path)

    old = [f("line 12 is too long"), f("patch 2/3 has no sign-off", patch=2), f("a.c:40: x"), f("a.c:41: x"), f("gone")]
    new = [f("line 14 is too long"), f("patch 3/4 has no sign-off", patch=3), f("a.c:50: x"), f("new one")]
    fixed, added = revisions.findings(old, new)
    assert [x.message for x in fixed] == ["a.c:41: x", "gone"] and [x.message for x in added] == ["new one"]


def test_a_home_the_bot_never_made_is_shown_empty_and_left_untouched_and_no_thread_is_left(tmp_path: Path) -> None:
    path = tmp_path / "bot.toml"
    path.write_text('[bot]\nhome = "state"\n\n[lists.netdev]\nmirror = "/srv/netdev"\n')
    cfg = config.load(path)
    before = set(threading.enumerate())
    with web.running(web.make(cfg, "127.0.0.1", 0)) as url:
        assert get(url + "/?format=json").json()["lists"][0] == {"name": "netdev", "url": "/lists/netdev", "configured": True,
                                                                 "series": 0, "reported": 0, "jobs": {}}
        assert "No series decided yet." in get(url + "/lists/netdev").text
        assert get(url + "/queue").status == 200
    assert not (tmp_path / "state").exists()
    assert set(threading.enumerate()) == before  # the server's thread and its request threads joined


def test_listen_takes_host_and_port() -> None:
    assert web.listen("127.0.0.1:8470") == ("127.0.0.1", 8470) and web.listen("[::1]:80") == ("::1", 80)
    for bad in ("8470", "localhost", ":80", "host:http", "h:70000"):
        with pytest.raises(ConfigError):
            web.listen(bad)


def _serve(cfg_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "reviewer", "bot", "--config", str(cfg_path), "serve", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_command_serves_until_sigterm_and_refuses_a_bad_listen(home: webhome.Home) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = _serve(home.cfg.path, "--listen", f"127.0.0.1:{port}")
        _, err = busy.communicate(timeout=60)
    assert busy.returncode == ExitStatus.CONFIG and err.count("\n") <= 2 and f"127.0.0.1:{port}: cannot listen there" in err
    bad = _serve(home.cfg.path, "--listen", "nowhere")
    assert bad.wait(timeout=60) == ExitStatus.CONFIG and "--listen nowhere: not HOST:PORT" in (bad.stderr.read() if bad.stderr else "")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _serve(home.cfg.path, "--listen", f"127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert get(f"http://127.0.0.1:{port}/lists/test").status == 200
                break
            except urllib.error.URLError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_series_whose_mbox_file_is_gone_is_read_from_the_jobs_database(home: webhome.Home) -> None:
    """A dashboard on another machine than the loop has no HOME/mbox/ files: the mboxes table has them (mboxes.py)."""
    kept = home.cfg.home / "mbox"
    aside = kept.with_name("mbox-aside")
    kept.rename(aside)
    try:
        data = web.answer(home.cfg, f"/lists/test/series/{home.v2}").data
    finally:
        aside.rename(kept)
    assert [p["index"] for p in data["review"]["patches"]] == [1, 2] and data["changes"]["fixed"]


def test_a_reader_neither_writes_nor_holds_the_writers_lock(url: str) -> None:
    """On SQLite (mode=ro, a plain BEGIN) and on PostgreSQL (a read-only session): the dashboard's reads."""
    with Jobs(url) as writer:
        writer.add(Spec(list="test", series="before", stage="static"))
        with Jobs(url, read_only=True) as reader:
            with pytest.raises((sqlite3.OperationalError, psycopg.errors.ReadOnlySqlTransaction), match="read-?only"):
                reader.put(Spec(list="test", series="x", stage="static"))
            with reader.db.tx() as run:  # a reader's transaction open: a worker still adds, claims and cancels
                assert run("SELECT COUNT(*) FROM jobs", ()).fetchone()[0] == 1
                writer.add(Spec(list="test", series="during", stage="static"))
                assert writer.claim("static", "w", 60) is not None
                assert writer.cancel_series("during") == 1
            assert [j.state for j in reader.select(series="during")] == ["cancelled"]


def test_a_previous_revision_cancelled_before_it_ran_has_no_findings_to_compare(tmp_path: Path) -> None:
    home = webhome.superseded_early(tmp_path)
    data = web.answer(home.cfg, f"/lists/test/series/{home.v2}").data
    changes = data["changes"]
    assert changes["from"]["reviewed"] is False and changes["fixed"] == changes["new"] == []
    assert data["findings"]["warning"] > 0  # v2's own findings: none of them called new
    assert changes["diff"]["kind"] == "range-diff"  # on the base v1's apply job was keyed by, though it never ran
    v1 = web.answer(home.cfg, "/lists/test").data["series"][1]
    assert [s["state"] for s in v1["stages"]] == ["cancelled", "cancelled"] and v1["report"]["verdict"] == "never"
    assert "has no finished review" in web.render(web.answer(home.cfg, f"/lists/test/series/{home.v2}"))
