"""reviewer/bot/stages.py: the tree stages run `review` as a child in a process group of its own; its JSON report is
the job's result, a review that ends without a report is the stage's failure, and a job taken away from the worker
while its review runs kills the whole group (nothing of it is left, and the user's tree keeps no worktree)."""
from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from reviewer.bot import stages
from reviewer.bot.jobs import Job
from reviewer.errors import ExitStatus

DEMO = Path(__file__).resolve().parents[2] / "fixtures/series/loongarch-vdso-getrandom-v4.mbox"


def _job(tree: Path, mbox: Path, stage: str = "apply", arch: str = "") -> Job:
    payload = {"mbox": str(mbox), "tree": str(tree)}
    return Job(1, "k", "l", "s", stage, arch, "", "", stage, 0, "running", 1, 3, None, None, 0.0, payload, None, None, 0.0, 0.0)


def _worktrees(tree: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(tree), "worktree", "list"], capture_output=True, text=True, check=True).stdout.splitlines()


def test_the_apply_stage_is_the_reviews_json_report(kernel_repo: Path, tmp_path: Path) -> None:
    mbox = tmp_path / "s.mbox"
    mbox.write_bytes(DEMO.read_bytes())
    got = stages.apply(_job(kernel_repo, mbox), threading.Event())
    assert got["status"] in (ExitStatus.OK, ExitStatus.FINDINGS)
    assert got["review"]["apply"]["base_source"] in ("trailer", "head", "guess")
    assert [p["status"] for p in got["review"]["apply"]["patches"]] == ["applied"] * 4
    assert len(_worktrees(kernel_repo)) == 1  # the review's worktree is gone


def test_a_review_without_a_report_fails_the_stage(tmp_path: Path) -> None:
    (tmp_path / "not-a-tree").mkdir()
    mbox = tmp_path / "s.mbox"
    mbox.write_bytes(DEMO.read_bytes())
    with pytest.raises(RuntimeError, match=r"review exited 3: review: error: --tree .*not-a-tree"):
        stages.apply(_job(tmp_path / "not-a-tree", mbox), threading.Event())


def test_a_job_taken_away_kills_its_reviews_process_group(kernel_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mbox = tmp_path / "s.mbox"
    mbox.write_bytes(DEMO.read_bytes())
    stopped = threading.Event()
    seen: list[int] = []
    real = subprocess.Popen

    def spy(*args: object, **kw: object) -> subprocess.Popen[bytes]:
        proc = real(*args, **kw)  # type: ignore[call-overload]
        seen.append(proc.pid)
        threading.Timer(1.0, stopped.set).start()  # the job is superseded a second into its review
        return proc  # type: ignore[no-any-return]

    monkeypatch.setattr(stages.subprocess, "Popen", spy)
    with pytest.raises(stages.Stopped, match="its process group was killed"):
        stages.build(_job(kernel_repo, mbox, "build", "x86_64"), stopped)
    (pgid,) = seen
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)  # nothing of the group is left
    assert len(_worktrees(kernel_repo)) == 1


def test_a_stopping_worker_ends_the_reviews_its_stages_run(kernel_repo: Path, tmp_path: Path) -> None:
    mbox = tmp_path / "s.mbox"
    mbox.write_bytes(DEMO.read_bytes())
    raised: list[BaseException] = []

    def stage() -> None:
        try:
            stages.build(_job(kernel_repo, mbox, "build", "x86_64"), threading.Event())
        except BaseException as exc:  # noqa: BLE001 (what the stage raised is the test's)
            raised.append(exc)

    thread = threading.Thread(target=stage)
    thread.start()
    deadline = time.monotonic() + 30
    while not stages._RUNNING and time.monotonic() < deadline:
        time.sleep(0.05)
    (pgid,) = list(stages._RUNNING)
    assert stages.stop_all() == 1
    thread.join(60)
    assert [type(e) for e in raised] == [stages.Stopped]
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    assert stages._RUNNING == {} and len(_worktrees(kernel_repo)) == 1
