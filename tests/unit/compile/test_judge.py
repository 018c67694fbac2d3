"""What a target's steps say about the series (reviewer/compile/judge.py), on hand-made steps (no build)."""
from __future__ import annotations

from reviewer.compile import judge
from reviewer.compile.diag import Diagnostic
from reviewer.compile.steps import Step, TargetBuild
from reviewer.compile.vdso import Image
from reviewer.kernel.arches import BY_NAME, Arch
from reviewer.model import Finding, Level

X86, PPC64, PPC32 = BY_NAME["x86_64"], BY_NAME["ppc64le"], BY_NAME["ppc32"]
UNUSED = "unused variable 'tmp' [-Wunused-variable]"
VDSO = "arch/x86/entry/vdso/vdso64.so.dbg"
BASE_EXPORTS = ("__vdso_clock_gettime@@LINUX_2.6", "__vdso_getcpu@@LINUX_2.6", "__vdso_time@@LINUX_2.6")


def _w(path: str, line: int, text: str = UNUSED) -> Diagnostic:
    return Diagnostic(path, line, "warning", text, f"{path}:{line}:6: warning: {text}")


def _e(path: str, line: int, text: str) -> Diagnostic:
    return Diagnostic(path, line, "error", text, f"{path}:{line}:9: error: {text}")


def _built(index: int, *diags: Diagnostic, images: tuple[Image, ...] = ()) -> Step:
    return Step(index, "built", 1.0, ("mm/a.o",), "", diags, images)


def _failed(index: int, *diags: Diagnostic) -> Step:
    first = next((d.quote for d in diags if d.kind == "error"), "make: *** [mm/a.o] Error 1")
    return Step(index, "failed", 1.0, ("mm/a.o",), first, diags)


def _judge(*steps: Step, touched: tuple[str, ...] = ("mm/a.c",), target: Arch = X86) -> list[Finding]:
    return judge.findings(TargetBuild(target, steps), touched, len(steps) - 1)


def _brief(found: list[Finding]) -> list[tuple[str, Level, int | None]]:
    return [(f.rule, f.level, f.patch) for f in found]


def test_a_new_warning_is_reported_once_on_the_patch_that_adds_it() -> None:
    found = _judge(_built(0), _built(1), _built(2, _w("mm/a.c", 10)), _built(3, _w("mm/a.c", 14)))  # 3/3 moves it
    assert _brief(found) == [("build/warning", Level.WARNING, 2)]
    [f] = found
    assert (f.path, f.line, f.quote) == ("mm/a.c", 10, (f"mm/a.c:10:6: warning: {UNUSED}",))
    assert UNUSED in f.message and "x86_64" in f.message


def test_a_warning_of_the_base_is_not_the_series() -> None:
    assert _judge(_built(0, _w("mm/a.c", 10)), _built(1, _w("mm/a.c", 30)), _built(2, _w("mm/a.c", 31))) == []


def test_a_second_copy_is_new_even_after_several_steps_printed_the_first() -> None:
    # Every step compiles all the series' objects, so 1/3's warning is printed again by 2/3;
    # 3/3 adds a second copy in the same file: that one is 3/3's.
    found = _judge(_built(0), _built(1, _w("mm/a.c", 10)), _built(2, _w("mm/a.c", 10)),
                   _built(3, _w("mm/a.c", 10), _w("mm/a.c", 40)))
    assert _brief(found) == [("build/warning", Level.WARNING, 1), ("build/warning", Level.WARNING, 3)]
    assert found[1].line == 40


def test_skipped_and_timed_out_steps_report_no_diagnostics() -> None:
    # A timed-out step's half log says nothing about the patch; the timeout itself is one warning.
    steps = (_built(0), Step(1, "skipped", detail="changes nothing x86_64 compiles"),
             Step(2, "timeout", diagnostics=(_w("mm/a.c", 3), _e("mm/a.c", 4, "boom"))), _built(3, _w("mm/a.c", 10)))
    found = _judge(*steps)
    assert _brief(found) == [("build/warning", Level.WARNING, 3), ("build/timeout", Level.WARNING, None)]
    assert "2/3" in found[1].message and "1/3" not in found[1].message


def test_a_patch_that_breaks_the_build_and_the_next_repairs() -> None:
    err = _e("mm/a.c", 12, "'tmp' undeclared (first use in this function)")
    found = _judge(_built(0), _built(1), _failed(2, err), _built(3))
    assert _brief(found) == [("build/error", Level.ERROR, 2)]
    [f] = found
    assert (f.path, f.line, f.quote) == ("mm/a.c", 12, (err.quote,))
    assert "patch 2/3" in f.message and "mm/a.c:12: 'tmp' undeclared" in f.message
    assert "3/3 builds again" in f.message


def test_two_patches_failing_with_the_same_error_are_one_finding() -> None:
    found = _judge(_built(0), _built(1), _failed(2, _e("mm/a.c", 12, "expected ';' before '}' token")),
                   _failed(3, _e("mm/a.c", 15, "expected ';' before '}' token")))  # moved by 3/3: the same error
    assert _brief(found) == [("build/error", Level.ERROR, 2)]
    assert "still failing at 3/3" in found[0].message


def test_a_failure_that_lasts_two_patches_then_builds() -> None:
    e = _e("mm/a.c", 12, "expected ';' before '}' token")
    found = _judge(_built(0), _failed(1, e), _failed(2, e), _failed(3, e), _built(4))
    assert _brief(found) == [("build/error", Level.ERROR, 1)]
    assert "patches 2/4, 3/4 still fail; 4/4 builds again" in found[0].message


def test_a_different_error_on_a_still_failing_step_is_new() -> None:
    e1, e2 = _e("mm/a.c", 12, "expected ';' before '}' token"), _e("mm/b.c", 3, "'y' undeclared (first use in this function)")
    found = _judge(_built(0), _failed(1, e1), _failed(2, e1, e2))
    assert _brief(found) == [("build/error", Level.ERROR, 1), ("build/error", Level.ERROR, 2)]
    assert found[1].path == "mm/b.c" and found[1].line == 3


def test_a_failure_without_a_compiler_line_names_makes_error() -> None:
    found = _judge(_built(0), Step(1, "failed", 1.0, ("mm/a.o",), "No rule to make target 'mm/a.o'.  Stop."))
    assert _brief(found) == [("build/error", Level.ERROR, 1)]
    assert "No rule to make target 'mm/a.o'" in found[0].message and found[0].path is None


def test_a_failing_base_is_an_info_and_the_patches_are_compared_with_it() -> None:
    old = _e("mm/a.c", 5, "'x' undeclared (first use in this function)")
    new = _e("mm/b.c", 3, "expected ';' before '}' token")
    base = Step(0, "failed", 1.0, ("mm/a.o",), old.quote, (old,))
    found = _judge(base, _failed(1, _e("mm/a.c", 8, old.text)), _failed(2, _e("mm/a.c", 8, old.text), new))
    assert _brief(found) == [("build/base", Level.INFO, None), ("build/error", Level.ERROR, 2)]
    assert "x86_64" in found[0].message
    assert found[1].path == "mm/b.c"


def test_a_base_that_does_not_build_is_one_info_naming_the_configuration_and_its_first_error() -> None:
    # The review's own limitation (our configuration, our goals), never an error on the series: a patch
    # failing on what the base failed on is not judged, even after a patch that built.
    asm = Diagnostic("", None, "error", "assembler: instruction address is not a multiple of 4 (building "
                                        "arch/powerpc/kernel/asm-offsets.o)",
                     "as: Error: instruction address is not a multiple of 4")
    base = Step(0, "failed", 1.0, ("arch/powerpc/kernel/asm-offsets.o",), asm.quote, (asm,))
    build = TargetBuild(PPC64, (base, Step(1, "failed", 1.0, base.goals, asm.quote, (asm,)), _built(2),
                                Step(3, "failed", 1.0, base.goals, asm.quote, (asm,))),
                        config=("CONFIG_PPC64=y", "CONFIG_PPC_BOOK3S_64=y"))
    found = judge.findings(build, ("arch/powerpc/kernel/asm-offsets.c",), 3)
    assert _brief(found) == [("build/base", Level.INFO, None)]
    (info,) = found
    assert info.message.startswith("the base does not build for ppc64le in this review's configuration (ARCH=powerpc "
                                   "CROSS_COMPILE=powerpc64le-linux-gnu- tinyconfig + CONFIG_PPC64=y CONFIG_PPC_BOOK3S_64=y): "
                                   "as: Error: instruction address is not a multiple of 4; a limitation of the review")
    assert "arch/powerpc/kernel/asm-offsets.o" in (info.hint or "")


def test_a_patch_failing_without_compiler_lines_where_the_base_failed_alike_is_not_judged() -> None:
    make = "[scripts/Makefile.build:229: mm/a.o] Error 1"
    found = _judge(Step(0, "failed", 1.0, ("mm/a.o",), make), Step(1, "failed", 1.0, ("mm/a.o",), make.replace("229", "231")))
    assert _brief(found) == [("build/base", Level.INFO, None)]


def _img(*symbols: str, path: str = VDSO) -> Image:
    return Image(path, tuple(sorted(symbols)))


def test_a_vdso_export_lost_between_base_and_final() -> None:
    final = _img("__vdso_clock_gettime@@LINUX_2.6", "__vdso_getcpu@@LINUX_2.6")
    found = _judge(_built(0, images=(_img(*BASE_EXPORTS),)), _built(1, images=(_img(*BASE_EXPORTS),)), _built(2, images=(final,)),
                   touched=("arch/x86/entry/vdso/vdso.lds.S",))
    assert _brief(found) == [("build/vdso-export", Level.ERROR, 2)]
    [f] = found
    assert "__vdso_time" in f.message and VDSO in f.message
    assert f.quote == final.symbols


def test_an_export_lost_is_the_patch_that_lost_it() -> None:
    lost = _img("__vdso_clock_gettime@@LINUX_2.6", "__vdso_getcpu@@LINUX_2.6")
    found = _judge(_built(0, images=(_img(*BASE_EXPORTS),)), _built(1, images=(lost,)), _built(2, images=(lost,)),
                   touched=("arch/x86/entry/vdso/vdso.lds.S",))
    assert _brief(found) == [("build/vdso-export", Level.ERROR, 1)]
    # Every function gone: the quote says so rather than being empty.
    found = _judge(_built(0, images=(_img(*BASE_EXPORTS),)), _built(1, images=(_img(),)), touched=("arch/x86/entry/vdso/vdso.lds.S",))
    assert _brief(found) == [("build/vdso-export", Level.ERROR, 1)]
    assert all(n in found[0].message for n in ("__vdso_clock_gettime", "__vdso_getcpu", "__vdso_time")) and found[0].quote


def test_the_same_exports_are_no_finding() -> None:
    im = (_img(*BASE_EXPORTS),)
    assert _judge(_built(0, images=im), _built(1, images=im), touched=("arch/x86/entry/vdso/vdso.lds.S",)) == []
    # A new image (the base had none at that path) loses nothing.
    assert _judge(_built(0), _built(1, images=im), touched=("arch/x86/entry/vdso/vdso.lds.S",)) == []


GETRANDOM = ("arch/x86/include/asm/vdso/getrandom.h", "arch/x86/entry/vdso/vgetrandom.c", "arch/x86/entry/vdso/vdso.lds.S")


def test_getrandom_added_without_the_export_is_an_error() -> None:
    im = (_img(*BASE_EXPORTS),)
    found = _judge(_built(0, images=im), _built(1, images=im), touched=GETRANDOM)
    assert _brief(found) == [("build/vdso-export", Level.ERROR, None)]
    assert "__vdso_getrandom" in found[0].message and VDSO in found[0].message
    assert found[0].quote == BASE_EXPORTS  # the symbol table, quoted


def test_getrandom_added_with_the_export_is_no_finding() -> None:
    base = (_img(*BASE_EXPORTS),)
    final = (_img(*BASE_EXPORTS, "__vdso_getrandom@@LINUX_2.6"),)
    assert _judge(_built(0, images=base), _built(1, images=final), touched=GETRANDOM) == []
    # powerpc's name for it, in one of its two images
    ppc = (_img("__kernel_time@@LINUX_2.6.15", path="arch/powerpc/kernel/vdso/vdso64.so.dbg"),
           _img("__kernel_getrandom@@LINUX_2.6.15", "__kernel_time@@LINUX_2.6.15", path="arch/powerpc/kernel/vdso/vdso32.so.dbg"))
    assert _judge(_built(0), _built(1, images=ppc), touched=("arch/powerpc/include/asm/vdso/getrandom.h",), target=PPC64) == []


def test_getrandom_of_another_arch_is_not_this_targets() -> None:
    im = (_img(*BASE_EXPORTS),)
    assert _judge(_built(0, images=im), _built(1, images=im), touched=("arch/powerpc/include/asm/vdso/getrandom.h",)) == []


def test_the_base_vdso_is_not_judged_as_the_series() -> None:
    # 1/1 adds getrandom() and does not build: its build error is the finding, not the base's vDSO
    # (the only one built) lacking the export.
    im = (_img(*BASE_EXPORTS),)
    found = _judge(_built(0, images=im), _failed(1, _e("arch/x86/entry/vdso/vgetrandom.c", 3, "expected ';' before '}' token")),
                   touched=GETRANDOM)
    assert _brief(found) == [("build/error", Level.ERROR, 1)]


def test_no_steps_no_findings() -> None:
    assert judge.findings(TargetBuild(X86, problem="gcc not installed"), ("mm/a.c",), 1) == []


def test_exported() -> None:
    no = (_img(*BASE_EXPORTS),)
    yes = (_img(*BASE_EXPORTS, "__vdso_getrandom@@LINUX_2.6"),)
    x86 = TargetBuild(X86, (_built(0, images=no), _built(1, images=yes), _built(2, images=no)))  # the last built step counts
    ppc64 = TargetBuild(PPC64, (_built(0), _built(1, images=(_img("__kernel_getrandom@@LINUX_2.6.15"),))))
    ppc32 = TargetBuild(PPC32, (_built(0), _built(1, images=(_img("__kernel_time@@LINUX_2.6.15"),))))
    loong = TargetBuild(BY_NAME["loongarch"], (_built(0), _built(1)))  # no vDSO built: no say
    assert judge.exported([x86, ppc32, ppc64, loong]) == {"x86": False, "powerpc": True}
    assert judge.exported([ppc32]) == {"powerpc": False}
    assert judge.exported([TargetBuild(X86, (_built(0, images=no), _built(1, images=yes), _failed(2)))]) == {"x86": True}


def test_exported_ignores_a_vdso_only_the_base_built() -> None:
    # Every patch failed: the base's vDSO says nothing about the series (the regex check stays).
    tb = TargetBuild(X86, (_built(0, images=(_img(*BASE_EXPORTS),)), _failed(1)))
    assert judge.exported([tb]) == {}
