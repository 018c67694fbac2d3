"""Declarative rules: rules/<id>.toml files (schema.py loads them, engine.py evaluates them).

rules/README.md documents the schema; the shipped rules live in the repository's rules/ directory.
"""
from __future__ import annotations

from pathlib import Path

import reviewer
from reviewer.rules.engine import evaluate
from reviewer.rules.schema import Condition, Requirement, Rule, load_rule, load_rules

RULES_DIR = Path(reviewer.__file__).parent.parent / "rules"

__all__ = ["RULES_DIR", "Condition", "Requirement", "Rule", "evaluate", "load_rule", "load_rules"]
