"""In-kernel tests: build base and patched kernels, boot them under QEMU, compare (issue 8).

    relevant(touched, tree, extra) -> [(InTest, why)]  what would run, for the report
    from_rules(rules, patches) -> [InTest]            the tests that triggered rules name (extra=)
    run_intests(base_wt, patched_wt, touched, ...)   build, boot and compare -> Outcome
"""
from __future__ import annotations

from reviewer.boot.intests import InTest, describe, from_rules, relevant
from reviewer.boot.runner import Outcome, run_intests

__all__ = ["InTest", "Outcome", "describe", "from_rules", "relevant", "run_intests"]
