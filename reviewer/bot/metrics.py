"""The bot's metrics in Prometheus' text exposition format 0.0.4, read from the jobs table and the outbox (one
database: jobs.db in the bot's home, or the shared PostgreSQL), written by hand: no client library.

    reviewer_bot_jobs{pool,state}                     gauge: jobs per pool and state (queued: the queue's depth)
    reviewer_bot_oldest_waiting_seconds{pool}         gauge: age of the oldest queued job that is due (0: none)
    reviewer_bot_job_seconds{stage}                   histogram: a done job, from queued to done (waiting included)
    reviewer_bot_stage_seconds{stage}                 histogram: a done job's last attempt, from claimed (started) to done
    reviewer_bot_series_first_result_seconds          histogram: a series, from its first job queued to its first done
    reviewer_bot_series_final_result_seconds          histogram: ... to its last done, once none of its jobs is live
    reviewer_bot_mails_sent_total{list}               counter: mails sent (increase(...[1d]): mails per list per day)
    reviewer_bot_mails_last_day{list}                 gauge: mails sent in the last 24 hours
    reviewer_bot_outbox_rows{kind,state}              gauge: outbox rows (mail, check) per state

A series' times start at its first job, not at its mail's arrival (messages.seen_at is in bot.sqlite, another
database); a job done before the jobs table had its `started` column has no stage duration. Label values are
escaped as the format says (backslash, double quote, newline): a list name comes from the configuration, but
nothing read from a mail may break a line. `write(path)` publishes the text
atomically for node_exporter's textfile collector; `serve(host, port)` answers GET /metrics.
"""
from __future__ import annotations

import http.server
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from reviewer.bot import jobs, outbox, sql

log = logging.getLogger(__name__)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DAY = 86400.0
# Seconds: a static review takes seconds, a build minutes, a guest run up to an hour, a queue backlog hours.
BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, DAY)
Labels = Mapping[str, str]


def escape(value: str) -> str:
    """A label value as the format writes it between double quotes."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    return "+Inf" if value == float("inf") else repr(float(value)) if value != int(value) else str(int(value))


def sample(name: str, labels: Labels, value: float) -> str:
    inner = ",".join(f'{k}="{escape(v)}"' for k, v in labels.items())
    return f"{name}{{{inner}}} {_number(value)}" if inner else f"{name} {_number(value)}"


def family(name: str, kind: str, text: str, samples: Iterable[str]) -> list[str]:
    return [f"# HELP {name} {_help(text)}", f"# TYPE {name} {kind}", *samples]


def histogram(name: str, labels: Labels, values: Sequence[float]) -> list[str]:
    """The _bucket (cumulative, le), _sum and _count samples of VALUES."""
    out = [sample(f"{name}_bucket", {**labels, "le": repr(b)}, sum(v <= b for v in values)) for b in BUCKETS]
    out += [sample(f"{name}_bucket", {**labels, "le": "+Inf"}, len(values)),
            sample(f"{name}_sum", labels, sum(values)), sample(f"{name}_count", labels, len(values))]
    return out


class Metrics:
    """The metrics of the jobs table (and outbox) at URL (jobs.Jobs' URL). LISTS (the configuration's) get a
    mails_last_day sample even when no mail was sent for them."""

    def __init__(self, url: str | Path, lists: Iterable[str] = ()) -> None:
        self.jobs = jobs.Jobs(url)
        self.outbox = outbox.Outbox(self.jobs.db)
        self.lists = tuple(lists)

    def close(self) -> None:
        self.jobs.close()

    def render(self, now: float | None = None) -> str:
        now = time.time() if now is None else now
        with self.jobs.db.tx() as run:
            lines = [*_depth(run, now), *_stages(run), *_series(run), *_mails(run, now, self.lists)]
        return "\n".join(lines) + "\n"

    def write(self, path: Path, now: float | None = None) -> None:
        """PATH (e.g. /var/lib/node_exporter/textfile/reviewer_bot.prom) replaced at once: the collector never
        reads half a file. The temporary file does not end in .prom, so the collector skips it."""
        text = self.render(now).encode()
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def serve(self, host: str = "127.0.0.1", port: int = 0) -> Server:
        """GET /metrics on HOST:PORT (0: a free port, see Server.port), in a thread; Server.close() stops it."""
        return Server(self, host, port)


class Server:
    def __init__(self, metrics: Metrics, host: str, port: int) -> None:
        self.httpd = http.server.ThreadingHTTPServer((host, port), _handler(metrics))
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="metrics-http", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(metrics: Metrics) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] != "/metrics":
                self._reply(404, "text/plain; charset=utf-8", b"only /metrics here\n")
                return
            try:
                body = metrics.render().encode()
            except Exception as exc:  # the database away: the scrape fails, the bot goes on
                log.warning("metrics: %s", exc)
                self._reply(500, "text/plain; charset=utf-8", f"{type(exc).__name__}: {exc}\n".encode())
                return
            self._reply(200, CONTENT_TYPE, body)

        def _reply(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's signature)
            log.debug("metrics: " + format, *args)

    return Handler


def _depth(run: sql.Run, now: float) -> list[str]:
    counts = run("SELECT pool, state, COUNT(*) FROM jobs GROUP BY pool, state", ()).fetchall()
    due = dict(run("SELECT pool, MIN(created) FROM jobs WHERE state = 'queued' AND not_before <= ? GROUP BY pool", (now,)).fetchall())
    pools = sorted({str(p) for p, _, _ in counts})
    got = {(str(p), str(s)): int(n) for p, s, n in counts}
    depth = [sample("reviewer_bot_jobs", {"pool": p, "state": s}, got.get((p, s), 0)) for p in pools for s in jobs.STATES]
    oldest = [sample("reviewer_bot_oldest_waiting_seconds", {"pool": p}, max(0.0, now - float(due[p])) if p in due else 0) for p in pools]
    return [*family("reviewer_bot_jobs", "gauge", "Jobs per pool and state (state=queued: the queue's depth).", depth),
            *family("reviewer_bot_oldest_waiting_seconds", "gauge", "Age of the oldest due queued job, per pool (0: none).", oldest)]


def _stages(run: sql.Run) -> list[str]:
    rows = run("SELECT stage, updated - created, updated - started FROM jobs WHERE state = 'done' ORDER BY stage", ()).fetchall()
    return [*family("reviewer_bot_job_seconds", "histogram", "Done jobs per stage: seconds from queued to done (waiting included).",
                    _per_stage("reviewer_bot_job_seconds", [(stage, total) for stage, total, _ in rows])),
            *family("reviewer_bot_stage_seconds", "histogram",
                    "Done jobs per stage: seconds from the last attempt's claim (started) to done, the stage's run alone.",
                    _per_stage("reviewer_bot_stage_seconds", [(stage, ran) for stage, _, ran in rows if ran is not None]))]


def _per_stage(name: str, rows: Sequence[tuple[str, float]]) -> list[str]:
    by_stage: dict[str, list[float]] = {}
    for stage, seconds in rows:
        by_stage.setdefault(str(stage), []).append(float(seconds))
    return [s for stage, values in by_stage.items() for s in histogram(name, {"stage": stage}, values)]


def _series(run: sql.Run) -> list[str]:
    # The report job is the final result (the reply and the checks written); a series is counted once it has one,
    # and stays counted whatever comes later (a rerun), so the histogram only grows.
    rows = run("SELECT MIN(CASE WHEN stage != 'report' THEN created END),"
               " MIN(CASE WHEN stage != 'report' AND state = 'done' THEN updated END),"
               " MIN(CASE WHEN stage = 'report' AND state = 'done' THEN updated END) FROM jobs GROUP BY list, series", ()).fetchall()
    first = [float(f) - float(c) for c, f, _ in rows if c is not None and f is not None]
    final = [float(r) - float(c) for c, _, r in rows if c is not None and r is not None]
    return [*family("reviewer_bot_series_first_result_seconds", "histogram",
                    "Series: seconds from its first job queued to its first stage done.",
                    histogram("reviewer_bot_series_first_result_seconds", {}, first)),
            *family("reviewer_bot_series_final_result_seconds", "histogram",
                    "Series: seconds from its first job queued to its first report done (its reply and checks written).",
                    histogram("reviewer_bot_series_final_result_seconds", {}, final))]


def _mails(run: sql.Run, now: float, lists: Sequence[str]) -> list[str]:
    sent = "SELECT list, COUNT(*) FROM outbox WHERE kind = 'mail' AND state = 'sent'"
    ever = {str(k): int(n) for k, n in run(sent + " GROUP BY list", ()).fetchall()}  # the outbox keeps its rows: this only grows
    day = {str(k): int(n) for k, n in run(sent + " AND updated >= ? GROUP BY list", (now - DAY,)).fetchall()}
    rows = {(str(k), str(s)): int(n) for k, s, n in run("SELECT kind, state, COUNT(*) FROM outbox GROUP BY kind, state", ()).fetchall()}
    names = sorted({*lists, *ever})
    kinds = sorted({"mail", "check", *(k for k, _ in rows)})
    box = [sample("reviewer_bot_outbox_rows", {"kind": k, "state": s}, rows.get((k, s), 0)) for k in kinds for s in outbox.STATES]
    return [*family("reviewer_bot_mails_sent_total", "counter", "Mails sent per list (increase over 1d: mails per list per day).",
                    [sample("reviewer_bot_mails_sent_total", {"list": n}, ever.get(n, 0)) for n in names]),
            *family("reviewer_bot_mails_last_day", "gauge", "Mails sent per list in the last 24 hours.",
                    [sample("reviewer_bot_mails_last_day", {"list": n}, day.get(n, 0)) for n in names]),
            *family("reviewer_bot_outbox_rows", "gauge", "Outbox rows per kind (mail, check) and state.", box)]
