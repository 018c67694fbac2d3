"""The sandbox (reviewer/run/sandbox.py): what a program inside can reach, and what the host sees it leave.

Run as root (as CI does) the program's user outside is SANDBOX_ID; run as a user, that user.
"""
from __future__ import annotations

import os
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from reviewer import proc
from reviewer.run.sandbox import MEMORY_LIMIT, PROCESS_LIMIT, SANDBOX_ID, MountPlan, Sandbox, read_untrusted
from reviewer.selftests.choose import SELFTESTS, TestRef
from reviewer.selftests.run import run_observed
from tests.conftest import git

OUTSIDE = SANDBOX_ID if os.geteuid() == 0 else os.getuid()


def _box(tmp_path: Path) -> tuple[Sandbox, Path]:
    tree = tmp_path / "tree"
    tree.mkdir()
    return Sandbox(tmp_path / "scratch"), tree


def _running(mark: str) -> list[str]:
    found = []
    for p in Path("/proc").iterdir():
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (p / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if mark in cmd and state != "Z" and p.name != str(os.getpid()):
            found.append(cmd)
    return found


def test_only_the_tree_and_the_scratch_are_the_hosts_and_writes_elsewhere_are_seen(tmp_path: Path) -> None:
    sandbox, tree = _box(tmp_path)
    mark = secrets.token_hex(6)
    script = (f"echo t > in-tree && echo h > $HOME/{mark} && echo x > /tmp/{mark} && mkdir -p /var/tmp/{mark}/deep && "
              f"touch /var/tmp/{mark}/deep/f && echo r > /root/{mark} && echo s > /dev/shm/{mark}; "
              f"for p in /etc /usr /work; do (echo y > $p/{mark}) 2>&1; done; true")
    done = sandbox.run(["sh", "-c", script], cwd=tree, timeout=20)
    assert done.returncode == 0, done.output
    assert done.output.count("Read-only file system") == 3, done.output
    assert sorted(done.wrote) == sorted([str(sandbox.scratch.resolve() / mark), f"/tmp/{mark}", f"/var/tmp/{mark}", f"/root/{mark}",
                                         f"/dev/shm/{mark}"])
    assert (tree / "in-tree").read_text() == "t\n" and (sandbox.scratch / mark).is_file()
    for host in (f"/tmp/{mark}", f"/var/tmp/{mark}", f"/root/{mark}", f"/dev/shm/{mark}", f"/etc/{mark}", f"/usr/{mark}"):
        assert not Path(host).exists(), host
    assert not done.left and not done.lost


def test_the_program_has_no_privilege_and_its_limits(tmp_path: Path) -> None:
    sandbox, tree = _box(tmp_path)
    script = ("id -u; cat /proc/self/uid_map; cat /etc/shadow 2>&1; find /run /root -mindepth 1 | wc -l; cat /proc/self/oom_score_adj; "
              "grep NoNewPrivs /proc/self/status; grep -E '^Max (processes|address space|core file size)' /proc/self/limits; "
              "echo again >/dev/stdout")
    lines = sandbox.run(["sh", "-c", script], cwd=tree, timeout=20).output.split("\n")
    assert lines[0] == "0" and lines[1].split() == ["0", str(OUTSIDE), "1"]  # uid 0 of a user namespace, unprivileged outside
    assert "Permission denied" in lines[2]
    assert lines[3:5] == ["0", "1000"]  # /run and /root: empty; the OOM killer's first choice
    assert lines[5].split() == ["NoNewPrivs:", "1"]
    assert lines[9] == "again"  # its output pipe can be opened again, as kselftest's runner.sh does
    limits = {" ".join(ln.split()[:-3]): ln.split()[-3] for ln in lines[6:9]}
    assert limits == {"Max core file size": "0", "Max processes": str(PROCESS_LIMIT), "Max address space": str(MEMORY_LIMIT)}


def test_a_process_left_behind_is_named_killed_and_never_holds_the_output(tmp_path: Path) -> None:
    sandbox, tree = _box(tmp_path)
    mark = secrets.token_hex(6)
    start = time.monotonic()
    done = sandbox.run(["sh", "-c", f"(setsid sh -c 'sleep 1000; : {mark}' &); sleep 0.1; echo main done"], cwd=tree, timeout=20)
    assert time.monotonic() - start < 5 and done.returncode == 0 and "main done" in done.output
    assert any(mark in p for p in done.left), done.left
    assert _running(mark) == []


def test_at_the_timeout_everything_dies_and_the_pipe_is_not_waited_for(tmp_path: Path) -> None:
    sandbox, tree = _box(tmp_path)
    mark = secrets.token_hex(6)
    done = sandbox.run(["sh", "-c", f"(setsid sh -c 'sleep 1000; : {mark}' &); echo started; sleep 1000"], cwd=tree, timeout=0.5)
    assert done.timed_out and done.returncode is None and "started" in done.output
    assert done.seconds < 0.5 + 2
    assert _running(mark) == []


def test_the_guard_is_out_of_the_programs_reach_as_root_and_its_loss_is_said(tmp_path: Path) -> None:
    sandbox, tree = _box(tmp_path)
    kill = "for p in /proc/[0-9]*; do grep -qx bash $p/comm 2>/dev/null && kill -9 ${p#/proc/}; done; echo tried"  # the guard is bash
    done = sandbox.run(["sh", "-c", kill], cwd=tree, timeout=20)
    if os.geteuid() == 0:  # the guard stays root: the program's user may not signal it
        assert "Operation not permitted" in done.output and not done.lost and done.returncode == 0
    else:  # the same user: it can, and the host says it does not know what was left
        assert done.lost


def test_a_worktrees_git_link_leads_to_an_empty_decoy(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f").write_text("f\n")
    git(repo, "add", "f")
    git(repo, "commit", "-q", "-m", "f")
    (repo / ".git" / "config").write_text((repo / ".git" / "config").read_text() + "[secret]\n\ttoken = CONFIG-SECRET\n")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "--detach", str(wt))
    link = (wt / ".git").read_text()
    script = ("(echo x >> .git) 2>&1; d=$(sed 's/^gitdir: //' .git); echo hook > $d/../../hooks/pre-commit; "
              "cat $d/commondir; cat $d/../../config 2>&1; ls $d/../../objects | wc -l")
    done = Sandbox(tmp_path / "scratch").run(["sh", "-c", script], cwd=wt, timeout=20)
    # root's file, as the sandbox's user: the permission check comes before the read-only mount's
    assert ("Read-only file system" if os.geteuid() else "Permission denied") in done.output and "CONFIG-SECRET" not in done.output
    assert "../..\n" in done.output and "config: No such file or directory" in done.output
    assert done.wrote == (str(repo.resolve() / ".git" / "hooks" / "pre-commit"),)
    assert not (repo / ".git" / "hooks" / "pre-commit").exists() and (wt / ".git").read_text() == link
    # A checkout given as the tree: its own .git is the decoy.
    done = Sandbox(tmp_path / "scratch").run(["sh", "-c", "echo x > .git/refs/heads/evil; cat .git/config 2>&1; echo in > f"], cwd=repo,
                                             timeout=20)
    assert "config: No such file or directory" in done.output and done.wrote == (str(repo.resolve() / ".git" / "refs" / "heads" / "evil"),)
    assert not (repo / ".git" / "refs" / "heads" / "evil").exists() and (repo / "f").read_text() == "in\n"


def test_a_settings_timeout_is_capped_and_the_cut_said(tmp_path: Path) -> None:
    folder = tmp_path / SELFTESTS / "slow"
    folder.mkdir(parents=True)
    (folder / "t.sh").write_text("#!/bin/sh\nsleep 1000\n")
    (folder / "t.sh").chmod(0o755)
    for asked, said in (("100000", "100000s"), ("0", "no timeout (timeout=0)")):
        (folder / "settings").write_text(f"timeout={asked}\n")
        seen = run_observed(tmp_path, TestRef("slow", "t.sh"), tree="patched", env="plain", sandbox=Sandbox(tmp_path / "scratch"), cap=0.3)
        assert seen.run.result == "timeout" and seen.run.reason == f"killed after 0.3s (--test-timeout; its settings file asks for {said})"
        assert seen.notes == (f"was cut short at 0.3s by --test-timeout (its settings file asks for {said})",)


def test_a_reachable_path_is_bound_and_an_unreachable_parent_hidden(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    (closed / "tree").mkdir(parents=True)
    closed.chmod(0o700)
    plan = MountPlan(SANDBOX_ID)  # no throw-away file system yet: the host's directories as they are
    plan.bind(closed / "tree", writable=True)
    hidden = next(p for p in [*reversed(closed.parents), closed] if not (os.stat(p).st_mode & 0o001))  # the first others may not pass
    at = plan.args.index("--tmpfs")
    assert plan.args[at + 1] == str(hidden) and plan.args[at - 4 : at - 2] == ["--perms", "0755"]
    assert plan.args[-3:] == ["--bind", str(closed / "tree"), str(closed / "tree")]
    made = [plan.args[i + 1] for i, a in enumerate(plan.args) if a == "--dir"]
    assert made == [str(p) for p in reversed((closed / "tree").parents) if hidden in p.parents]


def test_read_untrusted_never_follows_a_symlink_nor_waits_on_a_fifo(tmp_path: Path) -> None:
    fifo, link, plain = tmp_path / "fifo", tmp_path / "link", tmp_path / "plain"
    os.mkfifo(fifo)
    link.symlink_to("/etc/passwd")
    plain.write_text("settings\n")
    for path in (fifo, link):
        with pytest.raises(OSError):
            read_untrusted(path)
    assert read_untrusted(plain, 4) == b"sett"


def test_an_endless_output_is_kept_to_its_limit(tmp_path: Path) -> None:
    sandbox, tree = _box(tmp_path)
    size = proc.MAX_OUTPUT + 3 * 1024 * 1024
    done = sandbox.run(["sh", "-c", f"head -c {size} /dev/zero | tr '\\0' a"], cwd=tree, timeout=20)
    assert done.returncode == 0 and done.output.startswith("a" * 1000)
    assert done.output.endswith(f"[reviewer: {3 * 1024 * 1024} more bytes of output were not kept]\n")


def test_timens_still_shifts_the_clocks_inside_bwrap(tmp_path: Path) -> None:
    sandbox, tree = _box(tmp_path)
    done = sandbox.run(["cat", "/proc/uptime"], cwd=tree, timeout=20, env_name="timens")
    assert float(done.output.split()[0]) > 365 * 24 * 3600
    assert float(subprocess.run(["cat", "/proc/uptime"], capture_output=True, text=True).stdout.split()[0]) < 365 * 24 * 3600


def test_the_repository_a_shadow_borrows_from_is_hidden_too(kernel_repo: Path) -> None:
    """The worktrees belong to the review's shadow repository (reviewer/apply/worktree.py), which borrows the
    user's objects: both git directories become decoys, so the user's objects, hooks and config stay unseen."""
    from reviewer.apply import worktree
    from reviewer.run.sandbox import _git_dirs

    with worktree.isolated(kernel_repo, "HEAD", build=False) as wt:
        hidden = {g.path for g in _git_dirs([wt])}
        assert (kernel_repo / ".git").resolve() in hidden
        assert worktree.common_dir(wt).resolve() in hidden and worktree.common_dir(wt) != (kernel_repo / ".git")
