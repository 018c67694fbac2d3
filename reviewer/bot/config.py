"""The bot's configuration file (TOML), validated before anything starts; every error is one line naming the file
and the key.

    [bot]
    home = "/var/lib/reviewer-bot"   # the state directory (required; relative: to the file's directory)
    queue = "sqlite"                 # or "redis://host:6379/0"
    db = "postgresql://..."          # the jobs table and outbox; default: jobs.db in home (SQLite)
    lease = 60                       # seconds a job's claim lasts without a heartbeat
    metrics_listen = "127.0.0.1:9105" # `run` serves GET /metrics there (Prometheus' text format)
    metrics_file = "/var/lib/node_exporter/textfile/reviewer_bot.prom"  # and/or writes it there after each tick

    [lists.netdev]
    mirror = "/srv/lore/netdev"      # the list's public-inbox git mirror: a path or a URL
    # lei = "dfn:mm/dmapool.c AND rt:2.weeks.ago.."   # instead of mirror: a lei saved search (lei.py)
    tree = "/srv/linux/net-next"     # the kernel git tree the apply, build and guest stages apply series to
    # mail, stages, rfc, settle, patchwork, ...: the list's policy, passed through as they are (policy.py reads them)
"""
from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer.bot.queue import Settings
from reviewer.errors import ConfigError

BOT_KEYS = ("home", "queue", "db", "lease", "metrics_listen", "metrics_file")
TABLES = ("bot", "lists")
URL = re.compile(r"^[a-z][a-z0-9+.-]*://")


@dataclass(frozen=True)
class ListConfig:
    name: str
    mirror: str  # a path (made absolute) or a URL; "" for a list followed with lei
    policy: Mapping[str, Any]  # the [lists.NAME] table as written, mirror included
    tree: Path | None = None  # the kernel git tree series are applied to (apply, build, guest); absolute
    lei: str = ""  # instead of a mirror: a lei saved search (its query), for one maintainer's laptop (lei.py)


@dataclass(frozen=True)
class BotConfig:
    path: Path
    home: Path
    queue: str = "sqlite"
    db: str | None = None  # None: jobs.db in home
    lists: Mapping[str, ListConfig] | None = None
    lease: float = 60.0  # seconds a job's claim lasts without a heartbeat: how soon a killed worker's job runs again
    metrics_listen: tuple[str, int] | None = None  # (host, port) `run` serves /metrics on
    metrics_file: Path | None = None  # the file `run` writes the metrics to after each tick

    def settings(self) -> Settings:
        return Settings(home=self.home, queue=self.queue, db=self.db, lease=self.lease)

    @property
    def jobs_url(self) -> str:
        return self.settings().jobs_url


def load(path: Path) -> BotConfig:
    """The configuration in PATH; ConfigError (exit 3) naming the file and key of the first problem."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file", "give the bot's configuration file with --config FILE") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return _parse(path, data)


def _parse(path: Path, data: dict[str, Any]) -> BotConfig:
    _known(path, "", data, TABLES)
    bot = _table(path, "bot", data.get("bot"))
    _known(path, "[bot] ", bot, BOT_KEYS)
    if "home" not in bot:
        raise ConfigError(f"{path}: [bot] home: missing (the bot's state directory)", 'add e.g. home = "/var/lib/reviewer-bot" under [bot]')
    home = path.parent / _text(path, "[bot] home", bot["home"])
    queue = _text(path, "[bot] queue", bot.get("queue", "sqlite"))
    if queue != "sqlite" and not queue.startswith("redis://"):
        raise ConfigError(f"{path}: [bot] queue: {queue!r} is neither \"sqlite\" nor a redis:// URL", 'e.g. queue = "redis://host:6379/0"')
    db = bot.get("db")
    if db is not None and not _text(path, "[bot] db", db).startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"{path}: [bot] db: {db!r} is not a postgresql:// URL", "leave it out for SQLite in the bot's home")
    lease = bot.get("lease", 60.0)
    if isinstance(lease, bool) or not isinstance(lease, int | float) or lease < 1:
        raise ConfigError(f"{path}: [bot] lease: {lease!r} is not a number of seconds (at least 1)", "e.g. lease = 60")
    lists = {name: _list(path, name, table) for name, table in _table(path, "lists", data.get("lists", {})).items()}
    listen = _listen(path, bot["metrics_listen"]) if "metrics_listen" in bot else None
    mfile = (path.parent / _text(path, "[bot] metrics_file", bot["metrics_file"])).resolve() if "metrics_file" in bot else None
    if mfile is not None and not mfile.parent.is_dir():
        raise ConfigError(f"{path}: [bot] metrics_file: {mfile.parent} is no directory")
    return BotConfig(path, home.resolve(), queue, db, lists, float(lease), listen, mfile)


def _listen(path: Path, value: object) -> tuple[str, int]:
    host, sep, port = _text(path, "[bot] metrics_listen", value).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{path}: [bot] metrics_listen: {value!r} is not HOST:PORT", 'e.g. metrics_listen = "127.0.0.1:9105"')
    return host.strip("[]"), int(port)


def _list(path: Path, name: str, table: object) -> ListConfig:
    where = f"[lists.{name}]"
    policy = _table(path, where, table)
    if "lei" in policy:
        if "mirror" in policy:
            raise ConfigError(f"{path}: {where} lei: a list is followed by a mirror or by lei, not both", "remove one of the two keys")
        query = _text(path, f"{where} lei", policy["lei"])
    elif "mirror" not in policy:
        raise ConfigError(f"{path}: {where} mirror: missing (the list's public-inbox git mirror: a path or a URL)",
                          "or lei = QUERY: a lei saved search instead")
    else:
        query = ""
    mirror = "" if query else _text(path, f"{where} mirror", policy["mirror"])
    tree = None
    if "tree" in policy:
        tree = (path.parent / _text(path, f"{where} tree", policy["tree"])).resolve()
        if not (tree / ".git").exists():
            raise ConfigError(f"{path}: {where} tree: {tree} is no git work tree", "give the kernel tree series are applied to")
    where_from = mirror if not mirror or URL.match(mirror) else str((path.parent / mirror).resolve())
    return ListConfig(name, where_from, policy, tree, query)


def _table(path: Path, key: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: [{key.strip('[]')}]: missing, or not a table")
    return value


def _text(path: Path, key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{path}: {key}: {value!r} is not a non-empty string")
    return value


def _known(path: Path, where: str, table: Mapping[str, Any], known: tuple[str, ...]) -> None:
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ConfigError(f"{path}: {where}{unknown[0]}: unknown key", f"the keys known here: {', '.join(known)}")
