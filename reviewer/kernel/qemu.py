"""Boot a bzImage under QEMU with no root file system and capture its serial console.

The built-in tests run during the initcalls; the boot then ends in the expected "no init"
panic, and `panic=-1 -no-reboot` make QEMU exit there. The VM runs in its own process group,
killed as soon as the console says the boot is over, at the wall-clock timeout, or on Ctrl-C.
KVM is used when it really boots a guest (/dev/kvm may exist and fail inside a VM); TCG otherwise;
REVIEWER_BOOT_ACCEL=tcg forces TCG.
"""
from __future__ import annotations

import fcntl
import functools
import os
from dataclasses import dataclass
from pathlib import Path

from reviewer.kernel import console
from reviewer.kernel.arches import X86_64
from reviewer.proc import watch

QEMU = X86_64.qemu  # the in-kernel tests boot x86_64 kernels
MEMORY_MB = 256
_KVM_GET_API_VERSION, _KVM_CREATE_VM, _KVM_API = 0xAE00, 0xAE01, 12
PROBE_SECONDS = 20.0
GUARD_SECONDS = 30.0


@dataclass(frozen=True)
class Boot:
    console: str
    seconds: float
    timed_out: bool
    accel: str  # kvm | tcg
    returncode: int | None
    log: Path | None


@functools.cache
def kvm_usable() -> bool:
    """/dev/kvm opens, speaks the stable API and lets us create a VM (what QEMU does first)."""
    if os.environ.get("REVIEWER_BOOT_ACCEL") == "tcg":
        return False
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if fcntl.ioctl(fd, _KVM_GET_API_VERSION) != _KVM_API:
            return False
        os.close(fcntl.ioctl(fd, _KVM_CREATE_VM, 0))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


_kvm_runs: dict[str, bool] = {}  # the probe's verdict, once per process


def kvm_works(image: Path) -> bool:
    """KVM that boots a guest: nested KVM may pass every ioctl and then hang in the firmware or
    abort on an MSR, so the first boot under KVM must show the kernel's banner within a few seconds."""
    if "verdict" not in _kvm_runs:
        ok = kvm_usable()
        if ok:
            guard = ["timeout", "-s", "KILL", f"{PROBE_SECONDS + GUARD_SECONDS:.0f}"]
            probe = watch([*guard, *command(image, "kvm")], stop=lambda ln: "Linux version" in ln, timeout=PROBE_SECONDS)
            ok = probe.stopped_at is not None
        _kvm_runs["verdict"] = ok
    return _kvm_runs["verdict"]


def command(image: Path, accel: str, append: str = "") -> list[str]:
    cpu = ["-enable-kvm", "-cpu", "host"] if accel == "kvm" else ["-accel", "tcg"]
    cmdline = f"console=ttyS0 panic=-1 {append}".strip()
    return [QEMU, *cpu, "-nographic", "-no-reboot", "-m", str(MEMORY_MB), "-smp", "1", "-nodefaults",
            "-serial", "stdio", "-kernel", str(image), "-append", cmdline]


def boot(image: Path, timeout: float, log: Path | None = None, append: str = "") -> Boot:
    accel = "kvm" if kvm_works(image) else "tcg"
    # `timeout` also ends the VM if we are killed before we can (SIGKILL, or SIGINT ignored in a background job).
    guard = ["timeout", "-s", "KILL", f"{timeout + GUARD_SECONDS:.0f}"]
    done = watch([*guard, *command(image, accel, append)], stop=console.is_end, timeout=timeout, log=log)
    return Boot(done.output, done.seconds, done.timed_out, accel, done.returncode, log)
