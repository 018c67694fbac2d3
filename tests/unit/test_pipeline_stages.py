"""Issue 15, typed stages: what a stage returns (a status, a detail, a payload), the boot record as a frozen
dataclass read as its JSON object, the boot stage's one listing and the commits it builds, the terminal
report's --slower-than, git config read by config.py, notes logged (not printed), and an unexpected
CommandError reported as the bug it is."""
from __future__ import annotations

import dataclasses
import logging
import os
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from reviewer import boot, config, pipeline
from reviewer.boot import ab, runner
from reviewer.boot.intests import InTest
from reviewer.cli import _dispatch
from reviewer.errors import CommandError, ExitStatus
from reviewer.kernel import kconfig
from reviewer.model import BenchResult, BootResult, Review, StageStatus
from reviewer.pipeline import review
from reviewer.report import json as json_report
from reviewer.report import terminal
from reviewer.request import BootOptions, CheckOptions, ReviewRequest, SelftestOptions, SourceOptions
from reviewer.series import lore, msgid
from reviewer.series import target as targets
from tests.conftest import SERIES, git
from tests.unit.selftests.test_logdir import _rule_dir

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"


# --- typed stage results ---------------------------------------------------------------------------

def test_a_step_returns_a_status_detail_and_payload() -> None:
    done = pipeline.ok("3 files", 42)
    assert (done.status, done.detail, done.payload) == (StageStatus.OK, "3 files", 42)
    skip = pipeline.skipped("skipped: is not a prefix any more")
    assert (skip.status, skip.detail, skip.payload) == (StageStatus.SKIPPED, "skipped: is not a prefix any more", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        done.detail = "x"  # type: ignore[misc]


def test_a_detail_that_starts_with_skipped_is_not_a_skip() -> None:
    """The status travels as a type: an OK step whose detail happens to say "skipped: " stays OK, whole."""
    run = pipeline._Run(contextlib_stack())
    assert pipeline._stage(run, "parse", lambda: pipeline.ok("skipped: 0 files", "payload"), None) == "payload"
    assert [(st.status, st.detail) for st in run.stages] == [(StageStatus.OK, "skipped: 0 files")]


def contextlib_stack() -> Any:
    import contextlib

    return contextlib.ExitStack()


def test_the_run_record_has_no_field_a_stage_hands_on() -> None:
    names = {f.name for f in dataclasses.fields(pipeline._Run)}
    assert not names & {"base", "base_tree", "patched"}, names


def test_boot_result_is_frozen_and_reads_as_its_json_object() -> None:
    result = BootResult("tcg", (("plain", ("CONFIG_KUNIT=y",)),), (("base/plain", "/l/boot-base-plain.log"),), "/l")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.accel = "kvm"  # type: ignore[misc]
    doc = {"accel": "tcg", "config": {"plain": ["CONFIG_KUNIT=y"]}, "logs": {"base/plain": "/l/boot-base-plain.log"}, "log_dir": "/l"}
    assert result.document() == doc and result == doc and result["log_dir"] == "/l"
    assert json_report.document(Review(None, boot=result))["boot"] == doc
    assert json_report.document(Review(None))["boot"] is None


# --- the boot stage: listed once, the base and the patched commits built ----------------------------------


def test_boot_lists_its_tests_once_and_builds_the_base_and_the_patched_commit(kernel_repo: Path, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """No kernel is built: the runner's seam (side) records which commit of which repository each side
    would build, and returns a failed build (so nothing boots)."""
    listings: list[list[str]] = []
    original = boot.relevant

    def counted(*args: Any, **kw: Any) -> list[tuple[InTest, str]]:
        found = original(*args, **kw)
        listings.append([t.name for t, _ in found])
        return found

    monkeypatch.setattr(boot, "relevant", counted)
    monkeypatch.setattr(runner, "relevant", counted)
    monkeypatch.setattr(runner, "preflight", lambda: None)
    built: dict[str, tuple[Path, str]] = {}

    def side(repo: Path, commit: str, tree: str, env: str, lines: tuple[str, ...], _cache: Path, _timeout: float) -> ab.BootedKernel:
        built[tree] = (repo, commit)
        return ab.BootedKernel(tree, env, kconfig.Build(ok=False, seconds=0.0, image=None, config=lines, log="not built: a test"))

    monkeypatch.setattr(runner, "side", side)
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", str(tmp_path / "boot-cache"))
    result, _ = review(ReviewRequest(SourceOptions(target=str(DEMO), cwd=tmp_path, tree=kernel_repo),
                                     checks=CheckOptions(checkpatch=False, rules_dirs=(_rule_dir(tmp_path),)),
                                     boot=BootOptions(run=True)))
    assert listings == [["kunit:demo"]]  # once: the runner is handed the pipeline's listing
    assert result.apply is not None and set(built) == {"base", "patched"}
    base_repo, base_commit = built["base"]
    patched_repo, patched_commit = built["patched"]
    assert base_commit == git(kernel_repo, "rev-parse", "HEAD").strip() == result.apply.base
    assert patched_commit != base_commit
    assert base_repo == patched_repo  # one repository holds both commits
    under = git(patched_repo, "--git-dir", str(patched_repo), "rev-parse", f"{patched_commit}~{len(result.apply.patches)}")
    assert under.strip() == base_commit
    assert next(st for st in result.stages if st.name == "boot").status is StageStatus.FAILED  # the failed builds are errors


# --- the terminal report: --slower-than -------------------------------------------------------------------

def _bench_text(slower_than: float) -> str:
    bench = BenchResult("getrandom", "plain", "vdso", "s", 1.0, 1.4, 1.4, 3, 0.01)
    console = Console(width=200, record=True, color_system="truecolor", force_terminal=True, file=open(os.devnull, "w"))  # noqa: SIM115
    terminal.render(Review(None, benchmarks=(bench,), slower_than=slower_than), console)
    return console.export_text(styles=True)


def test_the_terminal_marks_a_benchmark_slower_than_the_requested_threshold() -> None:
    bold_red = re.compile(r"\x1b\[1;31m1\.40x")
    assert bold_red.search(_bench_text(1.25))  # 1.40 > 1.25: marked
    assert not bold_red.search(_bench_text(1.5)) and "1.40x" in _bench_text(1.5)  # --slower-than 1.5: not
    assert bold_red.search(_bench_text(1.1))


def test_the_request_threshold_reaches_the_review(tmp_path: Path) -> None:
    result, error = review(ReviewRequest(SourceOptions(target=str(DEMO), cwd=tmp_path), selftests=SelftestOptions(slower_than=1.6)))
    assert error is None and result.slower_than == 1.6


# --- git config read by config.py, before any fetch ------------------------------------------------------------

def test_lore_url_and_cache_minutes_are_read_into_the_config(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "reviewer.loreUrl", " http://127.0.0.1:7/inbox ")
    git(tmp_path, "config", "reviewer.cacheMinutes", "2.5")
    cfg = config.load(tmp_path)
    assert (cfg.lore_url, cfg.cache_minutes) == ("http://127.0.0.1:7/inbox", 2.5)
    assert targets.Remote(cache_minutes=cfg.cache_minutes).fresh_seconds == 150.0
    ref = msgid.parse("a.b-1@x")
    assert ref is not None and lore.server_url(ref, None, cfg.lore_url) == "http://127.0.0.1:7/inbox/"
    assert lore.server_url(ref, "http://127.0.0.1:8/", cfg.lore_url) == "http://127.0.0.1:8/"  # --lore-url wins


def test_the_load_stage_gets_them_from_the_config_not_from_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "reviewer.loreUrl", "http://127.0.0.1:7/inbox/")
    git(tmp_path, "config", "reviewer.cacheMinutes", "0")
    seen: list[targets.Remote] = []

    def load(_target: targets.TargetSpec, _cwd: Path, _revision: Any, *, remote: targets.Remote, **_kw: Any) -> Any:
        seen.append(remote)
        raise CommandError(("git", "x"), 1, "", "stop here", None)

    monkeypatch.setattr(targets, "load", load)
    review(ReviewRequest(SourceOptions(target=str(DEMO), cwd=tmp_path)))
    assert [(r.configured_url, r.cache_minutes, r.fresh_seconds) for r in seen] == [("http://127.0.0.1:7/inbox/", 0.0, 0.0)]


# --- library code never prints ---------------------------------------------------------------------------------

def test_resolving_an_id_is_logged_not_printed(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    class Server:
        url = "http://127.0.0.1:9/all/"

        def candidates(self, _partial: str) -> list[str]:
            return ["abc-1@x"]

        def raw(self, _msgid: str) -> bytes:
            return b"Subject: [PATCH 0/2] a\n\n"

    with caplog.at_level(logging.INFO, logger="reviewer"):
        assert lore.resolve(Server(), "abc") == "abc-1@x"  # type: ignore[arg-type]
    assert capsys.readouterr() == ("", "")
    logged = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert logged == [("reviewer.series.lore", logging.INFO, "resolved abc to abc-1@x")]
    assert not hasattr(lore, "note")


def test_the_cli_shows_the_library_notes_on_stderr(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    def load(*_args: Any, **_kw: Any) -> Any:
        logging.getLogger("reviewer.series.target").info("note: a newer revision of this series exists (v2); reviewing v1 as asked")
        logging.getLogger("reviewer.series.target").warning("the search for other revisions failed")
        raise CommandError(("git", "x"), 1, "", "stop here", None)

    monkeypatch.setattr(targets, "load", load)
    monkeypatch.chdir(tmp_path)
    _dispatch([str(DEMO), "--format", "json"])
    err = capsys.readouterr().err.splitlines()
    assert err[:2] == ["review: note: a newer revision of this series exists (v2); reviewing v1 as asked",
                       "review: warning: the search for other revisions failed"]
    assert logging.getLogger("reviewer").handlers == []  # removed when the command ends


# --- an unexpected CommandError is a bug --------------------------------------------------------------------------

def test_an_unexpected_command_error_writes_the_crash_log(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    def load(*_args: Any, **_kw: Any) -> Any:
        raise CommandError(("git", "frobnicate"), 129, "", "git: 'frobnicate' is not a git command", None)

    monkeypatch.setattr(targets, "load", load)
    monkeypatch.chdir(tmp_path)
    assert _dispatch([str(DEMO)]) == int(ExitStatus.INTERNAL) == 70
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "review: error: internal error: CommandError: `git frobnicate` exited 129: git: 'frobnicate' is not a git command"
    hint = re.fullmatch(r"hint: this is a bug; the traceback is in (\S+\.log)", err[1])
    assert hint is not None, err
    log = Path(hint[1])
    assert log.is_file() and "CommandError" in log.read_text() and "Traceback" in log.read_text()
