"""Load and validate declarative rules (rules/<id>.toml, schema 1; rules/README.md documents it).

Every error is a ConfigError that names the file, the table and the key, so a rule author can
fix a rule without reading this module.
"""
from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from reviewer.errors import ConfigError, InputError
from reviewer.model import Change, Level
from reviewer.series.patchparse import parse_diff

SCHEMA = 1
# `{arch}` in a requirement: a capture from the trigger. Only identifiers, so `{2,3}` stays a quantifier.
PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}")
CHANGES = ("any", *(c.value for c in Change))
FILE_STATES = ("added", "present", "symlink")
SCOPES = ("series", "patch")
# In-kernel tests (reviewer.boot): how the console is read. kunit: the KTAP KUnit prints; dmapool:
# dmapool_test's per-size `time:` lines (mm/dmapool_test.c), compared base vs patched.
TEST_KINDS = ("kunit", "dmapool")
_SYMBOL = re.compile(r"^[A-Z0-9_]+$")
_TEST_NAME = re.compile(r"^[\w.-]+$")
HINT = "see rules/README.md for the rule schema"
_GIT_DIFF = re.compile(r"^diff --git a/\S", re.MULTILINE)


@dataclass(frozen=True)
class Condition:
    """One trigger condition; it matches a file change (or, with only `message`, a patch)."""

    path: re.Pattern[str] | None
    change: str = "any"
    added_line: re.Pattern[str] | None = None
    removed_line: re.Pattern[str] | None = None
    message: re.Pattern[str] | None = None


@dataclass(frozen=True)
class Requirement:
    """What a triggered rule needs; regexes are templates until the trigger's captures fill them."""

    id: str
    path: str
    message: str
    added_line: str | None = None
    removed_line: str | None = None
    file: str | None = None
    or_in_base: bool = False
    level: Level | None = None
    hint: str | None = None
    bisect: bool = True
    # The requirement holds only for base trees with a path matching this (an anchored regex):
    # the tree's own convention, e.g. `^tools/arch/[^/]+/vdso$` (6.11's symlinks; 6.12 has none).
    applies_if_base_has: re.Pattern[str] | None = None
    applies_if_series_has: re.Pattern[str] | None = None  # the same, for the paths the series changes
    # Other names a captured value goes by in the lines this requirement reads, per capture:
    # {"arch": {"s390": ("s390x",), "arm64": ("aarch64",)}}: `{arch}` in added_line then matches any.
    aliases: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)


@dataclass(frozen=True)
class InKernelTest:
    """A test built into the kernel and run while it boots (`review --boot`), named by a rule."""

    name: str  # the KUnit suite's name (its struct kunit_suite .name), or the test's own name
    kind: str  # kunit | dmapool: how its results are read from the console
    config: str  # the Kconfig symbol that builds it, without CONFIG_
    extra_config: tuple[str, ...] = ()  # more symbols it needs (=y); "!X" turns X off
    source: str = ""  # where the test lives, for the report


@dataclass(frozen=True)
class Example:
    """A series the rule is shown (and, in tests/rules/test_examples.py, checked) on."""

    name: str
    expect: tuple[str, ...]  # the `rule/requirement` id of each finding, at its own level; () = none
    patches: tuple[str, ...] = ()  # one diff per patch, in series order; none: only shown, not run
    tree: Mapping[str, str] | None = None  # the base tree's files (path -> text); None: no base tree


@dataclass(frozen=True)
class Rule:
    id: str
    level: Level
    summary: str
    why: str
    source: str
    scope: str = "series"
    references: tuple[str, ...] = ()
    any_of: tuple[Condition, ...] = ()
    all_of: tuple[Condition, ...] = ()
    requires: tuple[Requirement, ...] = ()
    selftests: tuple[str, ...] = ()
    examples: tuple[Example, ...] = ()
    in_kernel_tests: tuple[InKernelTest, ...] = ()

    @property
    def captures(self) -> frozenset[str]:
        """The names a requirement may use as `{name}`."""
        pats = [p for c in (*self.any_of, *self.all_of) for p in (c.path, c.added_line, c.removed_line, c.message) if p]
        return frozenset(name for p in pats for name in p.groupindex)


class _Table:
    """A TOML table being validated: typed getters that name the key, and a check for leftovers."""

    def __init__(self, where: str, data: object) -> None:
        self.where = where
        if not isinstance(data, dict):
            self.fail(f"expected a table, got {type(data).__name__}")
        self.data: dict[str, Any] = data
        self.seen: set[str] = set()

    def fail(self, text: str, key: str | None = None) -> NoReturn:
        where = f"{self.where}: {key}" if key else self.where
        raise ConfigError(f"{where}: {text}", HINT)

    def get(self, key: str, kind: type, default: Any = None, *, required: bool = False) -> Any:
        self.seen.add(key)
        if key not in self.data:
            if required:
                self.fail("missing required key", key)
            return default
        value = self.data[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            self.fail(f"expected {_kind(kind)}, got {_kind(type(value))} {value!r}", key)
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str:
        value: str = self.get(key, str, default, required=default is None)
        if value not in choices:
            self.fail(f"expected one of {', '.join(choices)}, got {value!r}", key)
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value: list[Any] = self.get(key, list, [])
        for item in value:
            if not isinstance(item, str):
                self.fail(f"expected a list of strings, got {item!r} in it", key)
        return tuple(value)

    def tables(self, key: str) -> list[Any]:
        return list(self.get(key, list, []))

    def regex(self, key: str, *, required: bool = False) -> re.Pattern[str] | None:
        text: str | None = self.get(key, str, required=required)
        return None if text is None else self.compile(key, text)

    def compile(self, key: str, text: str) -> re.Pattern[str]:
        try:
            return re.compile(text)
        except re.error as exc:
            self.fail(f"invalid regex: {exc}", key)

    def done(self) -> None:
        for key in self.data:
            if key not in self.seen:
                self.fail(f"unknown key {key!r}")


def load_rules(directory: Path) -> tuple[Rule, ...]:
    """Every rules/*.toml in DIRECTORY, in file-name order; none if the directory is absent."""
    if not directory.is_dir():
        return ()
    return tuple(load_rule(p) for p in sorted(directory.glob("*.toml")))


def load_rule(path: Path) -> Rule:
    name = _display(path)
    if not path.is_file():  # a FIFO named *.toml would be waited on forever
        raise ConfigError(f"{name}: not a regular file", HINT)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{name}: cannot read the rule: {exc}", HINT) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{name}: invalid TOML: {exc}", HINT) from exc
    except RecursionError as exc:  # tomllib parses nested arrays and tables recursively
        raise ConfigError(f"{name}: invalid TOML: arrays or tables nested too deeply", HINT) from exc
    return _rule(_Table(name, data), path.stem)


def _rule(top: _Table, stem: str) -> Rule:
    schema = top.get("schema", int, required=True)
    if schema != SCHEMA:
        top.fail(f"expected {SCHEMA}, got {schema!r}", "schema")
    rule_id: str = top.get("id", str, required=True)
    if rule_id != stem:
        top.fail(f"id {rule_id!r} does not match the file name {stem!r}")
    any_of, all_of = _trigger(_Table(f"{top.where}: [trigger]", top.get("trigger", dict, required=True)))
    rule = Rule(
        id=rule_id,
        level=Level(top.choice("level", tuple(lv.value for lv in Level))),
        summary=top.get("summary", str, required=True),
        why=top.get("why", str, required=True),
        source=top.where,
        scope=top.choice("scope", SCOPES, "series"),
        references=top.strings("references"),
        any_of=any_of,
        all_of=all_of,
        selftests=_selftests(top),
        examples=tuple(_example(_Table(f"{top.where}: [[example]] #{n}", t)) for n, t in enumerate(top.tables("example"), 1)),
        in_kernel_tests=_in_kernel_tests(top),
    )
    requires = tuple(_requirement(_Table(f"{top.where}: [[require]] #{n}", t), rule) for n, t in enumerate(top.tables("require"), 1))
    top.done()
    _unique(top, requires)
    _expected_ids(top, rule, requires)
    return replace(rule, requires=requires)


def _trigger(table: _Table) -> tuple[tuple[Condition, ...], tuple[Condition, ...]]:
    any_of = tuple(_conditions(table, "any_of"))
    all_of = tuple(_conditions(table, "all_of"))
    table.done()
    if not any_of and not all_of:
        table.fail("needs any_of or all_of (a non-empty list of conditions)")
    return any_of, all_of


def _conditions(table: _Table, key: str) -> Iterator[Condition]:
    for n, item in enumerate(table.tables(key), 1):
        cond = _Table(f"{table.where} {key} #{n}", item)
        found = Condition(
            path=cond.regex("path"),
            change=cond.choice("change", CHANGES, "any"),
            added_line=cond.regex("added_line"),
            removed_line=cond.regex("removed_line"),
            message=cond.regex("message"),
        )
        cond.done()
        if found.path is None and found.message is None:
            cond.fail("missing required key (a condition needs path, message or both)", "path")
        yield found


def _requirement(table: _Table, rule: Rule) -> Requirement:
    req_id: str = table.get("id", str, required=True)
    table.where = f"{table.where} ({req_id})"
    level = table.get("level", str)
    req = Requirement(
        id=req_id,
        path=_template(table, "path", rule, required=True) or "",
        message=_template(table, "message", rule, required=True, regex=False) or "",
        added_line=_template(table, "added_line", rule),
        removed_line=_template(table, "removed_line", rule),
        file=table.choice("file", FILE_STATES) if "file" in table.data else None,
        or_in_base=table.get("or_in_base", bool, False),
        level=Level(table.choice("level", tuple(lv.value for lv in Level))) if level is not None else None,
        hint=_template(table, "hint", rule, regex=False),
        bisect=table.get("bisect", bool, True),
        applies_if_base_has=table.regex("applies_if_base_has"),
        applies_if_series_has=table.regex("applies_if_series_has"),
        aliases=_aliases(table, rule),
    )
    table.done()
    _check_requirement(table, req)
    return req


def _aliases(table: _Table, rule: Rule) -> dict[str, dict[str, tuple[str, ...]]]:
    data = table.get("aliases", dict, {})
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for name, values in data.items():
        if name not in rule.captures:
            table.fail(f"{name!r} is not a capture of the trigger (known: {', '.join(sorted(rule.captures)) or 'none'})", "aliases")
        if not isinstance(values, dict) or not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in values.values()):
            table.fail(f"aliases.{name}: expected a table of value = [other names]", "aliases")
        out[name] = {value: tuple(others) for value, others in values.items()}
    return out


def _check_requirement(table: _Table, req: Requirement) -> None:
    given = [k for k in ("added_line", "removed_line", "file") if getattr(req, k) is not None]
    if len(given) != 1:
        table.fail(f"needs exactly one of added_line, removed_line, file; got {', '.join(given) or 'none'}")
    if req.or_in_base and req.removed_line is not None:
        table.fail("cannot be combined with removed_line (a base tree has no removed lines)", "or_in_base")


def _template(table: _Table, key: str, rule: Rule, *, required: bool = False, regex: bool = True) -> str | None:
    text: str | None = table.get(key, str, required=required)
    if text is None:
        return None
    for name in PLACEHOLDER.findall(text):
        if name not in rule.captures:
            known = ", ".join(sorted(rule.captures)) or "none"
            table.fail(f"unknown placeholder {{{name}}}; the trigger captures: {known}", key)
    if regex:
        table.compile(key, PLACEHOLDER.sub("x", text))
    return text


def _selftests(top: _Table) -> tuple[str, ...]:
    if "selftests" not in top.data:
        top.seen.add("selftests")
        return ()
    table = _Table(f"{top.where}: [selftests]", top.get("selftests", dict))
    run = table.strings("run")
    table.done()
    return run


def _in_kernel_tests(top: _Table) -> tuple[InKernelTest, ...]:
    tests = tuple(_in_kernel_test(_Table(f"{top.where}: [[in_kernel_test]] #{n}", t))
                  for n, t in enumerate(top.tables("in_kernel_test"), 1))
    names = [t.name for t in tests]
    for name in names:
        if names.count(name) > 1:
            top.fail(f"duplicate in-kernel test name {name!r}", "[[in_kernel_test]]")
    return tests


def _in_kernel_test(table: _Table) -> InKernelTest:
    name: str = table.get("name", str, required=True)
    if not _TEST_NAME.match(name):
        table.fail(f"expected a test or KUnit suite name (letters, digits, _ . -), got {name!r}", "name")
    table.where = f"{table.where} ({name})"
    test = InKernelTest(
        name=name,
        kind=table.choice("kind", TEST_KINDS),
        config=_symbol(table, "config", table.get("config", str, required=True)),
        extra_config=tuple(_symbol(table, "extra_config", s, negate=True) for s in table.strings("extra_config")),
        source=table.get("source", str, ""),
    )
    table.done()
    return test


def _symbol(table: _Table, key: str, text: str, *, negate: bool = False) -> str:
    """A Kconfig symbol as the kernel's Kconfig spells it (FOO_KUNIT_TEST); "!FOO" where NEGATE allows it."""
    bare = text[1:] if negate and text.startswith("!") else text
    if bare.startswith("CONFIG_"):
        table.fail(f"write the symbol without CONFIG_: {text.replace('CONFIG_', '', 1)!r}", key)
    if not _SYMBOL.match(bare):
        form = "SYMBOL or !SYMBOL" if negate else "SYMBOL"
        table.fail(f"expected a Kconfig symbol ({form}: upper case, digits, _), got {text!r}", key)
    return text


def _example(table: _Table) -> Example:
    example = Example(table.get("name", str, required=True), table.strings("expect"), _patches(table), _tree(table))
    table.done()
    if example.tree is not None and not example.patches:
        table.fail("a tree needs patches to apply to it", "tree")
    return example


def _patches(table: _Table) -> tuple[str, ...]:
    """Each a diff as git writes it. Only its shape is checked here: parsing costs ~1 ms a diff on
    every review, which never reads examples; check_examples parses them (`review rules --check`)."""
    patches = table.strings("patches")
    for n, diff in enumerate(patches, 1):
        if not _GIT_DIFF.search(diff):
            table.fail(f"#{n}: expected a diff as git writes it (`diff --git a/<path> b/<path>`, ---, +++, @@ hunks)", "patches")
    return patches


def check_examples(rule: Rule) -> None:
    """Parse every example's diffs; a damaged one is a ConfigError naming the file, the example and the patch."""

    for n, example in enumerate(rule.examples, 1):
        for m, diff in enumerate(example.patches, 1):
            try:
                files = parse_diff(diff, f"#{m}")
            except InputError as exc:
                raise ConfigError(f"{rule.source}: [[example]] #{n} ({example.name}): patches: {exc.message}", HINT) from exc
            if not files:
                raise ConfigError(f"{rule.source}: [[example]] #{n} ({example.name}): patches: #{m} changes no file", HINT)


def _tree(table: _Table) -> dict[str, str] | None:
    if "tree" not in table.data:
        table.seen.add("tree")
        return None
    files: dict[str, Any] = table.get("tree", dict)
    for path, text in files.items():
        parts = path.split("/")
        if path.startswith("/") or not all(parts) or ".." in parts or "." in parts:
            table.fail(f"{path!r}: expected a relative path (a/b/c, no ., .. or empty parts)", "tree")
        if not isinstance(text, str):
            table.fail(f"{path!r}: expected the file's text (a string), got {_kind(type(text))}", "tree")
    return dict(files)


def _expected_ids(top: _Table, rule: Rule, requires: tuple[Requirement, ...]) -> None:
    """An example expects findings of this rule: `<rule id>/<requirement id>`."""
    known = [f"{rule.id}/{req.id}" for req in requires]
    for n, example in enumerate(rule.examples, 1):
        for finding in example.expect:
            if finding not in known:
                top.fail(f"{finding!r} is not a finding of this rule (its findings: {', '.join(known) or 'none'})",
                         f"[[example]] #{n} ({example.name}): expect")


def _unique(top: _Table, requires: tuple[Requirement, ...]) -> None:
    ids = [r.id for r in requires]
    for req_id in ids:
        if ids.count(req_id) > 1:
            top.fail(f"duplicate requirement id {req_id!r}", "[[require]]")


def _kind(kind: type) -> str:
    return {str: "a string", int: "an integer", bool: "a boolean", list: "a list", dict: "a table"}.get(kind, kind.__name__)


def _display(path: Path) -> str:
    """rules/x.toml as the user would type it: relative to the working directory when possible."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
