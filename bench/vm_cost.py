#!/usr/bin/env python3
"""What running the selftests in the series' kernels costs (issue 17), per architecture, against doing
the same by hand with virtme-ng (the anchor).

On the 6.12 tree, per guest architecture (--arch x86_64,ppc64le,ppc32,arm64,riscv64,s390x; LoongArch prints why not):
- incremental kernel build: a one-line change to the vDSO's getrandom() (lib/vdso/getrandom.c for
  x86_64, arch/powerpc/kernel/vdso/vgetrandom.c for ppc64le and ppc32, arch/arm64/kernel/vdso/vgetrandom.c
  for arm64, arch/s390/kernel/vdso64/vgetrandom.c for s390x, and riscv64's vDSO clock_gettime(): 6.12's riscv
  has no vDSO getrandom()) on top of a built base.
  Ours: reviewer.selftests.where.kernels() for a new commit (the cache's build directory, the sandbox, ccache).
  By hand: the same change in a checkout, `make O=DIR -j2 bzImage` (ppc64le: ARCH=powerpc
  CROSS_COMPILE=powerpc64le-linux-gnu- vmlinux; ppc32: powerpc-linux-gnu-) in a build directory of the same
  configuration.
- boot to the first test: ours, reviewer.kernel.guest.run() of one job (`true`) in the sandbox; by hand,
  `vng --run IMAGE --disable-kvm --force-9p --exec true` (ppc64le: with `--arch ppc64el --root`, a
  copy of the guest root `review guest-root ppc64le` made; ppc32, which vng cannot boot: `find | cpio -o -H newc`
  of a directory holding the init and the tests, and `qemu-system-ppc -M mac99 -kernel -initrd`, as
  docs/design.md#measured-facts did it by hand, with the tool's init built by hand). Median of RUNS (default 3).
- the whole review of that vDSO series, kernels cached from the steps before:
  `review MBOX --tree LINUX --tests vDSO:vdso_test_getrandom --env plain,timens --bench-runs 0`;
  by hand: the patched kernel's incremental make, the vDSO selftests built in a base and a patched
  worktree, and one `vng --exec` per kernel running the test plainly and in `unshare -r -T`.
- with --cold: the first build of the guest kernel, an empty cache and ccache against an empty build
  directory and ccache by hand (4-6.5 min each at -j2, measured 2026-12-04).
Without --cold the review's HOME (its kept selftest builds and base results) is kept from the run before, as the
hand worktrees are: run it twice, the second is the warm figure. Without --cold the kernel cache is the test
suite's (REVIEWER_BOOT_CACHE, default
/var/tmp/reviewer-boot-6.12: its guest build directory and ccache are warm after the real tier), and so are
the guest roots of ppc64le and arm64 (REVIEWER_GUEST_ROOTS, default /var/tmp/reviewer-guest-roots: checked
before anything is built),
and the hand build directory (kept under /var/tmp/reviewer-bench-vm) compiles with the same ccache,
so only --cold pays for a first build; with --cold both start from empty directories there. The
user's cache is not touched. Times are as noisy as the
machine is busy: the load average is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from _common import AUTHOR, BIN, env, kernel, table

from bench._kernel import BOOT_CACHE, GUEST_ROOTS, commit, format_patch, git, show
from reviewer.kernel import guest, initramfs
from reviewer.kernel import guestkernel as guest_kernel
from reviewer.kernel import guestroot as root
from reviewer.kernel.arches import GUESTS, Arch
from reviewer.kernel.jobs import Job
from reviewer.run.sandbox import Sandbox
from reviewer.selftests.where import kernels

WORK = Path(os.environ.get("REVIEWER_BENCH_VM", "/var/tmp/reviewer-bench-vm"))
RUNS = int(os.environ.get("RUNS", "3"))
JOBS = 2
# Per architecture: the vDSO file the bench series changes, and the line a change goes after.
CHANGE = {
    "x86_64": ("lib/vdso/getrandom.c", "\tu32 counter[2] = { 0 };\n"),
    "ppc64le": ("arch/powerpc/kernel/vdso/vgetrandom.c", "\t\t\t     size_t opaque_len, const struct vdso_rng_data *vd)\n{\n"),
}
CHANGE["ppc32"] = CHANGE["ppc64le"]  # the same file builds VDSO32
CHANGE["arm64"] = ("arch/arm64/kernel/vdso/vgetrandom.c", "void *opaque_state, size_t opaque_len)\n{\n")
# 6.12's riscv has no vDSO getrandom(): its clock_gettime(), which vdso_test_getrandom's build does not read either.
CHANGE["riscv64"] = ("arch/riscv/kernel/vdso/vgettimeofday.c",
                     "int __vdso_clock_gettime(clockid_t clock, struct __kernel_timespec *ts)\n{\n")
CHANGE["s390x"] = ("arch/s390/kernel/vdso64/vgetrandom.c", "size_t opaque_len)\n{\n")


def timed(argv: list[str], cwd: Path | None = None, environ: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=environ, capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}\n{(done.stdout + done.stderr)[-2000:]}")
    return time.perf_counter() - start


def change(repo: Path, base: str, n: int, arch: Arch) -> str:
    """A new commit on BASE with one more line in ARCH's vDSO getrandom() (N makes each commit, and image, new)."""
    src, after = CHANGE[arch.name]
    text = show(repo, base, src)
    assert after in text, (src, after)
    text = text.replace(after, f"{after}\tbarrier(); /* bench {n} */\n", 1)
    return commit(repo, base, {src: text}, f"vdso: getrandom: Bench change {n}\n\nSigned-off-by: {AUTHOR}\n", author=AUTHOR)


def hand_tree(repo: Path, rev: str, where: Path) -> Path:
    if not where.exists():
        git(repo, "worktree", "add", "-f", "--detach", str(where), rev)
    git(where, "checkout", "-q", "-f", rev)
    return where


def hand_build(src: Path, out: Path, lines: tuple[str, ...], ccache: Path, arch: Arch) -> float:
    """`make tinyconfig`, the fragment, olddefconfig (once per directory), then `make -j2 bzImage` (or the
    arch's target): seconds of the whole."""
    environ = {**os.environ, "CCACHE_DIR": str(ccache)}
    make = ["make", "-C", str(src), f"O={out}", *arch.make_vars(ccache=True)]
    start = time.perf_counter()
    if not (out / ".config").is_file():
        timed([*make, "tinyconfig"], environ=environ)
        with (out / ".config").open("a") as f:
            f.write("\n".join(lines) + "\n")
        timed([*make, "olddefconfig"], environ=environ)
    timed([*make, f"-j{JOBS}", arch.make_target], environ=environ)
    return time.perf_counter() - start


def vng(image: Path, command: str, shared: list[Path], arch: Arch, jobs: list[Job]) -> float:
    """By hand: `vng --exec COMMAND`, SHARED read-write; another architecture boots a root made as a
    reviewer would (a copy of the guest root with the shared directories copied inside); an initramfs
    guest, which vng cannot boot, gets JOBS in a cpio made by hand (hand_initramfs)."""
    if arch.initramfs:
        return hand_initramfs(image, shared, arch, jobs)
    vng_bin = str(BIN / "vng")
    environ = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    foreign: list[str] = []
    if not arch.native:
        hand_root = WORK / f"root-{arch.name}"
        shutil.rmtree(hand_root, ignore_errors=True)
        subprocess.run(["cp", "-a", str(root.location(arch)), str(hand_root)], check=True)
        for d in shared:
            (hand_root / d.relative_to("/")).parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["cp", "-a", str(d), str((hand_root / d.relative_to("/")).parent)], check=True)
        shared = [hand_root / d.relative_to("/") for d in shared]
        foreign = ["--arch", arch.deb, "--root", str(hand_root)]
    rw = [f"--rwdir={p}" for p in shared]
    return timed([vng_bin, "--run", str(image), *foreign, "--disable-kvm", "--force-9p", "--memory", "1G", "--cpus", "1", *rw,
                  "--exec", command], environ=environ, ok=(0, 1) if arch.native else (0, 1, 255))  # 255: the console
    # fallback (a root without udev has no /dev/virtio-ports) does not bring the command's status back


def hand_initramfs(image: Path, shared: list[Path], arch: Arch, jobs: list[Job]) -> float:
    """By hand: a directory with a static init (the tool's, compiled by hand), its job list and copies of SHARED,
    `find . | cpio -o -H newc`, then QEMU with that initrd until the guest powers off."""
    start = time.perf_counter()
    top = WORK / f"initramfs-{arch.name}"
    shutil.rmtree(top, ignore_errors=True)
    (top / "reviewer").mkdir(parents=True)
    assert initramfs.compile_init(arch, top / "init") == ""
    (top / "reviewer" / "jobs").write_text(initramfs.jobs_file(jobs, 5)[0])
    for d in shared:
        (top / d.relative_to("/")).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", str(d), str((top / d.relative_to("/")).parent)], check=True)
    cpio = WORK / f"initramfs-{arch.name}.cpio"
    with cpio.open("wb") as out:
        listing = subprocess.run(["find", "."], cwd=top, capture_output=True, check=True).stdout
        subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=top, input=listing, stdout=out, check=True)
    timed([arch.qemu, "-M", arch.machine, *arch.qemu_args, "-m", "512", "-display", "none", "-monitor", "none", "-nic", "none",
           "-no-reboot", "-serial", "stdio", "-kernel", str(image), "-initrd", str(cpio),
           "-append", f"console={arch.console} panic=-1 printk.devkmsg=on"])
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cold", action="store_true", help="also time the first build of the guest kernel, ours and by hand")
    ap.add_argument("--arch", default="x86_64",
                    help="the guest architectures, comma-separated (x86_64, ppc64le, ppc32, arm64, riscv64, s390x)")
    args = ap.parse_args()
    os.environ["REVIEWER_GUEST_ROOTS"] = GUEST_ROOTS  # the test suite's
    arches = [GUESTS[name] for name in args.arch.split(",")]
    for arch in arches:
        if missing := root.missing(arch):
            raise SystemExit(f"vm_cost.py: {missing}, or run the real tier first")
    print(f"load average before: {os.getloadavg()}")
    for arch in arches:
        one(arch, cold=args.cold)
    print(f"  loongarch: no guest is built for it (reviewer/kernel/arches.py boots {', '.join(GUESTS)}): nothing to time")
    print(f"load average after: {os.getloadavg()}")


def one(arch: Arch, *, cold: bool) -> None:
    """The rows of one guest architecture."""
    repo = kernel()
    base = git(repo, "rev-parse", "HEAD").strip()
    WORK.mkdir(parents=True, exist_ok=True)
    shared = Path(BOOT_CACHE)
    hand = WORK / ("hand" if arch.native else f"hand-{arch.name}")
    cache = WORK / "cache" if cold else shared
    hand_ccache = hand / "ccache" if cold else shared / "ccache"
    lines = guest_kernel.fragment(repo, ["vDSO"], arch)
    git_dir = Path(git(repo, "rev-parse", "--absolute-git-dir").strip())
    rows: list[tuple[str, float, float | None, str]] = []
    if cold:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(hand, ignore_errors=True)
    stamp = int(time.time())
    # The first build (cold with --cold; else whatever the kept directories need to reach the base).
    same = commit(repo, base, {}, f"Bench base {stamp}\n\nThe base's tree under a new commit.\n", author=AUTHOR)
    first = kernels(git_dir, {"base": same}, lines, cache, 7200, arch=arch)
    src = hand_tree(repo, base, hand / "src")
    hand_first = hand_build(src, hand / "out", lines, hand_ccache, arch)
    if cold:
        ours = first.runs[0].seconds
        rows += [("cold guest kernel: by hand (tinyconfig + fragment + make)", hand_first, None, "anchor"),
                 ("cold guest kernel: reviewer.selftests.where.kernels", ours, ours / hand_first, "")]
    # Incremental: the one-line vDSO change on top of the base just built.
    patched = change(repo, base, stamp + 1, arch)
    inc = kernels(git_dir, {"patched": patched}, lines, cache, 7200, arch=arch)
    changed = CHANGE[arch.name][0]
    (src / changed).write_text(show(repo, patched, changed))
    hand_inc = hand_build(src, hand / "out", lines, hand_ccache, arch)
    ours_inc = inc.runs[0].seconds
    rows += [(f"incremental (vDSO change): by hand, make -j2 {arch.make_target}", hand_inc, None, "anchor"),
             ("incremental: reviewer.selftests.where.kernels (checkout + sandboxed make)", ours_inc, ours_inc / hand_inc, "")]
    image = inc.images["patched"]
    assert image is not None, inc.findings
    # Boot to the first test.
    share = WORK / "shared"
    share.mkdir(exist_ok=True)
    by_hand = statistics.median(vng(image, "true", [share], arch, [Job(share, ("true",), "plain", 30)]) for _ in range(RUNS))
    sandbox = Sandbox(WORK / "scratch")
    ours_boot = statistics.median(guest.run(image, [Job(share, ("true",), "plain", 30)], [share], sandbox, arch=arch).seconds
                                  for _ in range(RUNS))
    how = f"cpio + {arch.qemu}, by hand" if arch.initramfs else "vng --exec true, by hand"  # vng cannot boot an initramfs guest
    rows += [(f"boot to the first test: {how}", by_hand, None, f"anchor, median of {RUNS}"),
             ("boot to the first test: reviewer.kernel.guest.run", ours_boot, ours_boot / by_hand, f"median of {RUNS}")]
    # The whole review against the hand workflow.
    mbox = format_patch(repo, base, patched, WORK / "series.mbox")
    # The review's HOME: fresh with --cold; else kept from the run before, as the hand worktrees are (its kept selftest
    # builds and base results are a reviewer's kept worktrees: issue 34).
    home = WORK / f"home-{arch.name}"
    if cold:
        shutil.rmtree(home, ignore_errors=True)
    environ = {**env(home), "REVIEWER_BOOT_CACHE": str(cache), "TMPDIR": str(WORK / "tmp"),
               "REVIEWER_KERNEL_CACHE": os.environ.get("REVIEWER_KERNEL_CACHE", str(repo)),
               "REVIEWER_GUEST_ROOTS": str(root.location(arch).parent)}
    (WORK / "tmp").mkdir(exist_ok=True)
    review = [str(BIN / "review"), str(mbox), "--tree", str(repo), "--tests", "vDSO:vdso_test_getrandom", "--arch", arch.name, "--env",
              "plain,timens",
              "--bench-runs", "0", "--no-checkpatch", "--format", "json"]
    start = time.perf_counter()
    done = subprocess.run(review, env=environ, capture_output=True, text=True, check=False)
    ours_review = time.perf_counter() - start
    doc = json.loads(done.stdout)
    where = sorted({r["where"] for r in doc["selftests"]})
    base_image = first.images["base"]
    assert base_image is not None, first.findings
    hand_review = hand_workflow(repo, base, patched, hand, lines, base_image, hand_ccache, arch)
    boots = "2 QEMU boots of a hand-made initramfs" if arch.initramfs else "2 vng --exec"
    rows += [(f"whole review by hand: make, 2 selftest builds, {boots}", hand_review, None, "anchor"),
             ("whole review: review --tests vDSO:vdso_test_getrandom", ours_review, ours_review / hand_review,
              f"exit {done.returncode}; ran on {'; '.join(where)}")]
    table(f"{arch.name} guests (TCG), 6.12 tree, 2 cores", rows, runs=1)


def hand_workflow(repo: Path, base: str, patched: str, hand: Path, lines: tuple[str, ...], base_image: Path, ccache: Path,
                  arch: Arch) -> float:
    """What a reviewer types: the patched kernel's incremental make, the selftests in two trees (cross-built,
    after `make headers`, for another architecture), a vng run per kernel."""
    start = time.perf_counter()
    src = hand_tree(repo, patched, hand / "src")
    hand_build(src, hand / "out", lines, ccache, arch)
    trees = {"base": hand_tree(repo, base, hand / "wt-base"), "patched": hand_tree(repo, patched, hand / "wt-patched")}
    for wt in trees.values():
        if not arch.native:
            timed(["make", "-C", str(wt), *arch.test_vars(), "headers", f"-j{JOBS}"])
        timed(["make", "-C", str(wt / "tools/testing/selftests"), *arch.test_vars(), "TARGETS=vDSO", f"-j{JOBS}"])
    images = {"base": base_image, "patched": hand / "out" / arch.image}
    for label, wt in trees.items():
        d = wt / "tools/testing/selftests/vDSO"
        vng(images[label], f"cd {d} && ./vdso_test_getrandom; unshare -r -T --boottime 31536000 --monotonic 31536000 ./vdso_test_getrandom",
            [d], arch, [Job(d, ("./vdso_test_getrandom",), env, 120) for env in ("plain", "timens")])
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
