"""A deadline for a network conversation: a total time, not a per-read timeout.

A per-read timeout never fires against a server that sends one byte a second (every read
returns in time), and a blocked read does not look at the clock. So a Watch shuts down the
sockets registered with it when its time is up: the blocked read returns at once and the
caller raises its own error. Code that reads in chunks also checks `expired()` between them.
"""
from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator


class Watch:
    """Cuts its sockets when SECONDS have passed since it was made (thread-safe)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.fired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def left(self) -> float:
        return self.end - time.monotonic()

    def expired(self) -> bool:
        return self.fired or self.left() <= 0

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            fired = self.fired
        if fired:
            _cut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _cut(sock)

    def __enter__(self) -> Watch:
        self._timer.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._timer.cancel()


def _cut(sock: socket.socket) -> None:
    # The plain socket's shutdown, also for an SSLSocket (whose own shutdown unwraps it first):
    # a read blocked in another thread sees end-of-file at once; close() alone would not wake it.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


_local = threading.local()


@contextlib.contextmanager
def watching(watch: Watch) -> Iterator[Watch]:
    """Make WATCH the current one of this thread (see `current`) while it runs."""
    outer = getattr(_local, "watch", None)
    _local.watch = watch
    try:
        with watch:
            yield watch
    finally:
        _local.watch = outer


def current() -> Watch | None:
    """The watch this thread runs under, for code that opens sockets deep inside a library."""
    found: Watch | None = getattr(_local, "watch", None)
    return found
