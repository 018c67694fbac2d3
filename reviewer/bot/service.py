"""The bot as processes: `review bot run` (feeds, workers and sender in one process), `worker --pool` (one pool, for
other machines), `enqueue MSGID` and `replay FROM..TO`. loop.py does the work; this module keeps time, signals and
the consumers. The CLI (reviewer/cli/bot.py) only parses options and prints what these return."""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from reviewer.bot import assemble, feed, loop, metrics, policy
from reviewer.bot.config import BotConfig
from reviewer.bot.jobs import Job, Spec
from reviewer.bot.outbox import Delivery
from reviewer.bot.queue import Workers, consume
from reviewer.errors import ConfigError, ExitStatus, InputError, ReviewerError, UsageError
from reviewer.tree import git

log = logging.getLogger(__name__)
Say = Callable[[str], None]
IDLE_TIMEOUT = 3600.0  # --once: the longest it waits for the jobs of its tick
REPORT_EVERY = 1.0  # seconds between two looks for ended rounds while `run` waits for its next tick


class Stopped(ReviewerError):
    """--once: the jobs did not end in time (exit 1, docs/reference.md)."""

    status = ExitStatus.FINDINGS


@contextmanager
def _signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set STOP (the loop ends after its current step; workers finish or hand back their jobs)."""
    def handler(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 (signal's signature)
        stop.set()

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def run(cfg: BotConfig, workers: int, *, once: bool, interval: float = 60.0, say: Say = log.info,
        clock: Callable[[], float] = time.time) -> None:
    """Feeds, WORKERS consumer threads per pool (0: none, another machine runs them) and the sender, until SIGTERM or
    SIGINT; ONCE: one tick, its jobs waited for (with workers), reported and sent."""
    lp = loop.Loop(cfg)
    delivery, sender = loop.delivery(cfg, lp.policies)
    stop = threading.Event()
    with contextlib.ExitStack() as done:
        done.callback(lp.close)
        gauges = _metrics(cfg, lp, done, say)
        pool = Workers(cfg.settings(), lp.pools(), workers) if workers > 0 else None
        if pool is not None:
            done.callback(pool.stop)
        with _signals(stop):
            while not stop.is_set():
                _say(say, loop.tick(lp, clock()))
                if once and pool is not None and not _idle(lp, stop):
                    break
                _report(lp, delivery, sender, say, clock)
                if gauges is not None and cfg.metrics_file is not None:
                    gauges.write(cfg.metrics_file, clock())
                if once or _between(lp, delivery, sender, say, clock, stop, interval):
                    break


def _report(lp: loop.Loop, delivery: Delivery, sender: str, say: Say, clock: Callable[[], float]) -> None:
    _say(say, loop.report(lp, sender, clock()))
    for row in loop.drain(lp, delivery, clock()):
        say(f"outbox: {row.kind} {row.key}: {row.state}" + (f" ({row.error})" if row.error else ""))


def _between(lp: loop.Loop, delivery: Delivery, sender: str, say: Say, clock: Callable[[], float], stop: threading.Event,
             interval: float) -> bool:
    """The time until the next tick: the rounds that end meanwhile are reported and sent at once (every REPORT_EVERY
    seconds: one query when none ended), not a whole interval later. Whether the bot is to stop."""
    deadline = time.monotonic() + interval
    while (left := deadline - time.monotonic()) > 0:
        if stop.wait(min(left, REPORT_EVERY)):
            return True
        _report(lp, delivery, sender, say, clock)
    return stop.is_set()


def _metrics(cfg: BotConfig, lp: loop.Loop, done: contextlib.ExitStack, say: Say) -> metrics.Metrics | None:
    """The metrics `run` publishes (`[bot] metrics_listen`, `metrics_file`), stopped with DONE; None when none is asked."""
    if cfg.metrics_listen is None and cfg.metrics_file is None:
        return None
    gauges = metrics.Metrics(cfg.jobs_url, lp.lists())
    done.callback(gauges.close)
    if cfg.metrics_listen is not None:
        host, port = cfg.metrics_listen
        try:
            server = gauges.serve(host, port)
        except OSError as exc:
            raise ConfigError(f"{cfg.path}: [bot] metrics_listen: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        done.callback(server.close)
        say(f"metrics: http://{host}:{server.port}/metrics")
    return gauges


def _idle(lp: loop.Loop, stop: threading.Event) -> bool:
    deadline = time.monotonic() + IDLE_TIMEOUT
    while lp.busy():
        if stop.wait(0.2):
            return False
        if time.monotonic() > deadline:
            raise Stopped(f"--once: jobs still queued or running after {IDLE_TIMEOUT:g}s", "see review bot status")
    return True


def _say(say: Say, lines: list[str]) -> None:
    for line in lines:
        say(line)


def worker(cfg: BotConfig, pool: str, workers: int = 1) -> None:
    """POOL's consumer in this process until SIGTERM (running jobs finish or are handed back) or SIGINT."""
    consume(cfg.settings(), pool, workers)


def enqueue_msgid(cfg: BotConfig, msgid: str, list_name: str | None = None, now: float | None = None) -> tuple[Job, bool]:
    """A static job for the series that holds MSGID (any of its parts), read from the list's mirror whatever the
    cursor says; whether it is new. The policy is not asked: a person asked."""
    want = msgid.strip().strip("<>")
    now = time.time() if now is None else now
    lp = loop.Loop(cfg, fetch=False)
    try:
        for name, lc in lp.lists().items():
            if list_name is not None and name != list_name:
                continue
            mirror = loop.mirror_path(cfg, lc)
            raw, _ = feed.new_messages(mirror, {})
            lp.store.record(name, assemble.read(name, raw, now), {})  # the cursor stays: the messages are known, once
            for s in assemble.assemble(lp.store.messages(name), now, 0.0):
                if want in (s.root, *s.parts):
                    return _deliver_new(lp, name, s.key, loop.write_mbox(lp, s, loop.from_mirror(mirror)))
    finally:
        lp.close()
    raise InputError(f"enqueue {msgid}: no series with this Message-ID in the mirrors", "is it a patch or cover letter the mirror has?")


def _deliver_new(lp: loop.Loop, name: str, key: str, path: Path) -> tuple[Job, bool]:
    payload = {"mbox": str(path), "mbox_sha256": path.stem, "series": key, "stages": ["static"]}
    job, new = lp.bot.jobs.put(Spec(list=name, series=key, stage="static", payload=payload))
    if new:
        lp.bot.deliver(job)
    return job, new


def replay(cfg: BotConfig, span: str, *, send: bool, workers: int = 1) -> list[str]:
    """Review the messages of a mirror from FROM (exclusive) to TO (inclusive), commits of one epoch, again with a
    throwaway state (a temporary home), as the policy says; the mails it would send are listed, and sent only with SEND."""
    start, sep, end = span.partition("..")
    if not sep or not start or not end:
        raise UsageError(f"replay {span}: not FROM..TO", "give two commits of a mirror's epoch, e.g. replay abc123..def456")
    with tempfile.TemporaryDirectory(prefix="reviewer-replay-") as tmp:
        scratch = dataclasses.replace(cfg, home=Path(tmp), queue="sqlite", db=None)
        lp = loop.Loop(scratch, fetch=False)
        try:
            name, mirror, epoch = _find(cfg, start, end)
            raw = [m for m in feed.new_messages(mirror, {epoch: start})[0] if m.epoch == epoch]  # the other epochs: not asked for
            upto = next((n for n, m in enumerate(raw) if m.epoch == epoch and m.commit.startswith(end)), None)
            if upto is None:
                raise InputError(f"replay {span}: {end} does not follow {start} in {mirror}")
            now = time.time() + policy.DAY * 365  # long after: every series settled, no embargo left
            lp.store.record(name, assemble.read(name, raw[: upto + 1], now), {})
            out = _replay_tick(lp, name, mirror, now, workers)
            out += _replay_send(lp, scratch, now, send=send)
        finally:
            lp.close()
    return out


def _find(cfg: BotConfig, start: str, end: str) -> tuple[str, Path, int]:
    """The list, mirror and epoch that hold both commits."""
    for name, lc in (cfg.lists or {}).items():
        mirror = loop.mirror_path(cfg, lc)
        for n, repo in feed.epochs(mirror).items():
            if git.ok(repo, "rev-parse", "--verify", "-q", f"{start}^{{commit}}") and git.ok(repo, "rev-parse", "--verify", "-q",
                                                                                          f"{end}^{{commit}}"):
                return name, mirror, n
    raise InputError(f"replay {start}..{end}: no epoch of a configured mirror has both commits")


def _replay_tick(lp: loop.Loop, name: str, mirror: Path, now: float, workers: int) -> list[str]:
    pol = lp.policies.get(name)
    series = assemble.assemble(lp.store.messages(name), now, pol.settle)
    out = [loop.start(lp, s, pol, loop.from_mirror(mirror), now) for s in lp.store.save_ready(series, now)]
    pool = Workers(lp.cfg.settings(), lp.pools(), max(1, workers))
    try:
        loop.wait_idle(lp, IDLE_TIMEOUT)
    finally:
        pool.stop()
    return out


def _replay_send(lp: loop.Loop, cfg: BotConfig, now: float, *, send: bool) -> list[str]:
    delivery, sender = loop.delivery(cfg, lp.policies)
    out = loop.report(lp, sender, now)
    rows = lp.outbox.select("queued")
    out += [f"would send: {r.email()['Subject']} to {r.email()['To']}" for r in rows] if not send else []
    if send:
        out += [f"sent: {r.email()['Subject']}: {r.state}" for r in loop.drain(lp, delivery, now)]
    return out
