"""What `review rules` shows: the rules and checks as plain text, and a rule directory's validation."""
from __future__ import annotations

import textwrap
from collections.abc import Iterable
from pathlib import Path

from reviewer import config
from reviewer.checks import CHECKS, Check
from reviewer.errors import ConfigError
from reviewer.rules import RULES_DIR, Rule, load_rules
from reviewer.rules.schema import Example, check_examples


def list_rules(rule_dirs: Iterable[Path] = ()) -> str:
    """Every declarative rule (shipped, then RULE_DIRS) and every Python check: id, level, summary, why, examples."""

    for d in rule_dirs:
        config.directory(Path(d), "--rules")
    rules = [r for d in (RULES_DIR, *rule_dirs) for r in load_rules(Path(d))]
    blocks = [_rule(r) for r in rules] + [_check(c) for c in CHECKS.values()]
    return "\n\n".join(blocks) + "\n"


def _rule(rule: Rule) -> str:
    lines = [f"{rule.id} [{rule.level}] (rule, {rule.source})", *_wrap("summary", rule.summary), *_wrap("why", rule.why)]
    for req in rule.requires:
        lines.append(f"  requires {rule.id}/{req.id} [{req.level or rule.level}]: {req.message}")
    if rule.selftests:
        lines.append(f"  selftests: {', '.join(rule.selftests)} (with --run-tests)")
    for t in rule.in_kernel_tests:
        extra = f" + {', '.join(t.extra_config)}" if t.extra_config else ""
        lines.append(f"  in-kernel test {t.name} ({t.kind}, CONFIG_{t.config}=y{extra}{', ' + t.source if t.source else ''}; with --boot)")
    for example in rule.examples:
        lines.append(f"  example {example.name}{_shape(example)}: expect {', '.join(example.expect) or 'nothing'}")
    return "\n".join(lines)


def _shape(example: Example) -> str:
    """` (2 patches, a base tree of 3 files)`: what the example runs on (nothing: it is only shown)."""
    if not example.patches:
        return ""
    patches = f"{len(example.patches)} patch{'es' if len(example.patches) > 1 else ''}"
    tree = "no base tree" if example.tree is None else f"a base tree of {len(example.tree)} file{'s' if len(example.tree) != 1 else ''}"
    return f" ({patches}, {tree})"


def _check(check: Check) -> str:
    summary, _, rest = check.doc.partition("\n")
    lines = [f"{check.id} [{check.level}] (check)", *_wrap("summary", summary)]
    lines += ["  " + ln if ln else "" for ln in rest.strip().splitlines()]
    lines += [f"  level {check.id}/{sub}: {level}" for sub, level in check.levels.items()]
    return "\n".join(lines)


def _wrap(label: str, text: str) -> list[str]:
    return textwrap.wrap(" ".join(text.split()), 100, initial_indent=f"  {label}: ", subsequent_indent="    ")


def check_rules_dir(path: Path) -> list[str]:
    """Validate every rule in PATH: one `<file>: ok (<id>, N requirements)` line each; ConfigError names the file and key."""
    if not path.is_dir():
        raise ConfigError(f"{path}: not a directory of rules", "give a directory of <id>.toml files")
    rules = load_rules(path)
    taken = {c for c in CHECKS}
    for rule in rules:
        if rule.id in taken:
            raise ConfigError(f"{rule.source}: id {rule.id!r} is already a Python check", "pick another id")
        check_examples(rule)
    return [f"{r.source}: ok ({r.id}, {len(r.requires)} requirements)" for r in rules]
