"""The userspace of a guest of another architecture: a root directory made from that architecture's Debian packages.

`vng --arch ppc64el --root DIR` boots a kernel with DIR as its root file system (9p, read-only,
virtme-ng's tmpfs overlays on top). DIR holds bash and the tools the guest script uses
(coreutils' timeout and date, util-linux's unshare for the time namespace, sed and grep for
virtme-ng's init), their libraries, and busybox-static, whose init virtme-ng puts in the initramfs.
`review guest-root ARCH` makes it: `apt-get download` of each package for that architecture
(apt must know it: `dpkg --add-architecture ppc64el && apt-get update`, once, as root) and
`dpkg -x`, nothing installed. Documentation, locales and gconv are left out (38 MB remain).

Each boot gets a copy (prepare()): the chosen test directories are copied into it at their own
paths and, with the results directory, shared read-write, so what a test writes stays in the copy.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from reviewer.errors import ConfigError
from reviewer.kernel.arches import Arch
from reviewer.store import dirs

# What the guest runs (guest.script, virtme-ng's virtme-init) and what that links against (Debian 12).
PACKAGES = (
    "bash", "busybox-static", "coreutils", "util-linux", "mount", "sed", "grep",
    "libc6", "libgcc-s1", "libtinfo6", "libacl1", "libattr1", "libselinux1", "libpcre2-8-0", "libgmp10", "libcap2",
    "libcap-ng0", "libaudit1", "libblkid1", "libmount1", "libsmartcols1", "libuuid1", "libsystemd0", "libudev1",
    "libzstd1", "liblz4-1", "liblzma5", "libgcrypt20", "libgpg-error0", "libcrypt1",
)
LEAVE_OUT = ("usr/share/doc", "usr/share/locale", "usr/share/man", "usr/share/info")
STAMP = ".reviewer-root"  # written last: a root without it is half made
APT_TIMEOUT = 600.0


def location(arch: Arch) -> Path:
    """$REVIEWER_GUEST_ROOTS/<debian arch>, else $XDG_CACHE_HOME/reviewer/guest-roots/<debian arch>."""
    top = os.environ.get("REVIEWER_GUEST_ROOTS")
    return (Path(top) if top else dirs.cache_root() / "guest-roots") / arch.deb


def ready(arch: Arch) -> bool:
    """ARCH's userspace is there: the machine's own, whose root is the host's; an initramfs guest, which brings its own;
    or a root made (its stamp written last)."""
    return arch.native or arch.initramfs or (location(arch) / STAMP).is_file()


def command(arch: Arch) -> str:
    """The command that makes ARCH's root."""
    return f"review guest-root {arch.name}"


def missing(arch: Arch) -> str:
    """What is missing for ARCH's userspace, and the command that makes it ("" when nothing is)."""
    return "" if ready(arch) else f"no {arch.deb} guest root at {location(arch)} (make it: {command(arch)})"


def make(arch: Arch, say: Callable[[str], None] = lambda _: None) -> Path:
    """Download ARCH's packages and unpack them into its root (replacing an older one); the root. SAY hears of each step."""
    dest = location(arch)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="reviewer-root-", dir=dest.parent) as tmp:
        debs, root = Path(tmp) / "debs", Path(tmp) / "root"
        debs.mkdir()
        say(f"downloading {len(PACKAGES)} {arch.deb} Debian packages (apt-get download: nothing is installed)")
        _run(["apt-get", "download", *(f"{p}:{arch.deb}" for p in PACKAGES)], debs,
             f"apt-get cannot download the {arch.deb} packages",
             f"as root, once: dpkg --add-architecture {arch.deb} && apt-get update")
        got = sorted(debs.glob("*.deb"))
        say(f"unpacking {len(got)} packages ({sum(d.stat().st_size for d in got) >> 20} MB) into {dest}")
        for deb in got:
            _run(["dpkg-deb", "-x", str(deb), str(root)], debs, f"dpkg-deb cannot unpack {deb.name}", "is the download complete?")
        _finish(root)
        (root / STAMP).write_text("".join(f"{d.name}\n" for d in got))
        old = Path(tmp) / "old"
        if dest.exists():
            dest.rename(old)
        root.rename(dest)
    return dest


def _finish(root: Path) -> None:
    """What installing would have done and the guest needs: /bin/sh, poweroff (busybox), a passwd, mount points."""
    for leave in LEAVE_OUT:
        shutil.rmtree(root / leave, ignore_errors=True)
    for gconv in root.glob("usr/lib/*/gconv"):
        shutil.rmtree(gconv)
    for d in ("dev", "proc", "sys", "run", "tmp", "root", "etc", "var/log"):
        (root / d).mkdir(parents=True, exist_ok=True)
    for link, to in (("bin/sh", "bash"), ("sbin/poweroff", "/bin/busybox")):
        if not (root / link).exists() and not (root / link).is_symlink():
            (root / link).parent.mkdir(parents=True, exist_ok=True)
            (root / link).symlink_to(to)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (root / "etc/group").write_text("root:x:0:\n")


def _run(argv: list[str], cwd: Path, what: str, hint: str) -> None:
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=APT_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"{what}: {exc}", hint) from exc
    if done.returncode != 0:
        lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
        first = next((ln for ln in lines if ln.startswith("E:")), lines[-1] if lines else f"exit {done.returncode}")
        raise ConfigError(f"{what}: {first}", hint)


def prepare(arch: Arch, into: Path, shared: list[Path]) -> dict[Path, Path]:
    """A copy of ARCH's root in INTO for one boot, with each of SHARED (directories of the host) copied in
    at its own path; {host path: its copy}. vng shares the copies read-write (they must be inside the root)."""
    shutil.copytree(location(arch), into, symlinks=True)
    out = {}
    for d in shared:
        copy = into / d.relative_to("/")
        copy.parent.mkdir(parents=True, exist_ok=True)
        out[d] = copy
    return out
