"""In-kernel tests: build base and patched kernels, boot them under QEMU, compare (issue 8).

    relevant(touched, tree, extra) -> [(InTest, why)]  what would run, for the report
    from_rules(rules, patches) -> [InTest]            the tests that triggered rules name (extra=)
    run_intests(base_wt, patched_wt, touched, ...)   build, boot and compare -> BootResults
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reviewer.boot.intests import InTest, describe, from_rules, relevant

if TYPE_CHECKING:
    from reviewer.boot.runner import BootResults, run_intests


def __getattr__(name: str) -> Any:
    """The runner (builds, QEMU) is loaded when a boot really runs, not for the listing every review makes."""
    if name in ("BootResults", "run_intests"):
        from reviewer.boot import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["InTest", "BootResults", "describe", "from_rules", "relevant", "run_intests"]
