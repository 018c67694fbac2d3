"""The build stage's place in the pipeline: where the vDSO was built, its symbol table decides the
vDSO rule's export requirement, and the linker-script regex (the fallback) says nothing more."""
from __future__ import annotations

from reviewer.model import Finding, Level
from reviewer.pipeline import _replace_lds_regex

LDS = "vdso-getrandom-new-arch/lds-export"


def _regex(arch: str) -> Finding:
    return Finding(LDS, Level.ERROR, f"no vDSO linker script under arch/{arch} (vdso.lds.S, vdso64.lds.S, ...) exports __vdso_getrandom")


def test_the_regex_finding_goes_where_the_vdso_was_built_and_stays_elsewhere() -> None:
    other = Finding("vdso-getrandom-new-arch/kconfig-select", Level.ERROR, "arch/loongarch/Kconfig does not select VDSO_GETRANDOM")
    found = [_regex("loongarch"), _regex("powerpc"), other]
    assert _replace_lds_regex(found, {"loongarch": True}) == [_regex("powerpc"), other]
    assert _replace_lds_regex(found, {"loongarch": False, "powerpc": True}) == [other]  # the build's own finding says it
    assert _replace_lds_regex(found, {}) == found


def test_an_arch_whose_name_starts_another_is_not_confused() -> None:
    assert _replace_lds_regex([_regex("arm64")], {"arm": True}) == [_regex("arm64")]
