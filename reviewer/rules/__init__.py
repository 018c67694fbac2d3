"""Declarative rules: rules/<id>.toml files (schema.py loads them, engine.py evaluates them).

rules/README.md documents the schema. The shipped rules live in the repository's rules/
directory; a built wheel carries a copy as package data, reviewer/rules/shipped/ (setup.py).
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from reviewer.rules.engine import evaluate
from reviewer.rules.schema import Condition, Requirement, Rule, load_rule, load_rules


def _shipped_dir() -> Path:
    """The wheel's copy of the shipped rules, else (an editable install, a clone) the clone's rules/."""
    here = Path(str(resources.files(__name__)))
    packaged = here / "shipped"
    return packaged if packaged.is_dir() else here.parents[1] / "rules"


RULES_DIR = _shipped_dir()

__all__ = ["RULES_DIR", "Condition", "Requirement", "Rule", "evaluate", "load_rule", "load_rules"]
