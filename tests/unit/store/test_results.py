"""The result cache: atomic entries, keys that change with every input, and the scripts' outputs
kept per patch (with small stand-in scripts in a real git tree: they count their runs in $HOME)."""
from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import time
from pathlib import Path

import pytest

from reviewer import config
from reviewer.kernelscripts import Options, review
from reviewer.model import Patch, Person, Series
from reviewer.series.patchparse import parse_diff
from reviewer.store import results as resultcache

DIFF = """diff --git a/drivers/net/dummy.c b/drivers/net/dummy.c
index e9c5e1e11..5c7f2ee94 100644
--- a/drivers/net/dummy.c
+++ b/drivers/net/dummy.c
@@ -10,3 +10,3 @@ static int x;
 int a;
-int b;
+int c;
 int e;
"""
CHECKPATCH = r"""#!/usr/bin/perl
open(my $f, '>>', "$ENV{HOME}/checkpatch.calls"); print $f "x\n"; close($f);
my $strict = grep { $_ eq '--strict' } @ARGV;
print "-:12: WARNING:FAKE_TYPE: seen" . ($strict ? " strictly" : "") . "\n";
exit 1;
"""
GET_MAINTAINER = r"""#!/usr/bin/perl
open(my $f, '>>', "$ENV{HOME}/get_maintainer.calls"); print $f "x\n"; close($f);
print "NETWORKING DRIVERS\nM:\tNet Keeper <keeper\@example.org>\nL:\tnetdev\@example.org\nF:\tdrivers/net/\n";
"""


def _calls(name: str) -> int:
    path = Path(os.environ["HOME"]) / f"{name}.calls"
    return len(path.read_text().splitlines()) if path.is_file() else 0


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "linux"
    (root / "scripts").mkdir(parents=True)
    (root / "scripts/checkpatch.pl").write_text(CHECKPATCH)
    (root / "scripts/get_maintainer.pl").write_text(GET_MAINTAINER)
    (root / "scripts/spelling.txt").write_text("abandonned||abandoned\n")
    (root / "MAINTAINERS").write_text("NETWORKING DRIVERS\nF:\tdrivers/net/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    return root


def _series(diff: str = DIFF, message: str = "A message.\n") -> Series:
    patch = Patch(1, 1, "net: dummy: c", "m@x", Person("A U Thor", "author@example.org"), None,
                  message + "\nSigned-off-by: A U Thor <author@example.org>\n", diff, files=parse_diff(diff), cc=("x@example.org",))
    return Series("s", 1, "m@x", Person("A U Thor", "author@example.org"), None, 1, (patch,))


def test_put_then_get_and_what_is_not_there() -> None:
    digest = resultcache.key("t", ["a", 1, None])
    assert resultcache.get("t", digest) is None
    resultcache.put("t", digest, {"stdout": "é\n", "n": [1, 2]})
    assert resultcache.get("t", digest) == {"stdout": "é\n", "n": [1, 2]}
    assert resultcache.get("other-kind", digest) is None
    assert [p.name for p in resultcache.directory().rglob("*") if p.is_file()] == [f"{digest}.json"]  # no temporary files left


def test_a_broken_or_foreign_entry_is_a_miss() -> None:
    digest = resultcache.key("t", "x")
    resultcache.put("t", digest, "value")
    path = next(resultcache.directory().rglob("*.json"))
    path.write_text('{"key": "x", "val')
    assert resultcache.get("t", digest) is None
    path.write_text(json.dumps({"key": "another", "value": "v"}))  # moved or copied from another key
    assert resultcache.get("t", digest) is None


def test_keys_change_with_every_part() -> None:
    keys = {resultcache.key("k", ["a", {"b": 1}]), resultcache.key("k", ["a", {"b": 2}]), resultcache.key("j", ["a", {"b": 1}]),
            resultcache.key("k", ["a", {"b": 1}, None])}
    assert len(keys) == 4
    assert resultcache.key("k", {"x": 1, "y": 2}) == resultcache.key("k", {"y": 2, "x": 1})


def _writer(digest: str, fill: str, rounds: int) -> None:
    for _ in range(rounds):
        resultcache.put("atomic", digest, fill * 400_000)


def test_readers_never_see_half_an_entry() -> None:
    """Two processes rewrite one big entry while we read it: every read is None or a whole value."""
    digest = resultcache.key("atomic", "one")
    ctx = multiprocessing.get_context("fork")
    writers = [ctx.Process(target=_writer, args=(digest, c, 40)) for c in "ab"]
    for w in writers:
        w.start()
    seen = set()
    deadline = time.monotonic() + 30
    while any(w.is_alive() for w in writers) and time.monotonic() < deadline:
        value = resultcache.get("atomic", digest)
        if value is not None:
            assert value in ("a" * 400_000, "b" * 400_000)
            seen.add(value[0])
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert seen and resultcache.get("atomic", digest) in ("a" * 400_000, "b" * 400_000)
    assert len([p for p in resultcache.directory().rglob("*") if p.is_file()]) == 1


def test_prune_by_age_and_by_size() -> None:
    old, new = resultcache.key("p", "old"), resultcache.key("p", "new")
    resultcache.put("p", old, "o" * 1000)
    resultcache.put("p", new, "n" * 1000)
    now = time.time()
    old_path = next(p for p in resultcache.directory().rglob("*.json") if p.stem == old)
    os.utime(old_path, (now - 100, now - 100))
    assert resultcache.prune(max_age=1000, max_bytes=10_000, now=now) == 0
    assert resultcache.prune(max_age=1000, max_bytes=1500, now=now) == 1  # the least recently used goes
    assert resultcache.get("p", old) is None and resultcache.get("p", new) is not None
    assert resultcache.prune(max_age=10, now=now + 100) == 1


def test_policy() -> None:
    assert resultcache.CacheUse.of(no_cache=False) == resultcache.CacheUse(read=True, write=True)
    assert resultcache.CacheUse.of(no_cache=True) == resultcache.CacheUse(read=False, write=True)  # --no-cache recomputes, and stores
    assert resultcache.CacheUse.of(no_cache=False, enabled=False) == resultcache.OFF


def test_result_cache_git_config(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    _git(tmp_path, "init", "-q", str(repo))
    assert config.load(repo).result_cache is None  # unset: on
    _git(repo, "config", "reviewer.resultCache", "false")
    assert config.load(repo).result_cache is False
    _git(repo, "config", "reviewer.resultCache", "maybe")
    with pytest.raises(config.ConfigError, match="reviewer.resultCache"):
        config.load(repo)


def test_scripts_run_once_per_patch_and_input(tree: Path) -> None:
    series = _series()
    first = review(series, tree, Options())
    assert (_calls("checkpatch"), _calls("get_maintainer")) == (1, 1)
    assert [f.rule for f in first.findings] == ["checkpatch/FAKE_TYPE", "get-maintainer/missing-cc"]
    second = review(series, tree, Options())
    assert (_calls("checkpatch"), _calls("get_maintainer")) == (1, 1)
    assert second.findings == first.findings
    assert second.note == "checkpatch.pl (1 of 1 from the cache), get_maintainer.pl (1 of 1 from the cache)"
    review(series, tree, Options(cache=resultcache.CacheUse.of(no_cache=True)))
    assert (_calls("checkpatch"), _calls("get_maintainer")) == (2, 2)  # --no-cache reads nothing
    review(series, tree, Options(cache=resultcache.OFF))
    assert (_calls("checkpatch"), _calls("get_maintainer")) == (3, 3)


def test_what_makes_checkpatch_run_again(tree: Path) -> None:
    """Options, the patch, the commit message's commit ids, the script, the files beside it, and the rest of the tree."""
    series = _series()
    review(series, tree, Options())
    runs = [_calls("checkpatch")]

    def again(s: Series = series, options: Options | None = None) -> None:
        review(s, tree, options or Options())
        runs.append(_calls("checkpatch"))

    again(options=Options(strict=True))
    assert runs[-1] == runs[-2] + 1
    again(_series(DIFF.replace("+int c;", "+int c2;")))
    assert runs[-1] == runs[-2] + 1
    blob = subprocess.run(["git", "hash-object", "--stdin"], input="not yet\n", capture_output=True, text=True, check=True).stdout.strip()
    quoting = _series(message=f"See commit {blob[:12]}.\n")
    again(quoting)
    again(quoting)
    assert runs[-2:] == [runs[-3] + 1] * 2
    subprocess.run(["git", "-C", str(tree), "hash-object", "-w", "--stdin"], input="not yet\n", text=True, check=True, capture_output=True)
    again(quoting)  # the quoted id now names an object: checkpatch's `git log -1 ID` may say otherwise
    assert runs[-1] == runs[-2] + 1
    for name, change in (("scripts/checkpatch.pl", "\n# edited\n"), ("scripts/spelling.txt", "teh||the\n"),
                         ("scripts/const_structs.checkpatch", "file_operations\n"), (".checkpatch.conf", "--no-tree\n"),
                         ("include/linux/new.h", "int x;\n")):
        path = tree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            f.write(change)
        again()
        assert runs[-1] == runs[-2] + 1, name
        again()
        assert runs[-1] == runs[-2], name  # and cached again under the new key
    for name in ("drivers/net/dummy.c", "Kbuild"):  # a touched file, a top-level one: checkpatch looks at both
        path = tree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("/* changed */\n")
        again()
        assert runs[-1] == runs[-2] + 1, name
    (tree / "drivers/gpu").mkdir(parents=True)
    (tree / "drivers/gpu/elsewhere.c").write_text("int y;\n")
    again()  # a file where checkpatch never looks: still cached
    assert runs[-1] == runs[-2]
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", "more")
    again()  # the same files, now committed: HEAD's tree is another
    assert runs[-1] == runs[-2] + 1


def test_get_maintainer_does_not_rerun_for_checkpatch_changes_but_for_its_own(tree: Path) -> None:
    series = _series()
    review(series, tree, Options())
    (tree / "scripts/checkpatch.pl").write_text(CHECKPATCH + "# edited\n")
    review(series, tree, Options())
    assert (_calls("checkpatch"), _calls("get_maintainer")) == (2, 1)
    for name in ("MAINTAINERS", ".mailmap", "scripts/get_maintainer.pl"):
        with (tree / name).open("a") as f:
            f.write("\n# edited\n")
        before = _calls("get_maintainer")
        review(series, tree, Options())
        assert _calls("get_maintainer") == before + 1, name
