"""git config [reviewer] + .reviewer.toml in the kernel tree -> a frozen Config, validated up front.

    git config --add reviewer.rules ~/my-rules        extra rule directories (multi-valued)
    git config --add reviewer.disable subject-format  rule or check ids to drop (multi-valued)
    git config reviewer.changelog.level info          a new level for a rule, check or rule/requirement:
    git config reviewer.checkpatch/LONG_LINE.level warning    the id is a subsection (git allows any
                                                      character there, `/` included)
    git config reviewer.level.changelog info          the older form, for ids without `/` (git refuses
                                                      `/` in a key name); the subsection form wins

    # .reviewer.toml at the top of the kernel tree
    [rules]
    disable = ["cover-letter"]
    levels = { "maintainers-coverage" = "info" }
    dirs = ["tools/reviewer-rules"]                  # relative to the tree
    [checkpatch]
    ignore = ["LONG_LINE", "FILE_PATH_CHANGES"]      # checkpatch.pl types never reported

    git config --add reviewer.checkpatchIgnore LONG_LINE,CAMELCASE   (multi-valued, commas too)
    git config reviewer.logDir ~/review-logs           where each run's log directory goes (--log-dir)
    git config reviewer.resultCache false             never read or store cached results (checkpatch, apply)
    git config reviewer.loreUrl URL                    the public-inbox archive to fetch Message-IDs from
    git config reviewer.cacheMinutes N                 how long a fetched thread is fresh (0: always fetch)

Both sources are merged (git config last, so a user overrides the tree); every error is a
ConfigError that names the key. An unknown reviewer.* key is an error too (a typo would
otherwise be ignored in silence), and so is a bad value of a REVIEWER_* environment variable.
All of it is checked by `load`, before anything is fetched or touched.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import difflib
import itertools
import math
import os
import re
import shutil
import time
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from reviewer.errors import ConfigError
from reviewer.model import Finding, Level
from reviewer.store import dirs
from reviewer.tree.git import call as git_call

TREE_FILE = ".reviewer.toml"
LEVELS = tuple(lv.value for lv in Level)
HINT = "see `git config --get-regexp '^reviewer\\.'` and the .reviewer.toml of the kernel tree"
TOO_DEEP = "arrays or tables nested too deeply for Python's TOML parser"


@dataclass(frozen=True)
class Config:
    rule_dirs: tuple[Path, ...] = ()
    disable: frozenset[str] = frozenset()
    levels: Mapping[str, Level] = field(default_factory=lambda: MappingProxyType({}))
    checkpatch_ignore: frozenset[str] = frozenset()  # checkpatch.pl types, upper case
    reuse_worktrees: bool = False  # git config reviewer.reuseWorktrees: keep worktrees in the cache
    log_dir: Path | None = None  # git config reviewer.logDir: where the runs' log directories go
    result_cache: bool | None = None  # git config reviewer.resultCache; None (unset) means on
    lore_url: str | None = None  # git config reviewer.loreUrl (--lore-url and a pasted lore link win)
    cache_minutes: float | None = None  # git config reviewer.cacheMinutes; None (unset): the cache's default


def load(cwd: Path, tree: Path | None = None) -> Config:
    """The merged configuration: the tree's .reviewer.toml, the tree's git config, then git config in CWD.
    The environment and both directories are checked first: git cannot even start in a missing one."""
    check_environment()
    directory(cwd, "-C")
    if tree is not None:
        directory(tree, "--tree")
    base = from_toml(tree / TREE_FILE, tree) if tree is not None and (tree / TREE_FILE).is_file() else Config()
    if tree is not None and tree.resolve() != cwd.resolve():
        base = merge(base, from_git(tree))
    return merge(base, from_git(cwd))


def merge(first: Config, second: Config) -> Config:
    return Config(tuple(dict.fromkeys(first.rule_dirs + second.rule_dirs)), first.disable | second.disable,
                  MappingProxyType({**first.levels, **second.levels}), first.checkpatch_ignore | second.checkpatch_ignore,
                  first.reuse_worktrees or second.reuse_worktrees, second.log_dir or first.log_dir,
                  result_cache=first.result_cache if second.result_cache is None else second.result_cache,
                  lore_url=second.lore_url or first.lore_url,
                  cache_minutes=first.cache_minutes if second.cache_minutes is None else second.cache_minutes)


def from_git(cwd: Path) -> Config:
    """The reviewer.* keys of git config as seen from CWD, read with one `git config` run."""
    values = _git_values(cwd)
    _known_keys(values)
    lore_url, cache_minutes = _lore_values(values)
    for d in values.get("rules", []):
        if d:
            directory(Path(d).expanduser(), "git config reviewer.rules")  # read from the process's directory, as load_rules does
    levels = {rule: _level(f"reviewer.{key}", vs[-1]) for key, vs in sorted(values.items(), key=lambda kv: _level_form(kv[0])[1])
              if (rule := _level_form(key)[0]) is not None}
    logs = _last(values, "logdir")
    cache = _last(values, "resultcache")
    return Config(tuple(Path(d).expanduser() for d in values.get("rules", []) if d), frozenset(d for d in values.get("disable", []) if d),
                  MappingProxyType(levels), _types(values.get("checkpatchignore", [])),
                  _bool("reviewer.reuseWorktrees", _last(values, "reuseworktrees")),
                  cwd / Path(logs).expanduser() if logs else None,
                  result_cache=None if cache is None else _bool("reviewer.resultCache", cache),
                  lore_url=lore_url, cache_minutes=cache_minutes)


def _git_values(cwd: Path) -> dict[str, list[str]]:
    """Every reviewer.* value, by key (lower case after `reviewer.`, as git gives it), in the order
    git reads them: `git config -z --get-regexp` prints "key\nvalue\0", or "key\0" for a bare key."""
    done = git_call(cwd, "config", "-z", "--get-regexp", r"^reviewer\.")
    if done.returncode not in (0, 1):
        raise ConfigError(f"git config reviewer.*: {done.stderr.strip()}", HINT)
    values: dict[str, list[str]] = {}
    for record in done.stdout.split("\0"):
        if record:
            key, newline, value = record.partition("\n")
            values.setdefault(key.removeprefix("reviewer."), []).append(value if newline else "true")
    return values


# Every reviewer.* key, as `git config` prints it after `reviewer.` (lower case), and as documented;
# and the per-rule level keys: reviewer.<id>.level (the id a subsection: git allows any character
# there, and keeps its case) and the older reviewer.level.<id> (git refuses a `/` in that id).
KEYS = {k.lower(): k for k in ("rules", "disable", "checkpatchIgnore", "reuseWorktrees", "logDir", "resultCache", "loreUrl",
                               "cacheMinutes")}
_LEVEL_HINT = "reviewer.<id>.level (reviewer.level.<id> for an id without /)"


def _level_form(key: str) -> tuple[str | None, int]:
    """The rule id a level key (after `reviewer.`) names, and its precedence: the subsection form
    `<id>.level` (git prints it so: the subsection keeps its case, the name is lower case) beats the
    older `level.<id>`; (None, 0) for another key."""
    if key.endswith(".level") and len(key) > len(".level"):
        return key.removesuffix(".level"), 2
    if key.startswith("level.") and len(key) > len("level."):
        return key.removeprefix("level."), 1
    return None, 0


def _known_keys(values: dict[str, list[str]]) -> None:
    """No key we do not read: `reviewer.cachMinutes` would otherwise be ignored in silence.
    `<id>.level` and `level.<id>` take any id (validate_ids checks those); git keeps a subsection's
    case, so `reviewer.Level.x` is unknown."""
    for key in values:
        if key in KEYS or _level_form(key)[0] is not None:
            continue
        close = difflib.get_close_matches(key.lower(), [*KEYS, "level"], n=1, cutoff=0.7)
        maybe = f"did you mean reviewer.{KEYS.get(close[0], 'level.<id>')}? " if close else ""
        raise ConfigError(f"git config reviewer.{key}: unknown key",
                          f"{maybe}known: {', '.join(f'reviewer.{k}' for k in KEYS.values())}, {_LEVEL_HINT}")


def _lore_values(values: dict[str, list[str]]) -> tuple[str | None, float | None]:
    """reviewer.loreUrl and reviewer.cacheMinutes, checked before anything is fetched (None: unset)."""
    number = None
    minutes = _last(values, "cacheminutes")
    if minutes is not None:
        try:
            number = float(minutes)
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number < 0:
            raise ConfigError(f"git config reviewer.cacheMinutes: expected a number of minutes (0 or more), got {minutes!r}",
                              "set it to a number of minutes, e.g. 10 (0: always fetch)")
    url = _last(values, "loreurl")
    if url is not None and not is_http_url(url):
        raise ConfigError(f"git config reviewer.loreUrl: expected an http:// or https:// URL, got {url!r}",
                          "e.g. git config reviewer.loreUrl https://lore.kernel.org/all/")
    return (url.strip() if url else None), number


def is_http_url(text: str) -> bool:
    try:
        parts = urlsplit(text.strip())
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a bad port or IPv6 literal
        return False


def directory(path: Path, what: str, cwd: Path | None = None) -> None:
    """PATH (relative to CWD) is an existing directory, or a ConfigError naming WHAT (the option or key)."""
    full = path if path.is_absolute() or cwd is None else cwd / path
    if not full.exists():
        raise ConfigError(f"{what} {path}: no such directory", f"check the path given to {what}")
    if not full.is_dir():
        raise ConfigError(f"{what} {path}: not a directory", f"{what} takes a directory")


# REVIEWER_* environment variables: (default, a whole number?, must be above zero?). Read where
# they are used (lore.py, mail.py); checked together, before anything runs, by check_environment.
@dataclass(frozen=True)
class _Number:
    default: float
    integer: bool = False
    positive: bool = True  # > 0 (else >= 0)


NUMBERS = {
    "REVIEWER_LORE_RETRIES": _Number(3, integer=True, positive=False),
    "REVIEWER_LORE_BACKOFF": _Number(1.0, positive=False),
    "REVIEWER_LORE_TIMEOUT": _Number(30.0),
    "REVIEWER_LORE_DEADLINE": _Number(120.0),
    "REVIEWER_SMTP_DEADLINE": _Number(120.0),
}
_ENV_HINT = "fix or unset {} in the environment"


def env_number(name: str) -> float:
    """The value of the REVIEWER_* variable NAME (see NUMBERS), its default when unset or empty."""
    spec = NUMBERS[name]
    text = os.environ.get(name, "").strip()
    if not text:
        return spec.default
    what = ("a whole number" if spec.integer else "a number of seconds") + (" above 0" if spec.positive else ", 0 or more")
    try:
        value = float(int(text)) if spec.integer else float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (spec.positive and value == 0):
        raise ConfigError(f"{name}={text!r}: expected {what}", _ENV_HINT.format(name))
    return value


def check_environment() -> None:
    """Every REVIEWER_* variable the tool reads has a value it can use."""
    for name in NUMBERS:
        env_number(name)
    accel = os.environ.get("REVIEWER_BOOT_ACCEL", "")
    if accel not in ("", "tcg"):  # the boot stage only knows "tcg" (force TCG); anything else used to mean "auto"
        raise ConfigError(f"REVIEWER_BOOT_ACCEL={accel!r}: expected tcg (or unset: KVM when it works)",
                          _ENV_HINT.format("REVIEWER_BOOT_ACCEL"))
    boot_cache = os.environ.get("REVIEWER_BOOT_CACHE", "")
    if boot_cache and Path(boot_cache).exists() and not Path(boot_cache).is_dir():
        raise ConfigError(f"REVIEWER_BOOT_CACHE={boot_cache!r}: not a directory", _ENV_HINT.format("REVIEWER_BOOT_CACHE"))


def _last(values: dict[str, list[str]], key: str) -> str | None:
    return values[key][-1] if values.get(key) else None


_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0", "")


def _bool(key: str, value: str | None) -> bool:
    """git's booleans: true/yes/on/1 and false/no/off/0 (any case); unset is false."""
    if value is None or value.strip().lower() in _FALSE:
        return False
    if value.strip().lower() in _TRUE:
        return True
    raise ConfigError(f"{key}: expected a boolean (true/false), got {value!r}", HINT)


def _types(values: Iterable[str]) -> frozenset[str]:
    """checkpatch types as its --ignore takes them: comma-separated, any case."""
    return frozenset(t.strip().upper() for v in values for t in v.split(",") if t.strip())


def from_toml(path: Path, tree: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it: {exc}", HINT) from exc
    except RecursionError as exc:  # tomllib parses nested arrays and tables recursively
        raise ConfigError(f"{path}: cannot read it: {TOO_DEEP}", HINT) from exc
    _only(path, "", data, {"rules", "checkpatch"})
    rules = data.get("rules", {})
    if not isinstance(rules, dict):
        raise ConfigError(f"{path}: rules: expected a table", HINT)
    _only(path, "[rules]: ", rules, {"disable", "levels", "dirs"})
    levels = rules.get("levels", {})
    if not isinstance(levels, dict):
        raise ConfigError(f"{path}: [rules]: levels: expected a table of id = level", HINT)
    return Config(
        tuple(tree / d for d in _strings(path, "dirs", rules.get("dirs", []))),
        frozenset(_strings(path, "disable", rules.get("disable", []))),
        MappingProxyType({k: _level(f"{path}: [rules]: levels.{k}", v) for k, v in levels.items()}),
        _checkpatch_ignore(path, data.get("checkpatch", {})),
    )


def _checkpatch_ignore(path: Path, table: object) -> frozenset[str]:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: checkpatch: expected a table", HINT)
    _only(path, "[checkpatch]: ", table, {"ignore"})
    value = table.get("ignore", [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: [checkpatch]: ignore: expected a list of strings, got {value!r}", HINT)
    return _types(value)


def _only(path: Path, where: str, data: dict[str, Any], known: set[str]) -> None:
    for key in data:
        if key not in known:
            raise ConfigError(f"{path}: {where}unknown key {key!r}", HINT)


def _strings(path: Path, key: str, value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: [rules]: {key}: expected a list of strings, got {value!r}", HINT)
    return list(value)


def _level(key: str, value: object) -> Level:
    if value not in LEVELS:
        raise ConfigError(f"{key}: expected one of {', '.join(LEVELS)}, got {value!r}", HINT)
    return Level(str(value))


def validate_ids(config: Config, known: Iterable[str]) -> None:
    """Every id the config names is a known rule or check (a `rule/requirement` counts by its rule)."""
    ids = set(known)
    levels = ((k, f"{k}.level" if "/" in k else f"level.{k}") for k in sorted(config.levels))  # a key git can store
    for name, key in [*((d, "disable") for d in sorted(config.disable)), *levels]:
        if name.split("/", 1)[0] not in ids:
            raise ConfigError(f"reviewer.{key}: unknown rule or check {name!r}", "`review rules` lists the ids")


def run_stamp() -> str:
    """The name of one run's log directory: its start, UTC, the process id, and a count when
    one process makes several runs (the tests, `review pre-push` pushing several refs)."""
    n = next(_RUNS)
    return f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{os.getpid()}" + (f"-{n}" if n else "")


_RUNS = itertools.count()


def run_log_dir(config: Config, asked: Path | None, stamp: str) -> Path:
    """Where a run keeps its logs: --log-dir, else git config reviewer.logDir, else
    $XDG_STATE_HOME/reviewer/logs (~/.local/state/...); one subdirectory per run. Not created here:
    a stage creates it when it has a log to keep; the old runs' directories beside it are pruned.
    A parent that cannot be made or written is a ConfigError, before the stage runs anything."""
    parent = asked or config.log_dir or dirs.state_root() / "logs"
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"log directory {parent}: cannot create it: {exc.strerror}", _LOG_HINT) from exc
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"log directory {parent}: not writable", _LOG_HINT)
    prune_runs(parent)
    return parent / stamp


_LOG_HINT = "point --log-dir (or git config reviewer.logDir) at a writable directory"


LOG_DAYS = 30  # run log directories older than this are removed when a new run keeps logs
_STAMP = re.compile(r"^\d{8}T\d{6}Z-\d+(-\d+)?$")


def prune_runs(parent: Path, days: float = LOG_DAYS) -> list[Path]:
    """Remove the run directories (and only those: <UTC time>-<pid> names) in PARENT older than DAYS."""
    cutoff = time.time() - days * 86400
    gone = []
    with contextlib.suppress(OSError):
        for old in (p for p in parent.iterdir() if _STAMP.match(p.name) and p.is_dir() and p.stat().st_mtime < cutoff):
            shutil.rmtree(old, ignore_errors=True)
            gone.append(old)
    return gone


def apply(config: Config, findings: Iterable[Finding]) -> list[Finding]:
    """Drop the disabled findings and re-level the rest; `rule/req` settings beat `rule` ones."""
    out = []
    for found in findings:
        rule = found.rule.split("/", 1)[0]
        if found.rule in config.disable or rule in config.disable:
            continue
        level = config.levels.get(found.rule) or config.levels.get(rule)
        out.append(replace(found, level=level) if level is not None else found)
    return out
