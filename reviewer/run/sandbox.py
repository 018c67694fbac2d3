"""Run untrusted code from a series (selftest builds and runs, kernel builds) in a bubblewrap sandbox.

Each run is `bwrap` (https://github.com/containers/bubblewrap) around a small bash guard, around
`prlimit` and `unshare -r -n [time namespace]` around the program:
- files: the root file system is read-only; /tmp, /dev/shm, /dev, /run, /var, /home, /root, /mnt,
  /media and /srv are empty tmpfs, thrown away after the run; writable (bound from the host) are
  only the trees given (the worktree being built; a kernel build's output and ccache directories)
  and the scratch (HOME and TMPDIR). The real HOME (getpwuid()'s and $HOME) is empty too.
- the user's repository: a worktree's `.git` link is bound read-only over itself, and the git
  directory it leads to (the review's shadow repository: objects, hooks, config) is an empty,
  writable decoy with the usual subdirectories (and the worktree's `commondir` file, read-only),
  so that what a test writes there is seen, and thrown away; the repositories it borrows objects
  from (the user's) are decoys too: nothing of them can be read.
- users: run as root, the program runs as uid/gid SANDBOX_ID (no account has it; no capability,
  no supplementary group), the trees given are handed to it (chown), and the guard stays root,
  out of its reach; run as a user, everything runs as that user (bwrap's user namespace). The
  program sees uid 0 of a nested user namespace (as `unshare -r` gave it before), which holds no
  privilege over any host file.
- processes: a new PID namespace (bwrap's init is its PID 1): when the guard ends, the kernel
  kills everything left in it, setsid() or not, so the output pipe closes; a new session, IPC and
  UTS namespace; no new privileges (no setuid binary works).
- network: a new network namespace, and the program's own inside it with its loopback down: no
  host address, no abstract Unix socket of the host; the host's file-system sockets are out of
  sight (/run, /tmp, /var, /home). Limits: PROCESS_LIMIT processes of the sandbox's user,
  MEMORY_LIMIT of address space per process, no core file, oom_score_adj 1000 (the OOM killer
  takes the sandbox first), the tmpfs sizes.
What the sandbox saw is returned (proc.Sandboxed): the processes still running when the program
exited (read by the host from the sandbox's /proc, then killed), what it created in the
throw-away file systems and the scratch (listed by the host through /proc/PID/root and compared
with what was there at the start), and whether the guard was killed before it could say that the
program had ended (as a user: the program may kill it; it cannot as root).
Not contained: what any user may read on the root file system; disk space in the trees and the
scratch; CPU time (only the wall-clock timeout); memory in total (per process only).
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import pwd
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from reviewer import hostload
from reviewer.errors import ConfigError
from reviewer.proc import Sandboxed, SidePipes, run_group
from reviewer.run import ending

YEAR = 365 * 24 * 3600
ENVS: dict[str, tuple[str, ...]] = {
    "plain": (),
    "timens": ("-T", "--boottime", str(YEAR), "--monotonic", str(YEAR)),
}
_KEEP = ("PATH", "LANG", "LC_ALL", "TERM")
MEMORY_LIMIT = 8 * 1024**3  # address space of each process
# Processes and threads of the sandbox's user: `make -j`, and bench-multi's 256 threads, fit.
PROCESS_LIMIT = max(1024, 16 * (os.cpu_count() or 1))
SANDBOX_ID = 2_000_000_000  # as root: the uid and gid of everything run (beyond 16 bits, systemd's and subuid's usual ranges)
MAX_TEST_SECONDS = 600.0  # --test-timeout: the longest a series' `settings` file may make one test run
TMP_SIZE = 1024**3  # /tmp and /dev/shm (tmpfs: memory)
DECOY_SIZE = 64 * 1024**2  # every other throw-away file system
HIDDEN = ("/run", "/var", "/home", "/root", "/mnt", "/media", "/srv")  # empty in the sandbox (sockets, homes, services' data)
_SYSTEM = ("/", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/boot", "/sys", "/proc", "/dev", "/tmp")
WALK_LIMIT = 10_000  # entries looked at in each throw-away file system
GIT_SKELETON = ("hooks", "info", "objects", "refs/heads", "refs/tags", "logs", "worktrees")
_HINT = "bubblewrap needs unprivileged user namespaces (Debian: apt-get install bubblewrap; sysctl kernel.unprivileged_userns_clone=1)"

# The guard (bash: dash takes only one-digit file descriptors in a redirection), PID 2: it says it
# started, waits for the host to look at the sandbox, runs the program without the two pipes, says
# how it ended, and waits until the host has looked again.
_GUARD = r"""s=$1 r=$2; shift 2
echo 1000 >/proc/self/oom_score_adj 2>/dev/null
echo start >&"$s"
read -r go <&"$r"
[ "$go" = go ] || exit 125
eval '"$@"' "$s>&- $r<&-"
rc=$?
echo "exit $rc $$" >&"$s"
eval "exec $s>&-"
read -r _ <&"$r"
exit "$rc"
"""


@dataclass(frozen=True)
class Sandbox:
    scratch: Path  # HOME and TMPDIR of everything run inside
    extra_env: Mapping[str, str] = field(default_factory=dict)
    _given: set[Path] = field(default_factory=set, compare=False, repr=False)  # trees already handed to SANDBOX_ID

    def env(self) -> dict[str, str]:
        base = {k: os.environ[k] for k in _KEEP if k in os.environ}
        return {**base, "HOME": str(self.scratch), "TMPDIR": str(self.scratch), **dict(self.extra_env)}

    def run(self, argv: Sequence[str | Path], *, cwd: Path, timeout: float, env_name: str = "plain", tree: Path | None = None,
            writable: Sequence[Path] = (), readable: Sequence[Path] = (), hide: Sequence[Path] = ()) -> Sandboxed:
        """ARGV in the sandbox, from CWD. Writable: TREE (default: CWD), WRITABLE and the scratch;
        READABLE are bound read-only (for paths under the hidden areas); HIDE are more git
        directories to replace by decoys (a worktree's own is found from its `.git`). Nothing starts
        once the run is ending (a thread of the run's that missed the signal: Interrupted)."""
        if (signum := ending.interrupted()) is not None:
            raise ending.Interrupted(signum)
        tools = _tools()
        self.scratch.mkdir(parents=True, exist_ok=True)
        scratch = self.scratch.resolve()
        trees = list(dict.fromkeys(p.resolve() for p in (tree or cwd, *writable)))
        uid = _sandbox_uid()
        if uid is not None:
            for t in trees:
                if t not in self._given:
                    _give(t, uid, keep_top=True)
                    self._given.add(t)
            _give(scratch, uid, keep_top=False)
        hidden = [*_git_dirs(trees), *(GitDir(p.resolve()) for p in hide)]
        plan = layout(uid, trees, [p.resolve() for p in readable], scratch, _homes(), hidden)
        inner = [tools["prlimit"], f"--nproc={PROCESS_LIMIT}", f"--as={MEMORY_LIMIT}", "--core=0", "--",
                 tools["unshare"], "-r", "-n", *ENVS[env_name], "--", *map(str, argv)]
        return _Run(plan).go(tools, uid, inner, cwd.resolve(), self.env(), timeout)


@functools.cache
def _sandbox_uid() -> int | None:
    """SANDBOX_ID when review runs as root (None: as a user, who is unprivileged already)."""
    if os.geteuid() != 0:
        return None
    ranges = [tuple(map(int, ln.split())) for ln in Path("/proc/self/uid_map").read_text().splitlines() if ln.strip()]
    if not any(first <= SANDBOX_ID < first + count for first, _, count in ranges):
        raise ConfigError(f"uid {SANDBOX_ID} (the sandbox's, as root) is not mapped here (a container with few uids?)",
                          "run review as an ordinary user: the sandbox then runs as that user")
    return SANDBOX_ID


def _tools() -> dict[str, str]:
    found = {t: shutil.which(t) for t in ("bwrap", "bash", "setpriv", "prlimit", "unshare")}
    missing = [t for t, p in found.items() if p is None]
    if missing:
        raise ConfigError(f"{', '.join(missing)} not found: builds and tests from a series run only in a sandbox",
                          "install them (Debian: apt-get install bubblewrap bash util-linux)")
    return {t: str(p) for t, p in found.items()}


@dataclass
class MountPlan:
    """The bwrap mount options of one run, and where to look for what it left."""

    uid: int | None  # the sandbox's uid when review runs as root: what it must reach is checked for it
    args: list[str] = field(default_factory=list)
    areas: list[str] = field(default_factory=list)  # file systems (and the scratch) whose new entries are reported
    binds: list[str] = field(default_factory=list)  # bound from the host: never looked into
    made: set[str] = field(default_factory=set)  # directories made in a throw-away file system

    def tmpfs(self, path: str, mode: int = 0o1777, size: int = DECOY_SIZE) -> None:
        self.parents(path)
        self.args += ["--perms", f"{mode:04o}", "--size", str(size), "--tmpfs", path]
        self.areas.append(path)

    def dir(self, path: str, mode: int = 0o755) -> None:
        self.parents(path)
        if path not in self.made:
            self.args += ["--perms", f"{mode:04o}", "--dir", path]
            self.made.add(path)

    def bind(self, src: Path, *, writable: bool) -> None:
        self.parents(str(src))
        self.args += ["--bind" if writable else "--ro-bind", str(src), str(src)]
        self.binds.append(str(src))

    def parents(self, path: str) -> None:
        """Make PATH's parents reachable for the sandbox's user: made (755) in a throw-away file system;
        on the read-only root, hidden under an empty tmpfs where that user could not pass."""
        for parent in reversed(Path(path).parents[:-1]):
            p = str(parent)
            if p in self.made or p in self.areas:
                continue
            area, bind = _innermost(p, self.areas), _innermost(p, self.binds)
            if len(bind) > len(area):
                continue  # a directory of the host's, bound: it is there
            if area:
                self.dir(p)
            elif not _reachable(parent, self.uid):
                self.tmpfs(p, 0o755)


def _innermost(path: str, tops: Iterable[str]) -> str:
    """The deepest of TOPS that PATH is in ("" if none)."""
    return max((t for t in tops if _below(path, [t])), key=len, default="")


def _below(path: str, tops: Iterable[str]) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in tops)


def _reachable(path: Path, uid: int | None) -> bool:
    """Whether UID (None: this process's user) may pass through directory PATH of the host."""
    if uid is None:
        return os.access(path, os.X_OK)
    try:
        st = os.stat(path)
    except OSError:
        return True  # nothing to hide: bwrap says what is missing
    bit = 0o100 if st.st_uid == uid else 0o010 if st.st_gid == uid else 0o001
    return bool(st.st_mode & bit)


def layout(uid: int | None, trees: Sequence[Path], readable: Sequence[Path], scratch: Path, homes: Sequence[Path],
           git_dirs: Sequence[GitDir]) -> MountPlan:
    """The mounts, in bwrap's order (later ones on top): the read-only root, the throw-away file
    systems, decoys of the homes, the binds (shallow first), then the git decoys and `.git` links."""
    plan = MountPlan(uid)
    plan.args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    plan.areas.append("/dev")
    plan.tmpfs("/tmp", size=TMP_SIZE)
    plan.tmpfs("/dev/shm", size=TMP_SIZE)
    for hidden in (h for h in HIDDEN if os.path.isdir(h)):
        plan.tmpfs(hidden)
    if os.path.isdir("/var"):
        plan.dir("/var/tmp", 0o1777)
        plan.args += ["--symlink", "/run", "/var/run", "--symlink", "/run/lock", "/var/lock"]
    writable = [*trees, scratch]
    for home in homes:
        if str(home) in _SYSTEM or _below(str(home), map(str, writable)) or not home.is_dir():
            continue
        if _below(str(home), plan.areas):
            plan.dir(str(home), 0o1777)
        else:
            plan.tmpfs(str(home))
    binds = [(p, True) for p in writable] + [(p, False) for p in readable if not _below(str(p), map(str, writable))]
    for path, rw in sorted(dict(binds).items(), key=lambda b: len(b[0].parts)):
        plan.bind(path, writable=rw)
    if not _below(str(scratch), map(str, trees)):
        plan.areas.append(str(scratch))
    for git in dict.fromkeys(git_dirs):
        _decoy(plan, git)
    for t in trees:
        if (t / ".git").is_file():
            plan.args += ["--ro-bind", str(t / ".git"), str(t / ".git")]
    return plan


@dataclass(frozen=True)
class GitDir:
    """A git directory to replace by a decoy; WORKTREE: a linked worktree's own git directory in it."""

    path: Path
    worktree: Path | None = None


def _decoy(plan: MountPlan, git: GitDir) -> None:
    """An empty, writable git directory at GIT's place, with the usual subdirectories and the
    worktree's own (its `commondir` file, "../..", bound read-only): whatever a test writes there
    (a hook, through the worktree's gitdir link) is seen, and thrown away."""
    plan.tmpfs(str(git.path))
    for sub in GIT_SKELETON:
        plan.dir(str(git.path / sub), 0o1777)
    if git.worktree is not None:
        plan.dir(str(git.worktree), 0o1777)
        if (git.worktree / "commondir").is_file():
            plan.bind(git.worktree / "commondir", writable=False)


def _git_dirs(trees: Sequence[Path]) -> list[GitDir]:
    """The git directories behind TREES: a checkout's `.git`; for a linked worktree (its `.git` is a
    file: `gitdir: <repo>/.git/worktrees/<name>`) the repository's common directory, with its own in it."""
    found = []
    for t in trees:
        dot = t / ".git"
        if dot.is_dir():
            found.append(GitDir(dot))
        elif dot.is_file():
            own = (t / _line(dot).removeprefix("gitdir:").strip()).resolve()
            common = (own / _line(own / "commondir")).resolve() if (own / "commondir").is_file() else own
            found += [GitDir(common, own)] if _below(str(own), [str(common)]) else [GitDir(common), GitDir(own)]
            found += _lenders(common)
    return found


def _lenders(common: Path) -> list[GitDir]:
    """The repositories COMMON borrows objects from (`objects/info/alternates`: the review's shadow
    repository borrows the user's, reviewer/apply/worktree.py): hidden as well, the user's git directory
    with its objects, hooks and config."""
    alternates = common / "objects" / "info" / "alternates"
    if not alternates.is_file():
        return []
    lines = read_untrusted(alternates, 1 << 16).decode(errors="replace").splitlines()
    objects = [Path(ln.strip()) if Path(ln.strip()).is_absolute() else (common / "objects" / ln.strip()) for ln in lines if ln.strip()]
    return [GitDir(o.resolve().parent) for o in objects if o.name == "objects" and o.is_dir()]


def _line(path: Path) -> str:
    return read_untrusted(path, 4096).decode(errors="replace").strip()


def read_untrusted(path: Path, limit: int = 1 << 20) -> bytes:
    """At most LIMIT bytes of regular file PATH, which a sandboxed run could have replaced: never
    through a symlink, never blocking on a FIFO (OSError if it is not a regular file)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(limit)
    finally:
        os.close(fd)


def _homes() -> list[Path]:
    """The real HOME: the account's and $HOME (the sandbox gets the scratch as HOME)."""
    homes = [pwd.getpwuid(os.getuid()).pw_dir, os.environ.get("HOME", "")]
    return [Path(h).resolve() for h in dict.fromkeys(homes) if h]


def _give(top: Path, uid: int, *, keep_top: bool) -> None:
    """Hand TOP to UID (review runs as root): what root owns below it (never through a symlink; not
    `.git`: git refuses a repository its user does not own). KEEP_TOP: TOP stays root's, group UID
    and group-writable, so that root's git still uses a worktree there (safe.directory)."""
    me = os.geteuid()
    st = os.lstat(top)
    if keep_top:
        os.chown(top, st.st_uid, uid, follow_symlinks=False)
        os.chmod(top, stat.S_IMODE(st.st_mode) | 0o070)
    elif st.st_uid == me:
        os.chown(top, uid, uid, follow_symlinks=False)
    for path, dirs, files, dfd in os.fwalk(top, follow_symlinks=False):
        if path == str(top):
            dirs[:] = [d for d in dirs if d != ".git"]
            files = [f for f in files if f != ".git"]
        for name in (*dirs, *files):
            with contextlib.suppress(OSError):
                if os.stat(name, dir_fd=dfd, follow_symlinks=False).st_uid == me:
                    os.chown(name, uid, uid, dir_fd=dfd, follow_symlinks=False)


class _Run:
    """One run: the pipes to the guard, and what the host sees of the sandbox through /proc."""

    def __init__(self, plan: MountPlan) -> None:
        self.plan = plan
        self.info = b""
        self.status = b""
        self.started = self.ended = False
        self.blind = False  # the host could not look into the sandbox
        self.root = ""
        self.before: dict[str, set[str]] = {}
        self.left: list[str] = []
        self.wrote: list[str] = []
        self.rc: int | None = None
        self.fds: list[int] = []

    def go(self, tools: dict[str, str], uid: int | None, inner: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Sandboxed:
        status_r, status_w = self._pipe()
        release_r, self.release = self._pipe()
        self.info_r, info_w = self._pipe()
        bwrap = [tools["bwrap"], *([] if uid is not None else ["--unshare-user"]), "--unshare-pid", "--unshare-net", "--unshare-ipc",
                 "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--info-fd", str(info_w),
                 *self.plan.args, "--chdir", str(cwd), "--"]
        drop = [tools["setpriv"], f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"]
        guard = [tools["bash"], "-c", _GUARD, "reviewer-guard", str(status_w), str(release_r)]
        side = SidePipes((status_w, release_r, info_w), {status_r: self._on_status, self.info_r: self._on_info})
        for fd in side.child_fds:
            self.fds.remove(fd)  # run_group closes them once the child has them
        try:
            # As root, the guard stays root (the program's user can neither signal it nor open its pipes
            # through /proc) and drops to UID for the program only.
            done = run_group([*bwrap, *guard, *(drop if uid is not None else []), *inner], cwd=Path("/"), env=env,
                             timeout=timeout, side=side, owner=uid)
        finally:
            for fd in self.fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if not self.started and not done.timed_out:
            last = (done.output.strip().splitlines() or [f"bwrap exited {done.returncode}"])[-1]
            raise ConfigError(f"the sandbox could not start: {last}", _HINT)
        code = self.rc if self.ended else done.returncode
        return replace(done, returncode=None if done.timed_out else code, left=tuple(self.left), wrote=tuple(self.wrote),
                       lost=self.blind or (self.started and not self.ended and not done.timed_out))

    def _pipe(self) -> tuple[int, int]:
        r, w = os.pipe()
        self.fds += [r, w]
        return r, w

    def _on_info(self, chunk: bytes) -> None:
        self.info += chunk

    def _on_status(self, chunk: bytes) -> None:
        self.status += chunk
        while b"\n" in self.status:
            line, _, self.status = self.status.partition(b"\n")
            words = line.decode(errors="replace").split()
            if words == ["start"] and not self.started:
                self.started = True
                try:
                    self.before = {a: self._entries(a) for a in self.plan.areas}
                except (OSError, ValueError):
                    self.blind = True
                os.write(self.release, b"go\n")
            elif len(words) == 3 and words[0] == "exit" and self.started and not self.ended:
                self.ended, self.rc = True, int(words[1])
                # The program's CPU time, which getrusage() never sees: our bwrap exits before its PID 1 is reaped.
                with contextlib.suppress(OSError, ValueError):
                    hostload.count_ours(hostload.cpu_of(f"{self._root()}/proc/{int(words[2])}"))
                try:
                    self.left = self._kill_left(int(words[2]))
                    self.wrote = self._new_entries()
                except (OSError, ValueError):
                    self.blind = True
                os.close(self.release)
                self.fds.remove(self.release)

    def _root(self) -> str:
        """The sandbox as the host sees it: /proc/<its PID 1>/root (bwrap's --info-fd names that PID:
        a child of our bwrap, in a PID namespace of its own)."""
        if self.root:
            return self.root
        while not self.info.endswith(b"}\n") and (chunk := os.read(self.info_r, 4096)):
            self.info += chunk
        pid = int(json.loads(self.info)["child-pid"])
        if _parent(_parent(pid)) != os.getpid() or os.readlink(f"/proc/{pid}/ns/pid") == os.readlink("/proc/self/ns/pid"):
            raise OSError(f"bwrap's child {pid} is not the sandbox")
        self.root = f"/proc/{pid}/root"
        return self.root

    def _kill_left(self, guard: int) -> list[str]:
        """What still runs in the PID namespace but its init and the guard; killed (a fork bomb keeps
        forking: a few rounds), so that nothing changes while the file systems are looked at."""
        root, seen = self._root(), {}
        for _ in range(20):
            now = _processes(f"{root}/proc", skip={1, guard})
            if not now:
                break
            seen.update(now)
            for pid in now:
                _kill(f"{root}/proc/{pid}")
            time.sleep(0.01)
        return [f"pid {pid}: {cmd}" for pid, cmd in sorted(seen.items())]

    def _entries(self, area: str) -> set[str]:
        others = [p for p in (*self.plan.areas, *self.plan.binds) if p != area and _below(p, [area])]
        return entries(self._root(), area, others)

    def _new_entries(self) -> list[str]:
        new = {p for a in self.plan.areas for p in self._entries(a) - self.before.get(a, set())}
        return sorted(p for p in new if str(Path(p).parent) not in new)  # a new directory, not all it holds


def _parent(pid: int) -> int:
    line = Path(f"/proc/{pid}/stat").read_text()
    return int(line[line.rindex(")") + 2 :].split()[1])


def _processes(proc: str, skip: set[int]) -> dict[int, str]:
    """PID -> command line of the live processes in procfs PROC, but SKIP."""
    found = {}
    for name in os.listdir(proc):
        if not name.isdigit() or int(name) in skip:
            continue
        try:
            line = Path(f"{proc}/{name}/stat").read_text()
            if line[line.rindex(")") + 2] in "ZX":
                continue  # dead already
            cmd = Path(f"{proc}/{name}/cmdline").read_bytes().replace(b"\0", b" ").strip()
        except (OSError, ValueError, IndexError):
            continue
        found[int(name)] = cmd[:120].decode(errors="replace") or line[line.index("(") : line.rindex(")") + 1]
    return found


def _kill(proc_dir: str) -> None:
    """SIGKILL the process of PROC_DIR through a pidfd (its /proc directory): never another one that reused the PID."""
    with contextlib.suppress(OSError):
        fd = os.open(proc_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        finally:
            os.close(fd)


def entries(root: str, area: str, prune: Sequence[str] = ()) -> set[str]:
    """The paths (as the sandbox names them) below AREA, seen through ROOT: not below PRUNE or on
    another file system, never through a symlink (os.fwalk checks each directory it enters)."""
    found: set[str] = set()
    top = root + area
    with contextlib.suppress(OSError):
        dev = os.lstat(top).st_dev
        for path, dirs, files, dfd in os.fwalk(top, follow_symlinks=False):
            inside = area.rstrip("/") + path[len(top):]
            keep = []
            for d in dirs:
                name = f"{inside}/{d}"
                with contextlib.suppress(OSError):
                    if name not in prune and os.stat(d, dir_fd=dfd, follow_symlinks=False).st_dev == dev:
                        found.add(name)
                        keep.append(d)
            dirs[:] = keep
            found.update(f"{inside}/{f}" for f in files)
            if len(found) > WALK_LIMIT:
                break
    return found


@functools.cache
def available(env_name: str) -> str | None:
    """None if ENV_NAME works on this machine, else why not (no bwrap, user or time namespaces disabled...)."""
    with tempfile.TemporaryDirectory(prefix="reviewer-probe-") as tmp:
        try:
            done = Sandbox(Path(tmp) / "scratch").run(["true"], cwd=Path(tmp), timeout=30, env_name=env_name)
        except ConfigError as exc:
            return exc.message
    if done.returncode == 0:
        return None
    return (done.output.strip().splitlines() or [f"the sandbox exited {done.returncode}"])[-1]
