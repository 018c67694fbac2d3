"""Run the real `review` command in a subprocess, with a private TMPDIR to catch leftovers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Result:
    rc: int
    stdout: str
    stderr: str
    tmp: Path

    def json(self) -> Any:
        return json.loads(self.stdout)

    def assert_one_line_error(self, rc: int, fragment: str) -> None:
        """The bad-input contract: exit RC, `review: error: ...` + at most a hint, no traceback."""
        assert self.rc == rc, (self.rc, self.stderr)
        lines = self.stderr.splitlines()
        assert lines and lines[0].startswith("review: error: "), self.stderr
        assert fragment in lines[0], (fragment, lines[0])
        assert len(lines) <= 2 and all(ln.startswith("hint: ") for ln in lines[1:]), self.stderr
        assert "Traceback" not in self.stderr + self.stdout

    def assert_nothing_left(self) -> None:
        assert list(self.tmp.iterdir()) == [], list(self.tmp.iterdir())


def review(*args: str | Path, cwd: Path | None = None, stdin: bytes | None = None, tmp: Path,
           env: dict[str, str] | None = None, timeout: float = 300, prefix: Sequence[str] = ()) -> Result:
    """PREFIX: a command the review runs under (`unshare ...`, a shell that mounts a small file system first)."""
    tmp.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp), "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "reviewer", *map(str, args)],
        cwd=cwd, env=env, input=stdin, capture_output=True, timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode(), tmp)
