"""The run's log directory: where it goes (--log-dir, git config reviewer.logDir, $XDG_STATE_HOME), that it
is made only when a stage has a log to keep, and that the reports name it. QEMU and the selftest
runner are replaced by fakes: what is tested is where their logs go."""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from reviewer import boot, config, pipeline
from reviewer.boot import ab, runner
from reviewer.boot.intests import InTest
from reviewer.kernel import kconfig, qemu
from reviewer.ktap import Result
from reviewer.model import TestRun
from reviewer.pipeline import review
from reviewer.report import json as json_report
from reviewer.report import terminal
from reviewer.request import BootOptions, CheckOptions, ReviewRequest, RunOptions, SelftestOptions, SourceOptions
from reviewer.selftests import stage as selftest_stage
from tests.conftest import SERIES, git

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
STAMP = "20250101T120000Z-4242"


def state() -> Path:
    return Path(os.environ["XDG_STATE_HOME"])


# --- where it goes ---------------------------------------------------------------------------

def test_run_stamp_is_utc_time_and_pid() -> None:
    first, second = config.run_stamp(), config.run_stamp()
    assert re.fullmatch(rf"\d{{8}}T\d{{6}}Z-{os.getpid()}(-\d+)?", first)
    assert second != first and second.startswith(first.split("-")[0])  # two runs of one process never share a directory
    assert ReviewRequest(SourceOptions(target="x")).run.stamp != ""
    assert ReviewRequest(SourceOptions(target="x"), run=RunOptions(stamp=STAMP)).run.stamp == STAMP


def test_default_is_under_xdg_state_home(monkeypatch: pytest.MonkeyPatch) -> None:
    assert config.run_log_dir(config.Config(), None, STAMP) == state() / "reviewer" / "logs" / STAMP
    monkeypatch.delenv("XDG_STATE_HOME")
    assert config.run_log_dir(config.Config(), None, STAMP) == Path.home() / ".local" / "state" / "reviewer" / "logs" / STAMP


def test_git_config_then_the_option(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    assert config.load(tmp_path).log_dir is None
    git(tmp_path, "config", "reviewer.logDir", "~/review-logs")
    cfg = config.load(tmp_path)
    assert cfg.log_dir == Path.home() / "review-logs"
    assert config.run_log_dir(cfg, None, STAMP) == Path.home() / "review-logs" / STAMP
    assert config.run_log_dir(cfg, tmp_path / "ci", STAMP) == tmp_path / "ci" / STAMP  # --log-dir wins
    git(tmp_path, "config", "reviewer.logDir", "logs")
    assert config.load(tmp_path).log_dir == tmp_path / "logs"  # relative: to where it was configured


def test_the_users_setting_beats_the_trees(tmp_path: Path) -> None:
    tree, cwd = tmp_path / "linux", tmp_path / "me"
    for repo, logs in ((tree, "/srv/tree-logs"), (cwd, "/srv/my-logs")):
        repo.mkdir()
        git(repo, "init", "-q")
        git(repo, "config", "reviewer.logDir", logs)
    assert config.load(cwd, tree).log_dir == Path("/srv/my-logs")


# --- made only when there is something to keep -----------------------------------------------------

def test_selftest_logs_are_saved_one_file_a_run(tmp_path: Path) -> None:
    runs = [TestRun("build vDSO", "base", "-", Result.ERROR, 0.0, "no", "make: *** failed"),
            TestRun("vDSO:vdso_test_getrandom", "patched", "timens", Result.PASS, 0.1, "", "TAP version 13\nok 1\n"),
            TestRun("vDSO:quiet", "patched", "plain", Result.SKIP, 0.0, "not built")]
    assert selftest_stage.save_logs(runs, tmp_path / "logs") == 2
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["base---build_vDSO.log", "patched-timens-vDSO_vdso_test_getrandom.log"]
    assert (tmp_path / "logs" / "base---build_vDSO.log").read_text() == "make: *** failed\n"
    assert selftest_stage.save_logs(runs[2:], tmp_path / "none") == 0 and not (tmp_path / "none").exists()


def _fake_boot(_image: Path, _timeout: float, log: Path | None = None, _append: str = "") -> qemu.Boot:
    assert log is not None
    log.write_text("Linux version 6.12\nKernel panic - not syncing: No working init found.\n")
    return qemu.Boot(log.read_text(), 1.0, timed_out=False, accel="tcg", returncode=0, log=log)


def test_boot_logs_dir_is_made_by_the_first_boot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qemu, "boot", _fake_boot)
    broken = kconfig.Build(ok=False, seconds=1.0, image=None, config=(), log="error")
    paths: dict[str, str] = {}
    runner._boot({"base": ab.BootedKernel("base", "plain", broken), "patched": ab.BootedKernel("patched", "plain", broken)},
                 3, 10.0, tmp_path / "a", paths)
    assert not (tmp_path / "a").exists() and paths == {}  # no kernel, no console, no directory
    built = kconfig.Build(ok=True, seconds=1.0, image=tmp_path / "bzImage", config=(), log="")
    runner._boot({"base": ab.BootedKernel("base", "plain", built), "patched": ab.BootedKernel("patched", "plain", broken)},
                 1, 10.0, tmp_path / "b", paths)
    assert paths == {"base/plain": str(tmp_path / "b" / "boot-base-plain.log")}
    assert "No working init" in (tmp_path / "b" / "boot-base-plain.log").read_text()


# --- through the pipeline and into the reports ---------------------------------------------------

class FakeIntests:
    """boot.run_intests without a build: one console log written where the pipeline says."""

    def __init__(self) -> None:
        self.log_dir: Path | None = None
        self.extra: list[InTest] = []

    def __call__(self, _base_wt: Path, _patched_wt: Path, _touched: Any, _envs: Any, _cache_dir: Path, _timeout: float,
                 *, log_dir: Path | None = None, extra: Any = (), **_kw: Any) -> runner.BootResults:
        assert log_dir is not None
        self.log_dir, self.extra = log_dir, list(extra)
        log_dir.mkdir(parents=True)
        (log_dir / "boot-base-plain.log").write_text("console\n")
        return runner.BootResults(config={"plain": ("CONFIG_KUNIT=y",)}, logs={"base/plain": str(log_dir / "boot-base-plain.log")},
                                  accel="tcg")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeIntests:
    fake = FakeIntests()
    monkeypatch.setattr(boot, "run_intests", fake)  # the pipeline looks it up when the stage runs
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", str(tmp_path / "boot-cache"))
    return fake


def _rule_dir(tmp_path: Path) -> Path:
    rules = tmp_path / "rules"
    rules.mkdir(exist_ok=True)
    (rules / "demo-kunit.toml").write_text("""schema = 1
id = "demo-kunit"
level = "info"
summary = "s"
why = "w"
[trigger]
any_of = [{ path = '^arch/loongarch/Kconfig$' }]
[[in_kernel_test]]
name = "demo"
kind = "kunit"
config = "DEMO_KUNIT_TEST"
""")
    return rules


def test_boot_console_logs_go_to_the_run_log_dir_and_the_reports_say_where(kernel_repo: Path, tmp_path: Path, fake: FakeIntests) -> None:
    request = ReviewRequest(SourceOptions(target=str(DEMO), cwd=tmp_path, tree=kernel_repo),
                            checks=CheckOptions(checkpatch=False, rules_dirs=(_rule_dir(tmp_path),)),
                            boot=BootOptions(run=True),
                            run=RunOptions(stamp=STAMP))
    result, error = review(request)
    assert error is None, error
    where = state() / "reviewer" / "logs" / STAMP
    assert fake.log_dir == where and [t.name for t in fake.extra] == ["kunit:demo"]
    assert result.boot is not None and result.boot["log_dir"] == str(where)
    assert json.loads(json_report.dumps(result))["boot"]["log_dir"] == str(where)
    assert next(st.detail for st in result.stages if st.name == "boot").endswith(f"; console logs in {where}")
    console = Console(width=200, record=True, color_system=None, file=open(os.devnull, "w"))  # noqa: SIM115
    terminal.render(result, console)
    assert f"Logs  {where} (the boot console logs)" in console.export_text()


def test_log_dir_from_the_request_then_git_config(kernel_repo: Path, tmp_path: Path, fake: FakeIntests) -> None:
    asked = ReviewRequest(SourceOptions(target=str(DEMO), cwd=tmp_path, tree=kernel_repo),
                          checks=CheckOptions(checkpatch=False, rules_dirs=(_rule_dir(tmp_path),)),
                          boot=BootOptions(run=True),
                          run=RunOptions(stamp=STAMP, log_dir=tmp_path / "ci-logs"))
    assert review(asked)[0].boot == {"accel": "tcg", "config": {"plain": ["CONFIG_KUNIT=y"]},
                                     "logs": {"base/plain": str(tmp_path / "ci-logs" / STAMP / "boot-base-plain.log")},
                                     "log_dir": str(tmp_path / "ci-logs" / STAMP)}
    git(kernel_repo, "config", "reviewer.logDir", str(tmp_path / "configured"))
    review(ReviewRequest(SourceOptions(target=str(DEMO), cwd=tmp_path, tree=kernel_repo),
                         checks=CheckOptions(checkpatch=False, rules_dirs=(_rule_dir(tmp_path),)),
                         boot=BootOptions(run=True),
                         run=RunOptions(stamp=STAMP)))
    assert fake.log_dir == tmp_path / "configured" / STAMP


def test_selftest_output_goes_to_the_run_log_dir(kernel_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = (TestRun("vDSO:vdso_test_getrandom", "base", "plain", Result.PASS, 0.1, "", "ok 1\n"),
            TestRun("vDSO:vdso_test_getrandom", "patched", "plain", Result.PASS, 0.1, "", "ok 1\n"))
    monkeypatch.setattr(pipeline, "_run_tests", lambda *_args: selftest_stage.SelftestResults(runs, (), ()))
    result, error = review(ReviewRequest(SourceOptions(target=str(DEMO), cwd=tmp_path, tree=kernel_repo),
                                         checks=CheckOptions(checkpatch=False),
                                         selftests=SelftestOptions(run=True),
                                         run=RunOptions(stamp=STAMP)))
    assert error is None, error
    where = state() / "reviewer" / "logs" / STAMP / "selftests"
    assert sorted(p.name for p in where.iterdir()) == ["base-plain-vDSO_vdso_test_getrandom.log",
                                                       "patched-plain-vDSO_vdso_test_getrandom.log"]
    assert next(st.detail for st in result.stages if st.name == "selftests").endswith(f"; output in {where}")


def test_nothing_to_keep_makes_no_directory(kernel_repo: Path, tmp_path: Path) -> None:
    result, error = review(ReviewRequest(SourceOptions(target=str(DEMO), cwd=tmp_path, tree=kernel_repo),
                                         checks=CheckOptions(checkpatch=False)))
    assert error is None and result.boot is None
    assert not (state() / "reviewer" / "logs").exists()


def test_old_run_directories_are_pruned_and_nothing_else(tmp_path: Path) -> None:
    old, recent, other = tmp_path / "20250101T000000Z-42", tmp_path / "20261129T235959Z-43-2", tmp_path / "20250101-mine"
    for d in (old, recent, other):
        (d / "selftests").mkdir(parents=True)
    month_ago = time.time() - (config.LOG_DAYS + 1) * 86400
    for d in (old, other):
        os.utime(d, (month_ago, month_ago))
    assert config.run_log_dir(config.Config(), tmp_path, "20261130T000000Z-44") == tmp_path / "20261130T000000Z-44"
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name, recent.name]  # not ours by name: kept whatever its age
