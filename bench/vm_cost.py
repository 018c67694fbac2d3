#!/usr/bin/env python3
"""What running the selftests in the series' kernels costs (issue 17), per architecture, against doing
the same by hand with virtme-ng (the anchor).

On the 6.12 tree, for x86_64 (the one guest built so far; the other architectures print why not):
- incremental kernel build: a one-line change to lib/vdso/getrandom.c on top of a built base.
  Ours: reviewer.vm.kernels() for a new commit (the cache's build directory, the sandbox, ccache).
  By hand: the same change in a checkout, `make O=DIR -j2 bzImage` in a build directory of the same
  configuration (make's timestamps rebuild what changed).
- boot to the first test: ours, reviewer.vm.guest.run() of one job (`true`) in the sandbox; by hand,
  `vng --run IMAGE --disable-kvm --force-9p --exec true`. Median of RUNS (default 3).
- the whole review of that vDSO series, kernels cached from the steps before:
  `review MBOX --tree LINUX --tests vDSO:vdso_test_getrandom --env plain,timens --bench-runs 0`;
  by hand: the patched kernel's incremental make, the vDSO selftests built in a base and a patched
  worktree, and one `vng --exec` per kernel running the test plainly and in `unshare -r -T`.
- with --cold: the first build of the guest kernel, an empty cache and ccache against an empty build
  directory and ccache by hand (10-18 min each at -j2).
Without --cold the kernel cache is the test suite's (REVIEWER_BOOT_CACHE, default
/var/tmp/reviewer-boot-6.12: its guest build directory and ccache are warm after the real tier),
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
import sys
import time
from pathlib import Path

from _common import AUTHOR, BIN, env, kernel, table

from reviewer.run.sandbox import Sandbox
from reviewer.vm import guest, kernels
from reviewer.vm import kernel as guest_kernel
from tests.realkernel.kernel import commit, format_patch, git, show

WORK = Path(os.environ.get("REVIEWER_BENCH_VM", "/var/tmp/reviewer-bench-vm"))
SRC = "lib/vdso/getrandom.c"
RUNS = int(os.environ.get("RUNS", "3"))
JOBS = 2


def timed(argv: list[str], cwd: Path | None = None, environ: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=environ, capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}\n{(done.stdout + done.stderr)[-2000:]}")
    return time.perf_counter() - start


def change(repo: Path, base: str, n: int) -> str:
    """A new commit on BASE with one more line in lib/vdso/getrandom.c (N makes each commit, and image, new)."""
    text = show(repo, base, SRC).replace("\tu32 counter[2] = { 0 };\n", f"\tu32 counter[2] = {{ 0 }};\n\tbarrier(); /* bench {n} */\n", 1)
    return commit(repo, base, {SRC: text}, f"vdso: getrandom: Bench change {n}\n\nSigned-off-by: {AUTHOR}\n", author=AUTHOR)


def hand_tree(repo: Path, rev: str, where: Path) -> Path:
    if not where.exists():
        git(repo, "worktree", "add", "-f", "--detach", str(where), rev)
    git(where, "checkout", "-q", "-f", rev)
    return where


def hand_build(src: Path, out: Path, lines: tuple[str, ...], ccache: Path) -> float:
    """`make tinyconfig`, the fragment, olddefconfig (once per directory), then `make -j2 bzImage`: seconds of the whole."""
    environ = {**os.environ, "CCACHE_DIR": str(ccache)}
    make = ["make", "-C", str(src), f"O={out}", "ARCH=x86_64", "CC=ccache gcc"]
    start = time.perf_counter()
    if not (out / ".config").is_file():
        timed([*make, "tinyconfig"], environ=environ)
        with (out / ".config").open("a") as f:
            f.write("\n".join(lines) + "\n")
        timed([*make, "olddefconfig"], environ=environ)
    timed([*make, f"-j{JOBS}", "bzImage"], environ=environ)
    return time.perf_counter() - start


def vng(image: Path, command: str, shared: list[Path]) -> float:
    vng_bin = str(BIN / "vng")
    rw = [f"--rwdir={p}" for p in shared]
    environ = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    return timed([vng_bin, "--run", str(image), "--disable-kvm", "--force-9p", "--memory", "1G", "--cpus", "1", *rw,
                  "--exec", command], environ=environ, ok=(0, 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cold", action="store_true", help="also time the first build of the guest kernel, ours and by hand")
    args = ap.parse_args()
    repo = kernel()
    base = git(repo, "rev-parse", "HEAD").strip()
    WORK.mkdir(parents=True, exist_ok=True)
    shared = Path(os.environ.get("REVIEWER_BOOT_CACHE", "/var/tmp/reviewer-boot-6.12"))
    cache, hand = (WORK / "cache", WORK / "hand") if args.cold else (shared, WORK / "hand")
    hand_ccache = hand / "ccache" if args.cold else shared / "ccache"
    lines = guest_kernel.fragment(repo, ["vDSO"])
    git_dir = Path(git(repo, "rev-parse", "--absolute-git-dir").strip())
    print(f"load average before: {os.getloadavg()}")
    rows: list[tuple[str, float, float | None, str]] = []
    if args.cold:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(hand, ignore_errors=True)
    stamp = int(time.time())
    # The first build (cold with --cold; else whatever the kept directories need to reach the base).
    same = commit(repo, base, {}, f"Bench base {stamp}\n\nThe base's tree under a new commit.\n", author=AUTHOR)
    first = kernels(git_dir, {"base": same}, lines, cache, 7200)
    src = hand_tree(repo, base, hand / "src")
    hand_first = hand_build(src, hand / "out", lines, hand_ccache)
    if args.cold:
        ours = first.runs[0].seconds
        rows += [("cold guest kernel: by hand (tinyconfig + fragment + make)", hand_first, None, "anchor"),
                 ("cold guest kernel: reviewer.vm.kernels", ours, ours / hand_first, "")]
    # Incremental: the one-line vDSO change on top of the base just built.
    patched = change(repo, base, stamp + 1)
    inc = kernels(git_dir, {"patched": patched}, lines, cache, 7200)
    (src / SRC).write_text(show(repo, patched, SRC))
    hand_inc = hand_build(src, hand / "out", lines, hand_ccache)
    ours_inc = inc.runs[0].seconds
    rows += [("incremental (lib/vdso change): by hand, make -j2 bzImage", hand_inc, None, "anchor"),
             ("incremental: reviewer.vm.kernels (checkout + sandboxed make)", ours_inc, ours_inc / hand_inc, "")]
    image = inc.images["patched"]
    assert image is not None, inc.findings
    # Boot to the first test.
    share = WORK / "shared"
    share.mkdir(exist_ok=True)
    by_hand = statistics.median(vng(image, "true", [share]) for _ in range(RUNS))
    sandbox = Sandbox(WORK / "scratch")
    ours_boot = statistics.median(guest.run(image, [guest.Job(share, ("true",), "plain", 30)], [share], sandbox).seconds
                                  for _ in range(RUNS))
    rows += [("boot to the first test: vng --exec true, by hand", by_hand, None, f"anchor, median of {RUNS}"),
             ("boot to the first test: reviewer.vm.guest.run", ours_boot, ours_boot / by_hand, f"median of {RUNS}")]
    # The whole review against the hand workflow.
    mbox = format_patch(repo, base, patched, WORK / "series.mbox")
    home = WORK / "home"
    shutil.rmtree(home, ignore_errors=True)
    environ = {**env(home), "REVIEWER_BOOT_CACHE": str(cache), "TMPDIR": str(WORK / "tmp"),
               "REVIEWER_KERNEL_CACHE": os.environ.get("REVIEWER_KERNEL_CACHE", str(repo))}
    (WORK / "tmp").mkdir(exist_ok=True)
    review = [str(BIN / "review"), str(mbox), "--tree", str(repo), "--tests", "vDSO:vdso_test_getrandom", "--env", "plain,timens",
              "--bench-runs", "0", "--no-checkpatch", "--format", "json"]
    start = time.perf_counter()
    done = subprocess.run(review, env=environ, capture_output=True, text=True, check=False)
    ours_review = time.perf_counter() - start
    doc = json.loads(done.stdout)
    where = sorted({r["where"] for r in doc["selftests"]})
    base_image = first.images["base"]
    assert base_image is not None, first.findings
    hand_review = hand_workflow(repo, base, patched, hand, lines, base_image, hand_ccache)
    rows += [("whole review by hand: make, 2 selftest builds, 2 vng --exec", hand_review, None, "anchor"),
             ("whole review: review --tests vDSO:vdso_test_getrandom", ours_review, ours_review / hand_review,
              f"exit {done.returncode}; ran on {'; '.join(where)}")]
    table("x86_64 guests (TCG), 6.12 tree, 2 cores", rows, runs=1)
    for arch in ("ppc64le", "ppc32", "loongarch", "arm64", "riscv64", "s390x"):
        print(f"  {arch}: no guest is built yet (reviewer/vm boots x86_64 only): nothing to time")
    print(f"load average after: {os.getloadavg()}")


def hand_workflow(repo: Path, base: str, patched: str, hand: Path, lines: tuple[str, ...], base_image: Path, ccache: Path) -> float:
    """What a reviewer types: the patched kernel's incremental make, the selftests in two trees, a vng run per kernel."""
    start = time.perf_counter()
    src = hand_tree(repo, patched, hand / "src")
    hand_build(src, hand / "out", lines, ccache)
    trees = {"base": hand_tree(repo, base, hand / "wt-base"), "patched": hand_tree(repo, patched, hand / "wt-patched")}
    for wt in trees.values():
        timed(["make", "-C", str(wt / "tools/testing/selftests"), "TARGETS=vDSO", f"-j{JOBS}"])
    images = {"base": base_image, "patched": hand / "out/arch/x86/boot/bzImage"}
    for label, wt in trees.items():
        d = wt / "tools/testing/selftests/vDSO"
        vng(images[label], f"cd {d} && ./vdso_test_getrandom; unshare -r -T --boottime 31536000 --monotonic 31536000 ./vdso_test_getrandom",
            [d])
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
