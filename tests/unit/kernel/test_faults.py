"""What a guest's end says about the kernel: a panic or an oops on its side, a hang, vng dying."""
from __future__ import annotations

from pathlib import Path

from reviewer.kernel import guest
from reviewer.kernel.jobs import Job
from reviewer.model import Level
from reviewer.selftests import inguest

JOB = Job(Path("/t"), ("./x",), "plain", 45)
PANIC = """virtme-ng-init: starting script
reviewer-guest: start
reviewer-guest: job 0
[    3.210000] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009
[    3.210100] CPU: 0 UID: 0 PID: 1 Comm: virtme-ng-init Not tainted 6.12.0 #1
[    3.210200] Call Trace:
[    3.210300]  <TASK>
[    3.210400]  dump_stack_lvl+0x5d/0x80
[    3.210500]  panic+0x118/0x2e0
[    3.210600] ---[ end Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009 ]---
"""


def test_a_panic_is_an_error_on_the_patched_side_quoting_the_console() -> None:
    run = guest.GuestRun((None,), PANIC, 4.0, timed_out=False, accel="tcg", returncode=0)
    (f,) = inguest.faults(run, "patched")
    assert f.level is Level.ERROR and f.rule == "vm"
    assert f.message == "the patched kernel: Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009"
    assert "panic+0x118/0x2e0" in "\n".join(f.quote)
    assert inguest.fault(run) == "the kernel died: Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009"
    (b,) = inguest.faults(run, "base")
    assert b.level is Level.WARNING  # the base did it: not the series
    base = inguest.run_kinds(guest.GuestRun((None,), PANIC.replace("PID: 1", "PID: 7").replace("0x118", "0x11c"), 4.0, timed_out=False,
                                            accel="tcg", returncode=0))
    (both,) = inguest.faults(run, "patched", known=base)
    assert both.level is Level.WARNING  # the base's guest died the same way (its numbers aside)


def test_a_fault_the_base_did_not_show_is_the_series_even_when_the_base_had_another() -> None:
    """A base guest with its own trouble (a TCG stall's WARNING) does not excuse a patched panic."""
    stall = ("reviewer-guest: start\n[   40.1] WARNING: CPU: 0 PID: 0 at kernel/time/clocksource.c:123 watchdog+0x1/0x2\n"
             "reviewer-guest: done\n")
    base = inguest.run_kinds(guest.GuestRun((None,), stall, 50.0, timed_out=False, accel="tcg", returncode=0))
    assert len(base) == 1
    run = guest.GuestRun((None,), PANIC, 4.0, timed_out=False, accel="tcg", returncode=0)
    (f,) = inguest.faults(run, "patched", known=base)
    assert f.level is Level.ERROR, f
    (w,) = inguest.faults(guest.GuestRun((None,), stall.replace("PID: 0", "PID: 3"), 50.0, timed_out=False, accel="tcg", returncode=0),
                          "patched", known=base)
    assert w.level is Level.WARNING


def test_a_hang_is_a_finding_with_the_last_lines() -> None:
    run = guest.GuestRun((None,), "reviewer-guest: start\nreviewer-guest: job 0\n", 300.0, timed_out=True, accel="tcg", returncode=-9)
    (f,) = inguest.faults(run, "patched")
    assert "hung: the guest did not finish its tests within 300s and was killed" in f.message
    assert f.quote[-1] == "reviewer-guest: job 0"
    assert inguest.fault(run).startswith("the guest was killed after 300s (hung?)")


def test_a_clean_guest_has_no_finding_and_vng_dying_early_is_one() -> None:
    ran = guest.Ran(JOB, "ok 1\n", 0, 1.0, timed_out=False)
    assert inguest.faults(guest.GuestRun((ran,), "reviewer-guest: done\nreboot: Power down\n", 20.0, timed_out=False, accel="tcg",
                                         returncode=0), "patched") == []
    died = guest.GuestRun((None,), "cannot find script I/O ports; make sure virtio-serial is available\n", 2.0, timed_out=False,
                          accel="tcg", returncode=1)
    (f,) = inguest.faults(died, "base")
    assert f.message == ("the base kernel: vng exited (1) before the tests ended: "
                         "cannot find script I/O ports; make sure virtio-serial is available")
