"""In-kernel tests: build base and patched kernels, boot them under QEMU, compare (issue 8).

    relevant(touched, tree) -> [(InTest, why)]       what would run, for the report
    run_intests(base_wt, patched_wt, touched, ...)   build, boot and compare -> Outcome
"""
from __future__ import annotations

from reviewer.boot.intests import InTest, describe, relevant
from reviewer.boot.runner import Outcome, run_intests

__all__ = ["InTest", "Outcome", "describe", "relevant", "run_intests"]
