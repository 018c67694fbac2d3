"""git config [reviewer] + .reviewer.toml in the kernel tree -> a frozen Config, validated up front.

    git config --add reviewer.rules ~/my-rules        extra rule directories (multi-valued)
    git config --add reviewer.disable subject-format  rule or check ids to drop (multi-valued)
    git config reviewer.level.changelog info          a new level for a rule, check or rule/requirement

    # .reviewer.toml at the top of the kernel tree
    [rules]
    disable = ["cover-letter"]
    levels = { "maintainers-coverage" = "info" }
    dirs = ["tools/reviewer-rules"]                  # relative to the tree
    [checkpatch]
    ignore = ["LONG_LINE", "FILE_PATH_CHANGES"]      # checkpatch.pl types never reported

    git config --add reviewer.checkpatchIgnore LONG_LINE,CAMELCASE   (multi-valued, commas too)

Both sources are merged (git config last, so a user overrides the tree); every error is a
ConfigError that names the key.
"""
from __future__ import annotations

import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from reviewer.errors import ConfigError
from reviewer.model import Finding, Level
from reviewer.proc import run

TREE_FILE = ".reviewer.toml"
LEVELS = tuple(lv.value for lv in Level)
HINT = "see `git config --get-regexp '^reviewer\\.'` and the .reviewer.toml of the kernel tree"


@dataclass(frozen=True)
class Config:
    rule_dirs: tuple[Path, ...] = ()
    disable: frozenset[str] = frozenset()
    levels: Mapping[str, Level] = field(default_factory=lambda: MappingProxyType({}))
    checkpatch_ignore: frozenset[str] = frozenset()  # checkpatch.pl types, upper case
    reuse_worktrees: bool = False  # git config reviewer.reuseWorktrees: keep worktrees in the cache


def load(cwd: Path, tree: Path | None = None) -> Config:
    """The merged configuration: the tree's .reviewer.toml, the tree's git config, then git config in CWD."""
    base = from_toml(tree / TREE_FILE, tree) if tree is not None and (tree / TREE_FILE).is_file() else Config()
    if tree is not None and tree.resolve() != cwd.resolve():
        base = merge(base, from_git(tree))
    return merge(base, from_git(cwd))


def merge(first: Config, second: Config) -> Config:
    return Config(tuple(dict.fromkeys(first.rule_dirs + second.rule_dirs)), first.disable | second.disable,
                  MappingProxyType({**first.levels, **second.levels}), first.checkpatch_ignore | second.checkpatch_ignore,
                  first.reuse_worktrees or second.reuse_worktrees)


def from_git(cwd: Path) -> Config:
    dirs = _git_all(cwd, "reviewer.rules")
    disable = _git_all(cwd, "reviewer.disable")
    levels = {}
    for key, value in _git_regexp(cwd, r"^reviewer\.level\."):
        levels[key.removeprefix("reviewer.level.")] = _level(key, value)
    ignore = _types(_git_all(cwd, "reviewer.checkpatchIgnore"))
    reuse = _git_bool(cwd, "reviewer.reuseWorktrees")
    return Config(tuple(Path(d).expanduser() for d in dirs), frozenset(disable), MappingProxyType(levels), ignore, reuse)


def _git_bool(cwd: Path, key: str) -> bool:
    done = run(["git", "-C", str(cwd), "config", "--type=bool", "--get", key], check=False)
    if done.returncode == 128 or (done.returncode == 1 and done.stderr.strip()):
        raise ConfigError(f"{key}: expected a boolean (true/false)", HINT)
    return done.stdout.strip() == "true"


def _types(values: Iterable[str]) -> frozenset[str]:
    """checkpatch types as its --ignore takes them: comma-separated, any case."""
    return frozenset(t.strip().upper() for v in values for t in v.split(",") if t.strip())


def _git_all(cwd: Path, key: str) -> list[str]:
    """`git config --get-all KEY`: exit 1 means unset."""
    done = run(["git", "config", "--get-all", key], cwd=cwd, check=False)
    if done.returncode not in (0, 1):
        raise ConfigError(f"git config {key}: {done.stderr.strip()}", HINT)
    return [v for v in done.stdout.splitlines() if v]


def _git_regexp(cwd: Path, pattern: str) -> Iterator[tuple[str, str]]:
    done = run(["git", "config", "--get-regexp", pattern], cwd=cwd, check=False)
    if done.returncode not in (0, 1):
        raise ConfigError(f"git config {pattern}: {done.stderr.strip()}", HINT)
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        yield key, value


def from_toml(path: Path, tree: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it: {exc}", HINT) from exc
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
    for name, key in [*((d, "disable") for d in sorted(config.disable)), *((k, f"level.{k}") for k in sorted(config.levels))]:
        if name.split("/", 1)[0] not in ids:
            raise ConfigError(f"reviewer.{key}: unknown rule or check {name!r}", "`review rules` lists the ids")


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
