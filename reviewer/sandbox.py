"""Run untrusted code from a series: no network, private HOME/TMPDIR, own process group, timeout.

What is isolated: the network (a new, empty network namespace via `unshare -r -n`: not even
the host's loopback is reachable), HOME and TMPDIR (a scratch directory per run), the
environment (a short allow-list), processes (a new process group, killed whole at the
timeout or on Ctrl-C), and the address space (RLIMIT_AS per process, via prlimit).
What is not: the file system outside the worktree is readable (and writable where the user
running reviewer may write), and CPU time is bounded only by the wall-clock timeout.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reviewer.proc import Sandboxed, run, run_group

YEAR = 365 * 24 * 3600
ENVS: dict[str, tuple[str, ...]] = {
    "plain": (),
    "timens": ("-T", "--boottime", str(YEAR), "--monotonic", str(YEAR)),
}
_KEEP = ("PATH", "LANG", "LC_ALL", "TERM")
MEMORY_LIMIT = 8 * 1024**3


@dataclass(frozen=True)
class Sandbox:
    scratch: Path  # HOME and TMPDIR of everything run inside
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        base = {k: os.environ[k] for k in _KEEP if k in os.environ}
        return {**base, "HOME": str(self.scratch), "TMPDIR": str(self.scratch), **dict(self.extra_env)}

    def run(self, argv: Sequence[str | Path], *, cwd: Path, timeout: float, env_name: str = "plain") -> Sandboxed:
        self.scratch.mkdir(parents=True, exist_ok=True)
        wrapper = ["unshare", "-r", "-n", *ENVS[env_name], "--", "prlimit", f"--as={MEMORY_LIMIT}", "--"]
        return run_group([*wrapper, *map(str, argv)], cwd=cwd, env=self.env(), timeout=timeout)


@functools.cache
def available(env_name: str) -> str | None:
    """None if ENV_NAME works on this machine, else why not (user/time namespaces disabled...)."""
    done = run(["unshare", "-r", "-n", *ENVS[env_name], "--", "true"], check=False, timeout=30)
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or [f"unshare exited {done.returncode}"])[-1]
