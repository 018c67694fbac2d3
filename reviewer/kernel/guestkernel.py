"""The kernels selftests run in: tinyconfig + what a virtme-ng userspace needs + the tests' own fragments.

Built in the tree's kernel cache (kernel/images.py: the cache's source checkout, one build
directory per kind, ccache, images kept by tree and fragment), so a base is built once and a
patched kernel is an incremental build of it. The fragment is the same for both sides: the
chosen directories' `config` files (the kselftest convention) as the patched tree has them, so
the kernels differ by the series alone.
"""
from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from reviewer.kernel import images, kconfig
from reviewer.kernel.arches import X86_64, Arch
from reviewer.kernel.srctree import SELFTESTS
from reviewer.run.sandbox import read_untrusted

# virtme-ng's guest (measured: docs/design.md#measured-facts): a console, ELF and scripts, the pseudo file systems, 9p
# (guest.py passes --force-9p) and overlayfs for the shared root, virtio-pci, Unix sockets and netlink
# for udev, and the user, time and pid namespaces the timens environment and many tests need; then the
# guest architecture's own (kernel/arches.py: x86_64's ACPI, without which the guest hangs before init).
# No INET: the guest has no network anyway, and net/ipv4 and ipv6 were a large part of the build.
USERSPACE = (
    "PRINTK", "BUG", "KALLSYMS", "TTY", "BINFMT_ELF", "BINFMT_SCRIPT", "PROC_FS", "SYSFS", "DEVTMPFS", "DEVTMPFS_MOUNT",
    "TMPFS", "SHMEM", "BLK_DEV_INITRD", "NAMESPACES", "USER_NS", "TIME_NS", "UTS_NS", "PID_NS", "IPC_NS", "NET_NS", "FUTEX",
    "EPOLL", "SIGNALFD", "TIMERFD", "EVENTFD", "POSIX_TIMERS", "FILE_LOCKING", "MULTIUSER", "UNIX98_PTYS", "INOTIFY_USER",
    "ADVISE_SYSCALLS", "MEMBARRIER", "RSEQ", "SYSVIPC", "CGROUPS", "BLOCK", "PCI", "VIRTIO_MENU", "VIRTIO", "VIRTIO_PCI",
    "VIRTIO_MMIO", "VIRTIO_CONSOLE", "NET", "UNIX", "NETWORK_FILESYSTEMS", "NET_9P", "NET_9P_VIRTIO", "9P_FS", "OVERLAY_FS",
    "HVC_DRIVER", "RTC_CLASS", "SMP",
)
# What only virtme-ng's shared root needs: an initramfs guest (kernel/initramfs.py) is built without it.
SHARED_ROOT = ("VIRTIO_MENU", "VIRTIO", "VIRTIO_PCI", "VIRTIO_MMIO", "VIRTIO_CONSOLE", "NETWORK_FILESYSTEMS", "NET_9P",
               "NET_9P_VIRTIO", "9P_FS", "OVERLAY_FS", "HVC_DRIVER")
# Off unless a test directory's config asks for them: 9p's `imply INET` would bring IPv4, IPv6 and, with NET,
# ethtool's netlink (some 130 objects of the x86_64 guest's 1,100), and TTY's VT console its input layer, which a
# guest on a serial or hvc console does not use.
UNWANTED = ("INET", "ETHTOOL_NETLINK", "VT", "INPUT")
_LINE = re.compile(r"^CONFIG_(?P<name>\w+)=(?P<value>\S+)\s*$")


def kind(arch: Arch) -> str:
    """The build directory and image names in the kernel cache: vm-x86_64, vm-ppc64le."""
    return f"vm-{arch.name}"


def fragment(tree: Path, dirs: Iterable[str], arch: Arch = X86_64) -> tuple[str, ...]:
    """.config lines: the architecture's symbols and the userspace set (less what the guest does without), then each test
    directory's `config` (=m becomes =y: the guest loads no modules; "is not set" lines are kept as they are)."""
    userspace = [s for s in USERSPACE if not (arch.initramfs and s in SHARED_ROOT) and s not in arch.without]
    tests = [line for d in dirs for line in asked(tree, d)]
    named = {m[1] for line in tests if (m := re.search(r"CONFIG_(\w+)", line))}
    off = [f"# CONFIG_{s} is not set" for s in (*UNWANTED, *arch.off) if s not in named]
    return tuple(dict.fromkeys([*(f"CONFIG_{s}=y" for s in (*arch.guest_symbols, *userspace)), *off, *tests]))


def asked(tree: Path, test_dir: str) -> list[str]:
    """The lines of TEST_DIR's `config` file in TREE (the series' file: read without following a link)."""
    try:
        text = read_untrusted(tree / SELFTESTS / test_dir / "config").decode(errors="replace")
    except OSError:
        return []
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if m := _LINE.match(line):
            out.append(f"CONFIG_{m['name']}={'y' if m['value'] == 'm' else m['value']}")
        elif re.match(r"^# CONFIG_\w+ is not set$", line):
            out.append(line)
    return out


def build(git: Path, commit: str, lines: tuple[str, ...], cache: Path, timeout: float,
          arch: Arch = X86_64) -> kconfig.Build:
    """The ARCH guest kernel of COMMIT (checked out from the repository GIT): cached, or built in the cache."""
    how = images.How(arch.make_vars(ccache=shutil.which("ccache") is not None), arch.make_target, arch.image)
    return images.build(git, commit, kind(arch), lines, cache, timeout, how)
