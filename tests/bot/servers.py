"""Real servers for the bot's tests, each started once per session on a free loopback port in a directory of
its own, and stopped by its PID at the end: Debian's PostgreSQL (a throw-away cluster made with initdb,
run as the postgres user when the tests run as root, which postgres refuses) and Debian's redis-server."""
from __future__ import annotations

import ctypes
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import redis

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def dies_with_us(sig: int) -> Callable[[], None]:
    """A preexec_fn: the child gets SIG when the test process dies (PR_SET_PDEATHSIG), so that a test run killed
    by a timeout leaves no server or worker behind either."""
    def preexec() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(sig))  # 1: PR_SET_PDEATHSIG; after the uid change (kept)

    return preexec


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(ready: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not ready after {seconds} s")
        time.sleep(0.05)


def _answers(probe: Callable[[], object]) -> bool:
    try:
        probe()
    except Exception:
        return False
    return True


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Stop a server by its PID (SIGKILL if it has not gone 20 s later)."""
    proc.send_signal(sig)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL cluster's URL; each test that asks for a database gets a fresh one from `pg_database`."""
    if not (PG_BIN / "postgres").exists():
        pytest.skip("PostgreSQL 15 is not installed (./dev deps installs it)")
    user = pwd.getpwnam("postgres").pw_uid if os.geteuid() == 0 else None
    _sweep(Path(tempfile.gettempdir()))
    top = Path(tempfile.mkdtemp(prefix="reviewer-pg-"))  # not under pytest's 0700 tmp: the postgres user must reach it
    try:
        if user is not None:
            os.chown(top, user, -1)
        subprocess.run([PG_BIN / "initdb", "-D", top / "data", "-A", "trust", "-U", "reviewer", "--no-sync"], user=user, check=True,
                       capture_output=True, timeout=120)
        port = free_port()
        with (top / "log").open("wb") as log:
            proc = subprocess.Popen([PG_BIN / "postgres", "-D", top / "data", "-k", top, "-h", "127.0.0.1", "-p", str(port),
                                     "-c", "fsync=off", "-c", "max_connections=50"], user=user, stdout=log, stderr=log,
                                    start_new_session=True, preexec_fn=dies_with_us(signal.SIGINT))
        url = f"postgresql://reviewer@127.0.0.1:{port}/postgres"
        try:
            wait_until(lambda: _answers(lambda: psycopg.connect(url).close()), 30, "postgres")
            yield f"postgresql://reviewer@127.0.0.1:{port}"
        finally:
            stop(proc, signal.SIGINT)  # postgres' fast shutdown
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _sweep(tmp: Path) -> None:
    """Remove the clusters of test runs that were killed (their server died with them: dies_with_us)."""
    for old in tmp.glob("reviewer-pg-*"):
        pid = old / "data" / "postmaster.pid"
        words = pid.read_text().split() if pid.exists() else []
        alive = bool(words) and Path(f"/proc/{words[0]}").exists()
        if not alive and time.time() - old.stat().st_mtime > 60:
            shutil.rmtree(old, ignore_errors=True)


@pytest.fixture
def pg_db(postgres_url: str, request: pytest.FixtureRequest) -> str:
    """A fresh database of the session's cluster, for one test."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[:50].lower()
    with psycopg.connect(f"{postgres_url}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{postgres_url}/{name}"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of the tests' own (no persistence), its directory under pytest's tmp."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (./dev deps installs it)")
    top = tmp_path_factory.mktemp("redis")
    port = free_port()
    with (top / "log").open("wb") as log:
        proc = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(top), "--save", "", "--appendonly", "no",
                                 "--daemonize", "no"], stdout=log, stderr=log, start_new_session=True,
                                preexec_fn=dies_with_us(signal.SIGTERM))
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_until(lambda: _answers(lambda: redis.Redis.from_url(url).ping()), 30, "redis-server")
        yield url
    finally:
        stop(proc)
