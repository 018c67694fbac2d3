"""`review bot --config FILE status|enqueue`, run as the real command in a subprocess (tests/helpers.py): an empty and
a populated home, in text and JSON; bad configuration files are one line and exit 3, never a traceback."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer.bot.jobs import Jobs, Spec
from reviewer.bot.outbox import Outbox, Row
from reviewer.errors import ExitStatus
from tests.bot.test_outbox import reply
from tests.conftest import SERIES
from tests.helpers import Result, review

MBOX = SERIES / "single-patch.mbox"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(text)
    return path


def config(tmp_path: Path, extra: str = "") -> Path:
    return write(tmp_path, f'[bot]\nhome = "state"\n{extra}\n[lists.netdev]\nmirror = "mirrors/netdev"\nmail = "author"\n'
                           'stages = ["static"]\n')


def bot(tmp_path: Path, cfg: Path, *args: str | Path) -> Result:
    return review("bot", "--config", cfg, *args, tmp=tmp_path / "tmp", cwd=tmp_path)


def test_help_lists_the_subcommands(tmp_path: Path) -> None:
    done = review("bot", "--help", tmp=tmp_path / "tmp")
    assert done.rc == 0
    assert all(c in done.stdout for c in ("run", "worker", "status", "enqueue", "replay", "--config"))


def test_status_of_a_bot_that_never_ran_creates_nothing(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    done = bot(tmp_path, cfg, "status")
    assert (done.rc, done.stderr) == (0, "")
    assert f"list netdev ({tmp_path / 'mirrors' / 'netdev'})\n  no jobs\n" in done.stdout
    assert "outbox: 0 queued, 0 sent, 0 failed" in done.stdout
    doc = bot(tmp_path, cfg, "status", "--format", "json").json()
    assert doc["lists"] == {"netdev": {"mirror": str(tmp_path / "mirrors" / "netdev"), "lei": None, "pools": {}}}
    assert (doc["errors"], doc["outbox"]) == ([], {"queued": 0, "sent": 0, "failed": 0, "errors": []})
    assert not (tmp_path / "state").exists()


def test_enqueue_then_status_of_a_populated_home(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    first = bot(tmp_path, cfg, "enqueue", MBOX)
    assert (first.rc, first.stderr) == (0, ""), first.stderr
    assert first.stdout.startswith("review: queued job 1 (static, list netdev) for ")
    again = bot(tmp_path, cfg, "enqueue", MBOX)
    assert again.stdout.startswith("review: already there (queued): nothing added, job 1 ")
    with Jobs(tmp_path / "state" / "jobs.db") as jobs:
        failed = jobs.add(Spec(list="bpf", series="s2", stage="build", arch="arm64", max_attempts=1), now=1)
        jobs.claim("build-arm64", "w", 60, now=1)
        jobs.fail(failed.id, "w", "make: *** [Makefile:2] Error 2", now=2)
        outbox = Outbox(jobs.db, attempts=1)
        outbox.put([reply("sent"), reply("refused")], list_name="netdev", now=3)

        def sender(row: Row) -> None:
            if row.key == "refused":
                raise RuntimeError("550 no such user")

        outbox.drain(sender, now=4)
        outbox.put([reply("waiting")], list_name="netdev", now=5)
    text = bot(tmp_path, cfg, "status")
    assert text.rc == 0, text.stderr
    assert "  pool static: 1 queued, 0 running, 0 done, 0 failed, 0 cancelled; oldest waiting " in text.stdout
    assert "list bpf (not in the configuration)\n  pool build-arm64: 0 queued, 0 running, 0 done, 1 failed" in text.stdout
    assert "outbox: 1 queued, 1 sent, 1 failed\n  mail refused: failed after 1 attempt(s): RuntimeError: 550 no such user" in text.stdout
    assert f"last errors:\n  job {failed.id} (bpf, build-arm64, build): make: *** [Makefile:2] Error 2" in text.stdout
    doc = bot(tmp_path, cfg, "status", "-f", "json").json()
    assert doc["lists"]["netdev"]["pools"]["static"]["queued"] == 1
    assert doc["lists"]["netdev"]["pools"]["static"]["oldest_waiting"] > 1e9
    assert doc["lists"]["bpf"]["pools"]["build-arm64"]["failed"] == 1
    assert [e["job"] for e in doc["errors"]] == [failed.id]
    assert {k: doc["outbox"][k] for k in ("queued", "sent", "failed")} == {"queued": 1, "sent": 1, "failed": 1}


def test_status_with_the_jobs_table_on_postgresql(tmp_path: Path, pg_db: str) -> None:
    cfg = config(tmp_path, f'db = "{pg_db}"')
    assert bot(tmp_path, cfg, "enqueue", MBOX).rc == 0
    doc = bot(tmp_path, cfg, "status", "--format", "json").json()
    assert doc["lists"]["netdev"]["pools"]["static"]["queued"] == 1
    assert not (tmp_path / "state" / "jobs.db").exists()


def test_enqueue_refusals(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    # A Message-ID is looked up in the list's mirror (tests/bot/test_run.py): here there is none to read.
    bot(tmp_path, cfg, "enqueue", "<20261206.1@example.org>").assert_one_line_error(ExitStatus.CONFIG, "is no local public-inbox mirror")
    bot(tmp_path, cfg, "enqueue", "missing.mbox").assert_one_line_error(ExitStatus.FETCH, "enqueue missing.mbox: no such file")
    bot(tmp_path, cfg, "enqueue", "--list", "bpf", MBOX).assert_one_line_error(ExitStatus.USAGE, "--list bpf: not a list of")
    two = write(tmp_path, config(tmp_path).read_text() + '[lists.bpf]\nmirror = "https://lore.example/bpf"\n')
    bot(tmp_path, two, "enqueue", MBOX).assert_one_line_error(ExitStatus.USAGE, "which list? give --list NAME")


@pytest.mark.parametrize(("text", "fragment"), [
    (None, "bot.toml: no such file"),
    ("[bot\nhome = 1", "bot.toml: not valid TOML: "),
    ('[bot]\nqueue = "sqlite"\n', "bot.toml: [bot] home: missing"),
    ('[bot]\nhome = "s"\nqueue = "amqp://host"\n', "bot.toml: [bot] queue: 'amqp://host' is neither \"sqlite\" nor a redis:// URL"),
    ('[bot]\nhome = "s"\ndb = "mysql://x"\n', "bot.toml: [bot] db: 'mysql://x' is not a postgresql:// URL"),
    ('[bot]\nhome = "s"\nhomme = "t"\n', "bot.toml: [bot] homme: unknown key"),
    ('[bot]\nhome = 3\n', "bot.toml: [bot] home: 3 is not a non-empty string"),
    ('[bot]\nhome = "s"\n[lists.netdev]\nmail = "off"\n', "bot.toml: [lists.netdev] mirror: missing"),
    ('lists = 3\n[bot]\nhome = "s"\n', "bot.toml: [lists]: missing, or not a table"),
    ('[bot]\nhome = "s"\nlease = "long"\n', "bot.toml: [bot] lease: 'long' is not a number of seconds (at least 1)"),
    ('[bot]\nhome = "s"\n[lists.n]\nmirror = "m"\ntree = "nowhere"\n', "bot.toml: [lists.n] tree: "),
], ids=["missing-file", "bad-toml", "no-home", "queue-scheme", "db-scheme", "unknown-key", "home-type", "no-mirror", "lists-type", "lease",
        "tree-not-git"])
def test_a_bad_configuration_is_one_line_and_exit_3(tmp_path: Path, text: str | None, fragment: str) -> None:
    cfg = tmp_path / "bot.toml" if text is None else write(tmp_path, text)
    bot(tmp_path, cfg, "status").assert_one_line_error(ExitStatus.CONFIG, fragment)


@pytest.mark.parametrize(("policy", "fragment"), [
    ('stages = ["static", "apply"]\n', "bot.toml: [lists.n] tree: missing: stage 'apply' applies series to a kernel tree"),
    ('stages = ["build"]\n', "bot.toml: [lists.n] arches: missing: stage 'build' runs once per architecture"),
    ('stages = ["guest"]\narches = ["vax"]\n', "bot.toml: [lists.n] arches: unknown value 'vax'"),
], ids=["apply-without-tree", "build-without-arches", "unknown-arch"])
def test_stages_the_list_cannot_run_are_refused_before_anything_starts(tmp_path: Path, policy: str, fragment: str) -> None:
    cfg = write(tmp_path, f'[bot]\nhome = "s"\n[lists.n]\nmirror = "m"\n{policy}')
    bot(tmp_path, cfg, "run", "--once").assert_one_line_error(ExitStatus.CONFIG, fragment)
