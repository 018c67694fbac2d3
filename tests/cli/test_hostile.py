"""Hostile selftests (fixtures/hostile/) through the real pipeline, as root and as an ordinary user.

A series adds them to a copy of kernel-mini; `review --run-tests --test-timeout 3` builds and
runs them. Each must be contained (nothing written on the host, no secret in any output or log,
no host socket reached, nothing left running), reported (a `sandbox` warning naming it, where
the sandbox can see it), and the review must end within the cap with the user's repository
byte-identical (hooks, config, objects, refs, working tree): not even an object is added.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import re
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from reviewer.errors import ExitStatus
from reviewer.run.sandbox import PROCESS_LIMIT, SANDBOX_ID
from tests.conftest import FIXTURES, ROOT, git

HOSTILE = "tools/testing/selftests/hostile"
USER = "reviewer-hostile"  # the ordinary user, made with useradd when missing
CAP = 3  # --test-timeout: hostile_sleep's settings ask for 100000 s
WITHIN = 150.0  # seconds the whole review may take (two builds, eight tests, a cut-short one)


@dataclass
class Listeners:
    """Unix sockets of the host a test tries to reach: file-system ones (mode 777, so that only the
    sandbox stands in the way) and an abstract one; every connection is recorded."""

    paths: list[Path]
    abstract: str
    reached: list[str] = field(default_factory=list)
    _socks: list[socket.socket] = field(default_factory=list)

    def __enter__(self) -> Listeners:
        for path in self.paths:
            self._listen(str(path), str(path))
            path.chmod(0o777)
        self._listen("\0" + self.abstract, "abstract")
        return self

    def _listen(self, address: str, name: str) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(address)
        sock.listen(8)
        sock.settimeout(0.2)
        self._socks.append(sock)
        threading.Thread(target=self._accept, args=(sock, name), daemon=True).start()

    def _accept(self, sock: socket.socket, name: str) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.reached.append(name)
            conn.close()

    def __exit__(self, *exc: object) -> None:
        for sock in self._socks:
            sock.close()
        for path in self.paths:
            path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Setup:
    mark: str
    repo: Path
    mbox: Path
    area: Path  # TMPDIR, the log directory and the caches live here
    home: Path  # the reviewing user's real HOME (getpwuid()'s)
    env_home: Path  # $HOME of the review
    secrets: dict[Path, str]

    @property
    def logs(self) -> Path:
        return self.area / "logs"


def _series(repo: Path, out: Path) -> Path:
    """The hostile directory added to REPO in one commit, exported; the user's branch left as it was."""
    git(repo, "checkout", "-q", "-b", "hostile")
    shutil.copytree(FIXTURES / "hostile", repo / HOSTILE, ignore=shutil.ignore_patterns("README.md"))
    git(repo, "add", HOSTILE)
    git(repo, "commit", "-q", "-s", "-m", "selftests: Add the hostile tests")
    out.write_text(git(repo, "format-patch", "--stdout", "--base=HEAD~1", "HEAD~1"))
    git(repo, "checkout", "-q", "master")
    git(repo, "branch", "-q", "-D", "hostile")
    return out


def _fingerprint(repo: Path) -> dict[str, str]:
    """Every file of REPO (its .git but worktrees/, where a review registers its own and removes
    them): path -> mode and content."""
    found = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo)
        st = path.lstat()
        data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes() if path.is_file() else b""
        found[str(rel)] = f"{stat.filemode(st.st_mode)} {hashlib.sha256(data).hexdigest()}"
    return found


def _assert_untouched(repo: Path, before: dict[str, str]) -> None:
    """Every file REPO had is as it was, and there is nothing new, not even an object: the
    worktrees belong to a shadow repository of the review's, which only borrows REPO's objects."""
    after = _fingerprint(repo)
    assert after == before, sorted(set(after) ^ set(before))


def _marked(mark: str) -> list[str]:
    """Processes whose command line holds MARK or names a hostile program (none may outlive the review)."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if proc.name.isdigit() and int(proc.name) != os.getpid() and ("hostile_" in cmd or mark in cmd):
                found.append(f"{proc.name}: {cmd}")
    return found


def _owned_by(uid: int) -> list[str]:
    """The live processes of UID (a zombie is not running; its parent reaps it)."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            state = (proc / "stat").read_text().rpartition(")")[2].split()[0]
            if proc.name.isdigit() and proc.stat().st_uid == uid and state not in ("Z", "X"):
                found.append(f"{proc.name} ({state}): {(proc / 'cmdline').read_bytes()[:80]!r} {(proc / 'stat').read_text()[:200]}")
    return found


def _python_for(user: str, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """How USER runs this checkout's reviewer: this interpreter if USER may run it (a venv of Debian's
    python3, as ./dev makes), else a system python3 of the same version with the venv's packages."""
    probe = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"]
    if subprocess.run([*probe, sys.executable, "-c", "import reviewer"], env=env, capture_output=True).returncode == 0:
        return [sys.executable], env
    system = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}", path="/usr/bin:/bin")
    assert system, "no python for the ordinary user"
    return [system], {**env, "PYTHONPATH": f"{ROOT}:{sysconfig.get_paths()['purelib']}"}


def _review(setup: Setup, user: str | None) -> tuple[subprocess.CompletedProcess[str], float]:
    """review --run-tests on the hostile series, as USER (None: as we are), with a private TMPDIR."""
    tmp = setup.area / "tmp"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "PYTHON"))}
    env.update(TMPDIR=str(tmp), HOME=str(setup.env_home), XDG_CACHE_HOME=str(setup.area / "cache"),
               XDG_STATE_HOME=str(setup.area / "state"),
               XDG_CONFIG_HOME=str(setup.area / "config"), COLUMNS="200", NO_COLOR="1",
               GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="user.email", GIT_CONFIG_VALUE_0="reviewer@example.org")  # the reply's sender
    python, prefix = [sys.executable], []
    if user is not None:
        python, env = _python_for(user, env)
        prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--"]
    sockets = [str(p) for p in (Path("/tmp") / f"hostile-{setup.mark}.sock", Path("/run") / f"hostile-{setup.mark}.sock")]
    args = [setup.mbox, "--tree", setup.repo, "--run-tests", "--test-timeout", str(CAP), "--log-dir", setup.logs, "--format", "json",
            "--reply", setup.area / "reply.eml",
            "--test-env", f"HOSTILE_MARK={setup.mark}", "--test-env", f"HOSTILE_SECRETS={':'.join(map(str, setup.secrets))}",
            "--test-env", f"HOSTILE_SOCKETS={':'.join(sockets)}", "--test-env", f"HOSTILE_ABSTRACT=hostile-{setup.mark}"]
    start = time.monotonic()
    done = subprocess.run([*prefix, *python, "-m", "reviewer", *map(str, args)], cwd=setup.area, env=env, capture_output=True,
                          text=True, timeout=600)
    return done, time.monotonic() - start


def _check(setup: Setup, user: str | None, outside_uid: int) -> None:
    """Review the hostile series as USER (None: as we are); OUTSIDE_UID: the uid the sandbox runs as."""
    before = _fingerprint(setup.repo)
    socks = [Path("/tmp") / f"hostile-{setup.mark}.sock", Path("/run") / f"hostile-{setup.mark}.sock"]
    with Listeners(socks, f"hostile-{setup.mark}") as listeners:
        done, seconds = _review(setup, user)
        time.sleep(0.5)  # a connection would have been accepted by now
        reached = list(listeners.reached)
    assert done.returncode == ExitStatus.SELFTESTS, done.stderr  # hostile_sleep timed out: on the patched tree only
    doc = json.loads(done.stdout)
    reply = (setup.area / "reply.eml").read_text()
    runs = {r["name"].removeprefix("hostile:"): r for r in doc["selftests"] if r["tree"] == "patched"}
    warned = {f["message"] for f in doc["findings"] if f["rule"] == "sandbox" and f["level"] == "warning"}
    on = {f["message"]: f["path"] for f in doc["findings"] if f["rule"] == "sandbox"}

    def warning(test: str, what: str) -> str:
        found = [w for w in warned if w.startswith(f"hostile:{test} on the patched tree (plain) {what}")]
        assert len(found) == 1, (test, what, warned)
        return found[0]

    # Written outside: nothing on the host, each attempt named.
    wrote = warning("hostile_write", "wrote outside its tree")
    hooks = setup.repo / ".git" / "hooks"
    # Inside, the program is uid 0 of a user namespace: getpwuid() gives it /root, and the uid outside gives the user's HOME.
    targets = [hooks / "pre-commit", hooks / "post-checkout",
               *(Path(h) / f".hostile-{setup.mark}" for h in dict.fromkeys(("/root", str(setup.home)))),
               Path(f"/tmp/hostile-{setup.mark}"), Path(f"/var/tmp/hostile-{setup.mark}")]
    for target in targets:
        assert not target.exists(), target
        # a hook written through the worktree's .git link lands in the decoy of the review's shadow repository
        named = target.name if target.parent == hooks else str(target)
        assert named in wrote, (target, wrote, runs["hostile_write"]["log"])
    assert "sandbox: wrote outside its tree" in runs["hostile_write"]["reason"]
    _assert_untouched(setup.repo, before)
    # Secrets: unread, in no output and no log; every log the user's only.
    assert "# /etc/shadow: Permission denied" in runs["hostile_secrets"]["log"]
    for path, text in setup.secrets.items():
        assert f"# {path}: No such file or directory" in runs["hostile_secrets"]["log"]
        assert text not in done.stdout + done.stderr
    for path in setup.logs.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path
        assert path.is_dir() or not any(text in path.read_text(errors="replace") for text in setup.secrets.values()), path
    assert any(setup.logs.rglob("*hostile_secrets.log"))
    # Sockets: never reached.
    assert reached == []
    assert f"# {socks[0]}: No such file or directory" in runs["hostile_sockets"]["log"]
    assert "# the abstract socket: Connection refused" in runs["hostile_sockets"]["log"]
    # Processes: reported, and none outlives the review.
    for test in ("hostile_setsid", "hostile_daemon"):  # a finding on that test, and its row says so
        left = warning(test, "left")
        assert re.search(rf"left 1 process running when it exited \(the sandbox killed them\): pid \d+: \./{test}$", left), left
        assert on[left] == f"{HOSTILE}/{test}"
        assert runs[test]["result"] == "pass" and runs[test]["reason"] == "sandbox: left processes running"
        row = " ".join(reply.split(f"    hostile:{test} [plain]: ", 1)[1].split("\n    hostile:")[0].split())  # unwrapped
        assert re.match(r"skip \d+\.\d\ds -> pass \d+\.\d\ds \(sandbox: left processes running\)", row), row
    bomb = warning("hostile_forkbomb", "left")
    assert "fork failed after" in runs["hostile_forkbomb"]["log"] and "Resource temporarily unavailable" in runs["hostile_forkbomb"]["log"]
    assert 10 < int(bomb.split(" left ")[1].split()[0]) <= PROCESS_LIMIT
    assert _marked(setup.mark) == []
    assert os.geteuid() != 0 or _owned_by(outside_uid) == []
    assert list((setup.area / "tmp").iterdir()) == []  # no worktree, no scratch left
    # Memory: the allocation fails.
    assert "# malloc(10 GiB): Cannot allocate memory" in runs["hostile_alloc"]["log"]
    # The cap: cut short, said so, and the review ended within it.
    assert runs["hostile_sleep"]["result"] == "timeout"
    assert runs["hostile_sleep"]["reason"] == f"killed after {CAP}s (--test-timeout; its settings file asks for 100000s)"
    warning("hostile_sleep", f"was cut short at {CAP}s by --test-timeout (its settings file asks for 100000s)")
    assert seconds < WITHIN, seconds
    print(f"\nreview of the hostile series as {user or 'root'}: {seconds:.1f}s")


def _setup(repo: Path, area: Path, home: Path, env_home: Path, mark: str, secrets_at: dict[Path, str]) -> Setup:
    for path, text in secrets_at.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o600)
    (area / "tmp").mkdir()
    return Setup(mark, repo, _series(repo, area / "hostile.mbox"), area, home, env_home, secrets_at)


def test_hostile_selftests_as_root(kernel_repo: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("run the suite as root (as CI does) for the root half; the ordinary user's half runs as you")
    mark = secrets.token_hex(6)
    root_secret = Path("/root") / f".hostile-secret-{mark}"
    try:
        setup = _setup(kernel_repo, tmp_path, Path(pwd.getpwuid(0).pw_dir), Path(os.environ["HOME"]), mark,
                       {root_secret: f"ROOT-SECRET-{mark}"})
        _check(setup, None, SANDBOX_ID)
    finally:
        root_secret.unlink(missing_ok=True)


@contextlib.contextmanager
def _ordinary_user() -> Iterator[pwd.struct_passwd]:
    """An ordinary user with a home of their own: the current one, or (as root) USER, made if missing."""
    if os.geteuid() != 0:
        yield pwd.getpwuid(os.geteuid())
        return
    with contextlib.suppress(KeyError):
        yield pwd.getpwnam(USER)
        return
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", USER], check=True, capture_output=True)
    yield pwd.getpwnam(USER)


def test_hostile_selftests_as_an_ordinary_user(kernel_repo: Path) -> None:
    mark = secrets.token_hex(6)
    with _ordinary_user() as user:
        home = Path(user.pw_dir)
        area = Path(tempfile.mkdtemp(prefix="reviewer-hostile-", dir="/var/tmp"))
        made = [home / ".ssh" / f"id_hostile_{mark}", home / f".gitconfig-hostile-{mark}"]
        try:
            repo = area / "linux"
            shutil.copytree(kernel_repo, repo, symlinks=True)
            secrets_at = {made[0]: f"SSH-KEY-SECRET-{mark}", made[1]: f"[credential]\n\thelper = store\n# GITCONFIG-SECRET-{mark}\n"}
            setup = _setup(repo, area, home, home, mark, secrets_at)
            if os.geteuid() == 0:
                for path in (area, *area.rglob("*"), *made, made[0].parent):
                    os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
            _check(setup, user.pw_name if os.geteuid() == 0 else None, user.pw_uid)
        finally:
            shutil.rmtree(area, ignore_errors=True)
            for path in made:
                path.unlink(missing_ok=True)
