"""Python-coded checks, for what a declarative rule cannot say. An explicit registry:
adding a check means adding a module here and one line to CHECKS."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from reviewer.checks import author_signoff, patch_encoding, series_complete
from reviewer.model import Finding, Level, Series


@dataclass(frozen=True)
class Check:
    id: str
    level: Level
    doc: str
    run: Callable[[Series], Iterator[Finding]]


def _check(module: object) -> Check:
    return Check(module.ID, module.LEVEL, (module.__doc__ or "").strip(), module.check)  # type: ignore[attr-defined]


CHECKS: dict[str, Check] = {c.id: c for c in map(_check, (series_complete, author_signoff, patch_encoding))}
