"""Python-coded checks, for what a declarative rule cannot say. An explicit registry:
adding a check means adding a module here and one line to CHECKS.

A check module has `ID`, `LEVEL`, a docstring (what, why, PASS, FAIL) and
`check(series)` or `check(series, base)`, where `base` is the tree the series applies to
(`reviewer.rules.BaseTree`) or None. A finding's `rule` is "" or a sub-id ("length");
`LEVELS = {"length": Level.INFO}` gives a sub-id its own level. `run_checks` stamps
`<ID>[/<sub-id>]` and the level: the check never decides its own id or level.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import ModuleType

from reviewer.checks import (
    attestation,
    author_signoff,
    base_commit,
    change_id,
    changelog,
    cover_letter,
    doc_toctree,
    dropped_trailers,
    fixes_tag,
    kconfig_symbol_exists,
    kconfig_symbol_removed,
    maintainers_coverage,
    patch_encoding,
    selftest_registered,
    series_complete,
    source_file_built,
    spdx_header,
    subject_format,
    syscall_cond,
)
from reviewer.model import Finding, Level, Series
from reviewer.tree.base import BaseTree

Runner = Callable[[Series, BaseTree | None], Iterator[Finding]]


@dataclass(frozen=True)
class Check:
    id: str
    level: Level
    doc: str
    check: Runner
    levels: Mapping[str, Level] = field(default_factory=dict)

    def findings(self, series: Series, base: BaseTree | None = None) -> Iterator[Finding]:
        """The check's findings with their final rule ids and levels."""
        for found in self.check(series, base):
            sub = found.rule
            yield replace(found, rule=f"{self.id}/{sub}" if sub else self.id, level=self.levels.get(sub, self.level))


def _check(module: ModuleType) -> Check:
    fn = module.check
    takes_base = len(inspect.signature(fn).parameters) > 1
    runner: Runner = fn if takes_base else (lambda series, _base: fn(series))
    doc = (module.__doc__ or "").strip()
    return Check(module.ID, module.LEVEL, doc, runner, dict(getattr(module, "LEVELS", {})))


CHECKS: dict[str, Check] = {c.id: c for c in map(_check, (
    series_complete, author_signoff, patch_encoding, fixes_tag, subject_format, change_id, changelog,
    cover_letter, base_commit, spdx_header, kconfig_symbol_exists, kconfig_symbol_removed, selftest_registered, doc_toctree,
    maintainers_coverage, attestation, dropped_trailers, source_file_built, syscall_cond,
))}


# Checks that judge a commit message written for `git am`: a pull request's commits were signed
# off and described in the sender's tree, and its mail is not a commit message.
MESSAGE_CHECKS = frozenset({"author-signoff", "fixes-tag", "subject-format", "change-id", "changelog"})


def run_checks(series: Series, base: BaseTree | None = None) -> Iterator[Finding]:
    """Every registered check, in registry order, with final ids and levels."""
    for check in CHECKS.values():
        if series.pull_request is None or check.id not in MESSAGE_CHECKS:
            yield from check.findings(series, base)
