"""Per-list policy (TOML, `[lists.NAME]` tables), muted by default, and the pure decisions it makes.

A list without a table gets nothing sent (its review runs statically for the status output only if the
operator lists it at all); a table with an unknown key is a ConfigError naming the key and the file, as is
any value of the wrong type. `Policies.reloaded()` reads the file again when it changed; a broken new
file keeps the policy in force and reports the error (`Policies.error`), so the bot never stops on it.

The decisions take the time as an argument (BOT-DESIGN.md section 7: the policy gate between series and
jobs, then between results and the outbox):
- `plan(series, policy, now)`: which stages and architectures to run, or why not;
- `may_mail(policy, series, levels, sent, now)`: whether a mail may go out, to whom, or when at the earliest.
"""
from __future__ import annotations

import hashlib
import logging
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from reviewer.bot.assemble import Assembled, Readiness
from reviewer.errors import ConfigError
from reviewer.kernel import arches as registry
from reviewer.model import Level

log = logging.getLogger(__name__)

STAGES = ("static", "apply", "build", "guest")
DAY = 86400.0
# Keys of [lists.NAME] that belong to the bot's configuration (reviewer/bot/config.py), not to its policy.
CONFIG_KEYS = frozenset({"mirror", "tree", "lei"})
_LEVELS = {"error": Level.ERROR, "warning": Level.WARNING}


class MailTo(StrEnum):
    OFF = "off"
    AUTHOR = "author"
    AUTHOR_LIST = "author+list"


class Rfc(StrEnum):
    SKIP = "skip"  # an RFC is not reviewed at all
    STATIC = "static"  # statically only, whatever `stages` says
    FULL = "full"  # as any other series


@dataclass(frozen=True)
class Patchwork:
    url: str  # the REST API, 1.2 or later (checks name patches by Message-ID): https://patchwork.example/api/1.2/
    project: str
    checks: bool = False
    token_file: str = ""  # the file holding the API token (relative: to the configuration file's directory); only the sender reads it


@dataclass(frozen=True)
class Policy:
    """One list's policy; `Policy(name)` is the muted default."""

    name: str
    stages: tuple[str, ...] = ("static",)
    arches: tuple[str, ...] = ()
    mail: MailTo = MailTo.OFF
    patchwork: Patchwork | None = None
    rfc: Rfc = Rfc.STATIC
    embargo_hours: float = 0.0
    max_mails_per_day: int | None = None
    max_mails_per_author_per_day: int | None = None
    quiet_on_clean: bool = True
    threshold: Level = Level.WARNING
    ignore_from: tuple[str, ...] = ()  # addresses, or regexes (`re.fullmatch`, case folded) of senders to ignore
    settle: float = 1800.0
    bench_runs: int = 0  # the guest stage's benchmark runs a side (review --bench-runs); 0: the tests only
    maintainers: tuple[str, ...] = ()  # addresses whose commands count, beside MAINTAINERS of the touched files

    def ignores(self, sender: str) -> bool:
        address = sender.strip().lower()
        return any(p.lower() == address or re.fullmatch(p, address, re.IGNORECASE) for p in self.ignore_from)


def _where(path: Path, name: str, key: str) -> str:
    return f"{path}: [lists.{name}] {key}"


def _str_list(path: Path, name: str, key: str, value: Any, allowed: Sequence[str] | None = None) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{_where(path, name, key)}: expected a list of strings, got {value!r}")
    bad = [v for v in value if allowed is not None and v not in allowed]
    if bad:
        raise ConfigError(f"{_where(path, name, key)}: unknown value {bad[0]!r}", f"one of {', '.join(allowed or ())}")
    return tuple(value)


def _choice(path: Path, name: str, key: str, value: Any, allowed: Iterable[str]) -> str:
    choices = list(allowed)
    if value not in choices:
        raise ConfigError(f"{_where(path, name, key)}: {value!r} is not one of {' | '.join(choices)}")
    return str(value)


def _number(path: Path, name: str, key: str, value: Any, *, integer: bool = False) -> float:
    ok = isinstance(value, int) or (isinstance(value, float) and not integer)
    if isinstance(value, bool) or not ok or value < 0:
        raise ConfigError(f"{_where(path, name, key)}: expected a {'whole ' if integer else ''}number >= 0, got {value!r}")
    return float(value)


def _flag(path: Path, name: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{_where(path, name, key)}: expected true or false, got {value!r}")
    return value


def _patchwork(path: Path, name: str, value: Any) -> Patchwork:
    if not isinstance(value, dict):
        raise ConfigError(f"{_where(path, name, 'patchwork')}: expected a table (url, project, checks, token_file)")
    unknown = sorted(set(value) - {"url", "project", "checks", "token_file"})
    if unknown:
        raise ConfigError(f"{_where(path, name, 'patchwork.' + unknown[0])}: unknown key", "known: url, project, checks, token_file")
    for key in ("url", "project", *(("token_file",) if "token_file" in value else ())):
        if not isinstance(value.get(key), str) or not value[key]:
            raise ConfigError(f"{_where(path, name, 'patchwork.' + key)}: expected a non-empty string")
    checks = _flag(path, name, "patchwork.checks", value.get("checks", False))
    if checks and "token_file" not in value:
        raise ConfigError(f"{_where(path, name, 'patchwork.token_file')}: missing: posting checks needs a maintainer's API token",
                          'e.g. token_file = "patchwork.token" (a file only the bot can read)')
    return Patchwork(value["url"], value["project"], checks, value.get("token_file", ""))


def _stages(path: Path, name: str, value: Any) -> tuple[str, ...]:
    stages = _str_list(path, name, "stages", value, STAGES)
    if not stages:
        raise ConfigError(f"{_where(path, name, 'stages')}: empty", "give at least \"static\", or mail = \"off\" to review silently")
    return tuple(dict.fromkeys(stages))


def _regexes(path: Path, name: str, values: tuple[str, ...]) -> tuple[str, ...]:
    for v in values:
        try:
            re.compile(v)
        except re.error as exc:
            raise ConfigError(f"{_where(path, name, 'ignore_from')}: {v!r}: invalid regex: {exc}") from exc
    return values


def _limit(path: Path, name: str, key: str, value: Any) -> int | None:
    return None if value is None else int(_number(path, name, key, value, integer=True))


_Reader = Callable[[Path, str, Any], dict[str, Any]]  # (file, list, value) -> Policy's fields
_READERS: dict[str, _Reader] = {
    "stages": lambda p, n, v: {"stages": _stages(p, n, v)},
    "arches": lambda p, n, v: {"arches": _str_list(p, n, "arches", v, tuple(registry.BY_NAME))},
    "mail": lambda p, n, v: {"mail": MailTo(_choice(p, n, "mail", v, MailTo))},
    "patchwork": lambda p, n, v: {"patchwork": _patchwork(p, n, v)},
    "rfc": lambda p, n, v: {"rfc": Rfc(_choice(p, n, "rfc", v, Rfc))},
    "embargo_hours": lambda p, n, v: {"embargo_hours": _number(p, n, "embargo_hours", v)},
    "max_mails_per_day": lambda p, n, v: {"max_mails_per_day": _limit(p, n, "max_mails_per_day", v)},
    "max_mails_per_author_per_day": lambda p, n, v: {"max_mails_per_author_per_day": _limit(p, n, "max_mails_per_author_per_day", v)},
    "quiet_on_clean": lambda p, n, v: {"quiet_on_clean": _flag(p, n, "quiet_on_clean", v)},
    "threshold": lambda p, n, v: {"threshold": _LEVELS[_choice(p, n, "threshold", v, _LEVELS)]},
    "ignore_from": lambda p, n, v: {"ignore_from": _regexes(p, n, _str_list(p, n, "ignore_from", v))},
    "settle": lambda p, n, v: {"settle": _number(p, n, "settle", v)},
    "bench_runs": lambda p, n, v: {"bench_runs": int(_number(p, n, "bench_runs", v, integer=True))},
    "maintainers": lambda p, n, v: {"maintainers": tuple(a.lower() for a in _str_list(p, n, "maintainers", v))},
}
KEYS = frozenset(_READERS)


def parse(table: Mapping[str, Any], name: str, path: Path) -> Policy:
    """The policy of list NAME from its TOML TABLE (read from PATH, named in every error)."""
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key in CONFIG_KEYS:
            continue
        if key not in _READERS:
            raise ConfigError(f"{_where(path, name, key)}: unknown key", f"known keys: {', '.join(sorted(KEYS | CONFIG_KEYS))}")
        values.update(_READERS[key](path, name, value))
    policy = Policy(name, **values)
    per_arch = [s for s in policy.stages if s in ("build", "guest")]
    if per_arch and not policy.arches:
        raise ConfigError(f"{_where(path, name, 'arches')}: missing: stage {per_arch[0]!r} runs once per architecture",
                          f"e.g. arches = [\"{registry.host().name}\"]")
    return policy


def _stamp(path: Path) -> tuple[int, str]:
    data = path.read_bytes()
    return path.stat().st_mtime_ns, hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Policies:
    """Every list's policy as read from PATH; `error`: why the newest version of the file was refused."""

    path: Path
    lists: Mapping[str, Policy] = field(default_factory=dict)
    stamp: tuple[int, str] = (0, "")
    error: str | None = None

    def get(self, name: str) -> Policy:
        """NAME's policy, or the muted default."""
        return self.lists.get(name) or Policy(name)

    def reloaded(self) -> Policies:
        """These policies, or the file's newer ones when it changed; a file that no longer reads keeps these
        (with the error recorded and logged), and a fixed file is read again."""
        try:
            stamp = _stamp(self.path)
        except OSError as exc:
            return self._refused(f"{self.path}: cannot read it: {exc.strerror or exc}", self.stamp)
        if stamp == self.stamp:
            return self
        try:
            return _read(self.path, stamp)
        except ConfigError as exc:
            return self._refused(exc.message, stamp)

    def _refused(self, error: str, stamp: tuple[int, str]) -> Policies:
        if error != self.error:
            log.error("%s; the policy in force stays", error)
        return replace(self, stamp=stamp, error=error)


def load(path: Path) -> Policies:
    """The policies of PATH; ConfigError (naming the file and key) when it cannot be read or is invalid."""
    try:
        stamp = _stamp(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from exc
    return _read(path, stamp)


def _read(path: Path, stamp: tuple[int, str]) -> Policies:
    try:
        doc = tomllib.loads(path.read_bytes().decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    unknown = sorted(set(doc) - {"lists", "bot"})
    if unknown:
        raise ConfigError(f"{path}: [{unknown[0]}]: unknown table", "the policy file has [bot] and [lists.NAME] tables")
    lists = doc.get("lists", {})
    if not isinstance(lists, dict) or not all(isinstance(t, dict) for t in lists.values()):
        raise ConfigError(f"{path}: lists: expected [lists.NAME] tables")
    return Policies(path, {name: parse(table, name, path) for name, table in lists.items()}, stamp)


class Action(StrEnum):
    RUN = "run"
    WAIT = "wait"  # not ready yet
    REUSE = "reuse"  # a duplicate: the earlier posting's results stand, nothing new runs or is sent
    SKIP = "skip"


@dataclass(frozen=True)
class Plan:
    action: Action
    reason: str
    stages: tuple[str, ...] = ()
    arches: tuple[str, ...] = ()
    mailable: bool = False  # whether its results may ever be mailed (may_mail decides when)


def plan(series: Assembled, policy: Policy, now: float) -> Plan:
    """What SERIES gets under POLICY at NOW (seconds)."""
    if series.state is Readiness.WAITING:
        until = series.last_part_at + policy.settle
        return Plan(Action.WAIT, f"waiting for parts {_parts(series.missing)} until {until:.0f} (now {now:.0f})")
    if policy.ignores(series.sender):
        return Plan(Action.SKIP, f"sender {series.sender} is ignored (ignore_from)")
    if series.duplicate_of is not None:
        what = "a RESEND" if series.resend else "unchanged patches (same git patch-id)"
        return Plan(Action.REUSE, f"{what} of {series.duplicate_of}: nothing new")
    if series.rfc and policy.rfc is Rfc.SKIP:
        return Plan(Action.SKIP, "an RFC, and rfc = \"skip\"")
    mailable = policy.mail is not MailTo.OFF
    if series.state is Readiness.INCOMPLETE:
        return Plan(Action.RUN, f"incomplete (parts {_parts(series.missing)} missing): static only, never mailed", ("static",))
    if series.rfc and policy.rfc is Rfc.STATIC:
        return Plan(Action.RUN, "an RFC: static only (rfc = \"static\")", ("static",), mailable=mailable)
    arches = policy.arches if {"build", "guest"} & set(policy.stages) else ()
    return Plan(Action.RUN, "ready", policy.stages, arches, mailable=mailable)


def _parts(numbers: Sequence[int]) -> str:
    return ", ".join(str(n) for n in numbers)


@dataclass(frozen=True)
class Sent:
    """One mail the bot sent for LIST at AT (seconds), about a series by AUTHOR (its address)."""

    list: str
    author: str
    at: float


class Verdict(StrEnum):
    SEND = "send"
    LATER = "later"  # not before `not_before`
    NEVER = "never"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str
    to_list: bool = False  # author+list: the list in Cc as well as the author
    not_before: float | None = None

    @property
    def send(self) -> bool:
        return self.verdict is Verdict.SEND


_RANK = {Level.ERROR: 2, Level.WARNING: 1, Level.INFO: 0}


def may_mail(policy: Policy, series: Assembled, levels: Iterable[Level], sent: Iterable[Sent], now: float, *,
             stopped: bool = False) -> Decision:
    """Whether the reply about SERIES may be sent at NOW: LEVELS are those of its new findings, SENT the
    mails sent before (any list; counted per POLICY's list and per author over the last 24 hours), STOPPED
    whether a command stopped it (commands.Stops)."""
    never = _never(policy, series, levels, stopped=stopped)
    if never:
        return Decision(Verdict.NEVER, never)
    ready = series.last_part_at + policy.embargo_hours * 3600
    if now < ready:
        return Decision(Verdict.LATER, f"embargo of {policy.embargo_hours:g} hours", not_before=ready)
    recent = [s for s in sent if s.list == policy.name and now - s.at < DAY]
    mine = [s for s in recent if s.author.lower() == series.sender.lower()]
    for limit, counted, what in ((policy.max_mails_per_day, recent, "max_mails_per_day"),
                                 (policy.max_mails_per_author_per_day, mine, "max_mails_per_author_per_day")):
        if limit == 0:
            return Decision(Verdict.NEVER, f"{what} = 0")
        if limit is not None and len(counted) >= limit:
            oldest = sorted(s.at for s in counted)[len(counted) - limit]
            return Decision(Verdict.LATER, f"{what} = {limit} reached", not_before=oldest + DAY)
    return Decision(Verdict.SEND, "allowed", to_list=policy.mail is MailTo.AUTHOR_LIST)


def _never(policy: Policy, series: Assembled, levels: Iterable[Level], *, stopped: bool) -> str:
    """Why no mail is ever sent about SERIES, or ""."""
    if policy.mail is MailTo.OFF:
        return "mail is off for this list"
    if stopped:
        return "stopped by a command"
    if series.state is not Readiness.READY:
        return "incomplete series are never mailed" if series.state is Readiness.INCOMPLETE else "not ready"
    if series.duplicate_of is not None:
        return f"a duplicate of {series.duplicate_of}: nothing new to say"
    if policy.ignores(series.sender):
        return f"sender {series.sender} is ignored"
    if series.rfc and policy.rfc is Rfc.SKIP:
        return "an RFC, and rfc = \"skip\""
    if policy.quiet_on_clean and not any(_RANK[lv] >= _RANK[policy.threshold] for lv in levels):
        return f"nothing at or above {policy.threshold} (quiet_on_clean)"
    return ""
