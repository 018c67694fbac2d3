"""The guest's script, run here by bash exactly as the guest runs it (no VM needed to check what it writes)."""
from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from reviewer.kernel import guest
from reviewer.kernel import guestroot as root
from reviewer.kernel.arches import GUESTS
from reviewer.kernel.jobs import Job
from reviewer.ktap import Result
from reviewer.model import Level
from reviewer.run.sandbox import Sandbox
from reviewer.selftests import inguest
from reviewer.selftests.choose import SELFTESTS, TestRef
from reviewer.selftests.run import Start, prepare
from tests.unit.kernel.conftest import alive, pid_of


def _run(tmp_path: Path, jobs: list[Job]) -> list[guest.Ran | None]:
    results = tmp_path / "results"
    results.mkdir()
    script = results / "run.sh"
    script.write_text(guest.script(jobs, results))
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "reviewer-guest: start" and done.stdout.splitlines()[-1] == "reviewer-guest: done"
    return [guest._read(results, n, job) for n, job in enumerate(jobs)]


def test_each_job_runs_from_its_directory_with_its_exit_status(tmp_path: Path) -> None:
    here = tmp_path / "a dir with 'quotes' and spaces"
    here.mkdir()
    (here / "t.sh").write_text("#!/bin/sh\necho from $(basename \"$PWD\"); echo to stderr >&2; exit 4\n")
    (here / "t.sh").chmod(0o755)
    ran = _run(tmp_path, [Job(here, ("./t.sh",), "plain", 10), Job(here, ("sh", "-c", "exit 0"), "plain", 10)])
    first, second = ran
    assert first is not None and second is not None
    assert first.returncode == 4 and not first.timed_out
    assert first.output.splitlines() == [f"from {here.name}", "to stderr"]
    assert second.returncode == 0 and 0 <= second.seconds < 5


def test_what_a_job_leaves_running_is_named_and_killed(tmp_path: Path, leavers: Path) -> None:
    """The hostile daemon and the child in a session of its own, plainly and in the time namespace, and twelve sleepers:
    each named with its command line (what the test made it), counted, and gone before the next job; none for a job
    that leaves nothing."""
    sleepers = ("sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do setsid sleep 300 & done; (sleep 301 & exec sleep 302) &")
    ran = _run(tmp_path, [Job(leavers, ("./hostile_daemon",), "plain", 30), Job(leavers, ("./hostile_setsid",), "timens", 30),
                          Job(tmp_path, sleepers, "plain", 30), Job(tmp_path, ("true",), "plain", 30)])
    daemon, setsid, many, none = ran
    for r, name in ((daemon, "hostile_daemon"), (setsid, "hostile_setsid")):
        assert r is not None and r.returncode == 0 and not r.timed_out and r.seconds < 5, r
        assert r.left_count == 1 and len(r.left) == 1 and r.left[0].endswith(f": ./{name}"), r
        assert not alive(pid_of(r.left[0]))
    assert many is not None and many.left_count == 14 and len(many.left) == guest.SHOWN_LEFT, many
    # One caught in execve() (a CI run saw it) is named as ps names it, by the program it was leaving or becoming.
    assert {x.split(": ", 1)[1] for x in many.left} <= {"setsid sleep 300", "sleep 300", "sleep 301", "sleep 302", "[sh]", "[setsid]",
                                                         "[sleep]"}
    assert not any(alive(pid_of(x)) for x in many.left)
    assert none is not None and none.left == () and none.left_count == 0


def test_a_test_that_left_processes_in_its_guest_is_a_warning_on_that_test_and_its_row_says_so(tmp_path: Path, leavers: Path) -> None:
    """The guest's side of the selftest stage (inguest.judge) on what the script wrote: the row still passes, says
    that it left processes, and a `sandbox` warning names the test, its tree, its environment, how many and which."""
    wt = tmp_path / "wt"
    (wt / SELFTESTS).mkdir(parents=True)
    leavers.rename(wt / SELFTESTS / "hostile")
    items = [inguest.Item(TestRef("hostile", "hostile_daemon"), "plain"), inguest.Item(TestRef("hostile", "hostile_setsid"), "timens")]
    starts = tuple(prepare(wt, i.ref, tree="patched", env=i.env) for i in items)
    jobs = [Job(s.cwd, s.argv, s.env, s.limit) for s in starts if isinstance(s, Start)]
    booted = inguest.Booted("patched", starts, tuple(items),
                            guest.GuestRun(tuple(_run(tmp_path, jobs)), "", 1.0, timed_out=False, accel="tcg", returncode=0),
                            image=True)
    batch = inguest.judge(inguest.Kernels({"patched": Path("/k")}, {"patched": "booted abc x86_64 tcg"}), booted)
    daemon, setsid = batch.runs
    assert daemon.result is Result.PASS and daemon.reason == "guest: left processes running" and daemon.where == "booted abc x86_64 tcg"
    assert setsid.result is Result.PASS and setsid.reason == "guest: left processes running"
    warned = {f.path: f for f in batch.findings}
    assert set(warned) == {f"{SELFTESTS}/hostile/hostile_daemon", f"{SELFTESTS}/hostile/hostile_setsid"}
    d = warned[f"{SELFTESTS}/hostile/hostile_daemon"]
    assert d.rule == "sandbox" and d.level is Level.WARNING
    assert re.fullmatch(r"hostile:hostile_daemon on the patched tree \(plain\) left 1 process running when it exited "
                        r"\(the guest killed them\): pid \d+: \./hostile_daemon", d.message), d.message
    message = warned[f"{SELFTESTS}/hostile/hostile_setsid"].message
    assert message.startswith("hostile:hostile_setsid on the patched tree (timens) left 1 process")


def test_a_job_past_its_timeout_is_killed_and_the_next_one_still_runs(tmp_path: Path) -> None:
    ran = _run(tmp_path, [Job(tmp_path, ("sleep", "30"), "plain", 1), Job(tmp_path, ("echo", "next"), "plain", 10)])
    slow, after = ran
    assert slow is not None and slow.timed_out and slow.returncode == 124 and 1 <= slow.seconds < 10
    assert after is not None and after.output == "next\n"


def test_a_test_that_exits_124_quickly_did_not_time_out(tmp_path: Path) -> None:
    (ran,) = _run(tmp_path, [Job(tmp_path, ("sh", "-c", "exit 124"), "plain", 30)])
    assert ran is not None and ran.returncode == 124 and not ran.timed_out


def test_timens_jobs_run_a_year_ahead(tmp_path: Path) -> None:
    (ran,) = _run(tmp_path, [Job(tmp_path, ("cat", "/proc/uptime", "/proc/self/timens_offsets"), "timens", 10)])
    assert ran is not None and ran.returncode == 0, ran
    uptime = float(ran.output.split()[0])
    assert uptime > 365 * 24 * 3600
    assert "boottime     31536000" in ran.output


def test_a_job_the_guest_never_finished_reads_as_not_run(tmp_path: Path) -> None:
    job = Job(tmp_path, ("true",), "plain", 10)
    (tmp_path / "0.rc").write_text("garbage\n")
    assert guest._read(tmp_path, 0, job) is None
    assert guest._read(tmp_path, 1, job) is None  # no status file at all
    link = tmp_path / "2.rc"
    link.symlink_to("/etc/hostname")
    assert guest._read(tmp_path, 2, job) is None  # what the guest wrote is never followed through a link


def test_the_vng_command_has_no_network_and_shares_only_what_it_is_given(tmp_path: Path) -> None:
    argv = guest.command(Path("/k/bzImage"), tmp_path / "run.sh", [Path("/t/wt"), Path("/t/results"), Path("/t/wt")], "tcg")
    assert "--network" not in argv and "-n" not in argv
    assert [a for a in argv if a.startswith("--rwdir")] == ["--rwdir=/t/wt", "--rwdir=/t/results"]
    assert "--disable-kvm" in argv and "--force-9p" in argv
    assert argv[argv.index("--exec") + 1] == f"bash {tmp_path}/run.sh"
    assert "--disable-kvm" not in guest.command(Path("/k/bzImage"), tmp_path / "run.sh", [], "kvm")


def test_another_architecture_boots_its_own_root_always_under_tcg(tmp_path: Path) -> None:
    ppc = GUESTS["ppc64le"]
    argv = guest.command(Path("/k/vmlinux"), Path("/t/results/run.sh"), [tmp_path / "root/t/results"], "tcg", ppc, tmp_path / "root")
    assert argv[argv.index("--arch") + 1] == "ppc64el" and argv[argv.index("--root") + 1] == str(tmp_path / "root")
    assert argv[argv.index("--exec") + 1] == "bash /t/results/run.sh"  # the guest's path: the root is its /
    assert guest.accel_for(Path("/nonexistent/vmlinux"), ppc) == "tcg"  # no probe: KVM cannot run another architecture
    assert ppc.test_vars() == ("ARCH=powerpc", "CROSS_COMPILE=powerpc64le-linux-gnu-")
    assert GUESTS["x86_64"].test_vars() == ()  # the host's: built as the tests always are


def test_a_boot_gets_a_copy_of_the_root_with_the_shared_directories_inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_GUEST_ROOTS", str(tmp_path / "roots"))
    cached = tmp_path / "roots/ppc64el"
    (cached / "bin").mkdir(parents=True)
    (cached / "bin/bash").write_text("#!elf\n")
    (cached / "bin/sh").symlink_to("bash")
    copies = root.prepare(GUESTS["ppc64le"], tmp_path / "boot", [Path("/w/tools/testing/selftests/vDSO"), Path("/r/results")])
    assert copies == {Path("/w/tools/testing/selftests/vDSO"): tmp_path / "boot/w/tools/testing/selftests/vDSO",
                      Path("/r/results"): tmp_path / "boot/r/results"}
    assert (tmp_path / "boot/bin/sh").readlink() == Path("bash") and (tmp_path / "boot/w/tools/testing/selftests").is_dir()
    (tmp_path / "boot/bin/bash").write_text("changed in the copy\n")
    assert (cached / "bin/bash").read_text() == "#!elf\n"  # a copy, not links into the cache


def test_a_test_directory_is_copied_into_the_root_in_the_sandbox_links_and_fifos_as_they_are(tmp_path: Path) -> None:
    """The series' directory may hold a symlink out of the tree or a FIFO: copied as they are, never followed or opened."""
    src = tmp_path / "wt/tools/testing/selftests/vDSO"
    src.mkdir(parents=True)
    (src / "vdso_test").write_text("#!prog\n")
    (src / "vdso_test").chmod(0o755)
    (src / "out").symlink_to("/etc/shadow")
    os.mkfifo(src / "fifo")
    boot = tmp_path / "scratch/boot"
    dest = boot / src.relative_to("/")
    dest.parent.mkdir(parents=True)
    results = tmp_path / "results"
    assert guest._copy_in({src: dest, results: boot / "results"}, results, Sandbox(tmp_path / "scratch"), tmp_path / "scratch") == ""
    assert (dest / "vdso_test").read_text() == "#!prog\n" and os.access(dest / "vdso_test", os.X_OK)
    assert (dest / "out").readlink() == Path("/etc/shadow") and stat.S_ISFIFO((dest / "fifo").lstat().st_mode)
