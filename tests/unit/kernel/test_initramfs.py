"""The initramfs guest's parts, here on the host: our /init (built for this machine and run as an ordinary
process, which it can tell: it mounts nothing and powers nothing off), its results as the host reads
them, and the cpio archive as GNU cpio extracts it."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from reviewer.kernel import guest, initramfs
from reviewer.kernel.arches import BY_NAME, GUESTS
from reviewer.kernel.jobs import Job
from reviewer.run.sandbox import YEAR
from tests.unit.kernel.conftest import alive, pid_of


def _init(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The init compiled for the host, reading TMP/jobs and writing TMP/port."""
    jobs, port, exe = tmp_path / "jobs", tmp_path / "port", tmp_path / "init"
    source = resources.files("reviewer.kernel").joinpath(initramfs.INIT_SOURCE).read_text()
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", f'-DJOBS="{jobs}"', f'-DPORT="{port}"', "-o", str(exe), "-x", "c", "-"],
                   input=source, text=True, check=True, capture_output=True)
    return exe, jobs, port


def _run(tmp_path: Path, jobs: list[Job], kill_after: int = 5) -> tuple[list[guest.Ran | None], str]:
    """Run JOBS with the init; their outcomes, and the console less the result records (as the host reads it)."""
    exe, jobs_path, port = _init(tmp_path)
    text, bad = initramfs.jobs_file(jobs, kill_after)
    assert bad == []
    jobs_path.write_text(text)
    port.touch()
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr  # everything goes to the log
    carried = port.read_text()
    got = initramfs.read_results(carried, len(jobs))
    assert carried.splitlines()[-2:] == ["@reviewer done", "reviewer-guest: done"]
    return [None if g is None else guest._ran(j, *g) for j, g in zip(jobs, got, strict=True)], initramfs.console_of(carried)


def _script(where: Path, name: str, body: str) -> None:
    (where / name).write_text(f"#!/bin/sh\n{body}\n")
    (where / name).chmod(0o755)


def test_jobs_run_from_their_directories_with_their_output_and_exit_status(tmp_path: Path) -> None:
    here = tmp_path / "a dir with spaces"
    here.mkdir()
    _script(here, "t.sh", 'echo "from $(basename "$PWD")"; echo to stderr >&2; head -c 300 /dev/zero | tr "\\0" x; exit 4')
    ran, console = _run(tmp_path, [Job(here, ("./t.sh",), "plain", 10), Job(here, ("./missing",), "plain", 10),
                                   Job(here, ("/bin/sh", "-c", "kill -SEGV $$"), "plain", 10)])
    first, missing, killed = ran
    assert first is not None and first.returncode == 4 and not first.timed_out
    assert first.output.splitlines() == [f"from {here.name}", "to stderr", "x" * 300]  # 300 bytes: six base64 lines
    assert missing is not None and missing.returncode == 127 and "cannot run ./missing" in missing.output
    assert killed is not None and killed.returncode == 128 + 11
    assert console.splitlines() == ["reviewer-guest: start", "reviewer-guest: job 0", "reviewer-guest: job 1", "reviewer-guest: job 2",
                                    "reviewer-guest: done"]


def test_what_a_job_leaves_running_is_killed_counted_and_named_when_it_exits(tmp_path: Path, leavers: Path) -> None:
    """The hostile daemon and the child in a session of its own, plainly and in the time namespace: each a pass at once
    (never waiting for the stdout the setsid child holds), its leftover named and gone; twelve sleepers: eight named,
    twelve counted; a job that leaves nothing has nothing said."""
    sleepers = ("/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do setsid sleep 300 & done; (sleep 301 & exec sleep 302) &")
    ran, _ = _run(tmp_path, [Job(leavers, ("./hostile_daemon",), "plain", 30),
                             Job(leavers, ("./hostile_setsid",), "timens", 30),
                             Job(tmp_path, sleepers, "plain", 30), Job(tmp_path, ("/bin/true",), "plain", 30)])
    daemon, setsid, many, none = ran
    for r, name in ((daemon, "hostile_daemon"), (setsid, "hostile_setsid")):
        assert r is not None and r.returncode == 0 and not r.timed_out and r.seconds < 5, r
        assert r.left_count == 1 and len(r.left) == 1 and r.left[0].endswith(f": ./{name}"), r
        assert not alive(pid_of(r.left[0]))
    assert "holds stdout in a session of its own" in setsid.output  # type: ignore[union-attr]
    assert many is not None and many.left_count == 14 and len(many.left) == guest.SHOWN_LEFT, many  # 12 + the subshell's sleep 301, 302
    assert not any(alive(pid_of(x)) for x in many.left)
    assert none is not None and none.left == () and none.left_count == 0


def test_output_past_the_cap_is_cut_and_says_so(tmp_path: Path) -> None:
    ran, _ = _run(tmp_path, [Job(tmp_path, ("/bin/sh", "-c", "head -c 1100000 /dev/zero | tr '\\0' y"), "plain", 30)])
    (big,) = ran
    assert big is not None and big.returncode == 0
    assert big.output.startswith("y" * (1 << 20))
    assert big.output.endswith(f"\n[reviewer-init: {1100000 - (1 << 20)} more bytes of output were not kept]\n")


def test_timens_jobs_see_the_boot_clock_a_year_ahead(tmp_path: Path) -> None:
    cat = ("/bin/cat", "/proc/uptime")
    ran, _ = _run(tmp_path, [Job(tmp_path, cat, "plain", 10), Job(tmp_path, cat, "timens", 10),
                             Job(tmp_path, ("/usr/bin/id", "-u"), "timens", 10)])
    plain, timens, uid = ran
    assert plain is not None and timens is not None and uid is not None, ran
    assert plain.returncode == 0 and timens.returncode == 0, timens.output
    ahead = float(timens.output.split()[0]) - float(plain.output.split()[0])
    assert YEAR - 5 < ahead < YEAR + 5
    assert uid.output.strip() == "0"  # root of its own user namespace, as `unshare -r` makes it


def test_a_job_past_its_timeout_is_stopped_and_the_next_one_runs(tmp_path: Path) -> None:
    ran, _ = _run(tmp_path, [Job(tmp_path, ("/bin/sleep", "30"), "plain", 1),
                             Job(tmp_path, ("/bin/sh", "-c", "trap '' TERM; echo stubborn; sleep 30"), "plain", 1),
                             Job(tmp_path, ("/bin/echo", "next"), "plain", 10)], kill_after=1)
    slept, stubborn, after = ran
    assert slept is not None and slept.returncode == 124 and slept.timed_out and slept.seconds < 5
    assert stubborn is not None and stubborn.returncode == 137 and stubborn.timed_out and stubborn.output == "stubborn\n"
    assert after is not None and after.returncode == 0 and after.output == "next\n"


def test_results_that_never_ended_or_are_garbled_are_not_made_up() -> None:
    text = ("noise from somewhere\n[    1.5] @reviewer 0 out aGVsbG8K\n@reviewer 0 rc 0 1000000000 3000000000 6\n"
            "@reviewer 1 out !!!!\n@reviewer 1 out aGk=\n@reviewer 1 rc 1 0 0 2\n@reviewer 2 out aGFuZ3M=\n@reviewer 7 rc 0 0 0 0\n"
            "@reviewer 3 out b25l\n@reviewer 3 rc 0 0 0 6\n")
    got = initramfs.read_results(text, 4)
    assert got[0] == (0, 2.0, "hello\n", (), 0)  # after a console timestamp too
    assert got[1] == (1, 0.0, "hi", (), 0)  # the bad line never matched; the good one kept
    assert got[2] is None  # output, but it never ended
    assert got[3] == (0, 0.0, "one\n[reviewer: the guest sent 3 of its 6 bytes of output]\n", (), 0)  # lost on the way: said, not hidden
    assert initramfs.console_of(text + "@reviewer done\n") == "noise from somewhere\n"


def test_a_job_the_file_cannot_hold_is_named_and_keeps_the_numbering(tmp_path: Path) -> None:
    text, bad = initramfs.jobs_file([Job(tmp_path, ("./a",), "plain", 5), Job(tmp_path, ("./b", "x\ty"), "plain", 5),
                                     Job(tmp_path, ("./c",), "timens", 5)], 5)
    assert bad == [1]
    lines = text.splitlines()
    assert len(lines) == 3 and lines[2].split("\t") == ["5", "5", "timens", str(YEAR), str(tmp_path), "./c"]


def test_the_archive_is_what_gnu_cpio_extracts(tmp_path: Path) -> None:
    top = tmp_path / "src" / "tools" / "testing" / "selftests" / "vDSO"
    (top / "sub").mkdir(parents=True)
    (top / "prog").write_bytes(bytes(range(256)) * 5 + b"odd")
    (top / "prog").chmod(0o755)
    (top / "sub" / "data").write_text("data\n")
    (top / "link").symlink_to("../../../../../../etc/passwd")  # kept as a link, never followed
    os.mkfifo(top / "fifo")  # left out: the series may have made it, and reading it would block
    out = tmp_path / "x.cpio"
    w = initramfs.Writer(out)
    w.file("init", b"#init", 0o755)
    initramfs.add_tree(w, top)
    w.close()
    dest = tmp_path / "dest"
    dest.mkdir()
    subprocess.run(["cpio", "-i", "-d", "--no-absolute-filenames", "--quiet", "-F", str(out)], cwd=dest, check=True)
    inside = dest / top.relative_to("/")
    assert (inside / "prog").read_bytes() == (top / "prog").read_bytes()
    assert stat.S_IMODE((inside / "prog").stat().st_mode) == 0o755
    assert (inside / "sub" / "data").read_text() == "data\n"
    assert os.readlink(inside / "link") == "../../../../../../etc/passwd"
    assert not (inside / "fifo").exists() and (dest / "init").read_bytes() == b"#init"
    listing = subprocess.run(["cpio", "-t", "--quiet", "-F", str(out)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(listing) == len(set(listing))  # each parent directory once


def test_an_archive_past_its_limit_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(initramfs, "MAX_ARCHIVE", 1000)
    w = initramfs.Writer(tmp_path / "x.cpio")
    w.file("a", b"x" * 900)
    with pytest.raises(initramfs.TooLarge):
        w.file("b", b"x" * 200)
    w.close()


@pytest.mark.parametrize(("name", "elf"), [("ppc32", ("ELF32", "big endian", "PowerPC")), ("riscv64", ("ELF64", "little endian", "RISC-V")),
                                           ("s390x", ("ELF64", "big endian", "S/390"))])
def test_the_init_builds_static_for_each_initramfs_guest(name: str, elf: tuple[str, ...], tmp_path: Path) -> None:
    g = GUESTS[name]
    assert g.initramfs and g.toolchain is BY_NAME[name]
    assert initramfs.compile_init(g, tmp_path / "init") == ""
    header = subprocess.run([shutil.which("readelf") or "readelf", "-h", "-d", str(tmp_path / "init")], capture_output=True,
                            text=True).stdout
    assert all(e in header for e in elf), header
    assert "NEEDED" not in header and "(INTERP" not in header  # static: the guest has no libc


def test_qemu_is_given_no_network_and_the_console_only(tmp_path: Path) -> None:
    argv = initramfs.command(GUESTS["ppc32"], tmp_path / "vmlinux", tmp_path / "i.cpio")
    assert argv[:3] == ["qemu-system-ppc", "-M", "mac99"]
    assert argv[argv.index("-nic") + 1] == "none" and "-no-reboot" in argv
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "-serial"] == ["stdio"]
    assert argv[-1].split() == ["console=ttyS0", "panic=-1", "printk.devkmsg=on"]  # no rate limit on /init's records
    rv = initramfs.command(GUESTS["riscv64"], tmp_path / "Image", tmp_path / "i.cpio")
    assert rv[:3] == ["qemu-system-riscv64", "-M", "virt"] and "-cpu" not in rv and rv[-1].startswith("console=ttyS0 ")
    # s390x: the SCLP console, and every facility TCG has (the vDSO getrandom() needs the vector facility, 129)
    s390 = initramfs.command(GUESTS["s390x"], tmp_path / "bzImage", tmp_path / "i.cpio")
    assert s390[:5] == ["qemu-system-s390x", "-M", "s390-ccw-virtio", "-cpu", "max"] and s390[-1].startswith("console=ttysclp0 ")
    assert s390[s390.index("-nic") + 1] == "none"
