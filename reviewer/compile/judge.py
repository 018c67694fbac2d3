"""What the steps of a target's build say about the series: new warnings, errors, the vDSO's exports.

A warning is the patch's when no earlier step of the same target printed it (keys: diag.Diagnostic.key).
An error is the patch's when the step before it built; a step that fails as the one before it did
is the same fact (the first patch's finding says how long it lasted). A vDSO function the base
exported and a later step's image lacks, or a getrandom() the series adds without any image
exporting it, is an error quoting the symbol table.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from reviewer.compile import diag, vdso
from reviewer.compile.steps import Step, TargetBuild
from reviewer.model import Finding, Level

RULE = "build"
IDS = ("build/warning", "build/error", "build/base", "build/vdso-export", "build/toolchain", "build/config", "build/timeout")


def findings(tb: TargetBuild, touched: Sequence[str], total: int) -> list[Finding]:
    t = tb.target.name
    out: list[Finding] = []
    steps = list(tb.steps)
    if not steps:
        return out
    seen = list(steps[0].diagnostics)
    base = steps[0]
    if base.status == "failed":
        out.append(_base_limitation(tb))
    last_built: Step | None = base if base.status == "built" else None
    for i, s in enumerate(steps[1:], 1):
        if s.status in ("skipped", "timeout"):
            continue
        for d in diag.new([x for x in s.diagnostics if x.kind == "warning"], seen):
            out.append(Finding("build/warning", Level.WARNING, f"new compiler warning on {t} (W=1): {d.text}", patch=s.index,
                               path=d.path, line=d.line, quote=(d.quote,)))
        if s.status == "failed":
            # What the base or the step before already failed on is not this patch's (the base's is one info).
            known = [e for before in (base, _previous(steps, i)) if before and before.status == "failed" for e in _errors(before)]
            if new_errors := diag.new(_errors(s), known):
                out.append(_broken(t, s, new_errors[0], _lasting(steps, i, total), total))
        else:
            last_built = s
        seen += diag.new(s.diagnostics, seen)  # per key the most copies one step printed, not the sum over steps
    out += _vdso(tb, last_built, touched)
    if cut := [s for s in steps if s.status == "timeout"]:
        names = ", ".join("the base" if not s.index else f"{s.index}/{total}" for s in cut)
        out.append(Finding("build/timeout", Level.WARNING, f"{t}: --build-timeout reached; not built: {names}",
                           hint="give --build-timeout more seconds (a cold build of a target takes minutes)"))
    return out


def _errors(s: Step) -> list[diag.Diagnostic]:
    """A failed step's errors: the compiler's, or make's first error line when the compiler printed none (no quote)."""
    return [d for d in s.diagnostics if d.kind == "error"] or [diag.Diagnostic("", None, "error", s.detail, "")]


def _broken(t: str, s: Step, first: diag.Diagnostic, lasting: str, total: int) -> Finding:
    where = f"{first.path}:{first.line}: " if first.line else (f"{first.path}: " if first.path else "")
    return Finding("build/error", Level.ERROR, f"patch {s.index}/{total} does not build for {t}: {where}{first.text}{lasting}",
                   patch=s.index, path=first.path or None, line=first.line, quote=(first.quote,) if first.quote else (),
                   hint="every patch of a series must build (git bisect lands on each)")


def _base_limitation(tb: TargetBuild) -> Finding:
    """The base does not build in our configuration: said once, as the review's limitation, never as the series' error."""
    base = tb.steps[0]
    first = _errors(base)[0]
    config = f"{' '.join(tb.target.variables(ccache=False))} tinyconfig" + (f" + {' '.join(tb.config)}" if tb.config else "")
    return Finding("build/base", Level.INFO, f"the base does not build for {tb.target.name} in this review's configuration "
                   f"({config}): {first.quote or first.text}; a limitation of the review, not of the series: its patches are "
                   "judged only on errors the base does not have",
                   hint=f"the base's goals were: {' '.join(base.goals) or '(none: the configuration failed)'}")


def _previous(steps: list[Step], i: int) -> Step | None:
    for s in reversed(steps[:i]):
        if s.status in ("built", "failed"):
            return s
    return None


def _lasting(steps: list[Step], i: int, total: int) -> str:
    """", and 3/4 still fails; 4/4 builds again" when the breakage lasts beyond patch I."""
    still = []
    for s in steps[i + 1:]:
        if s.status == "failed":
            still.append(s.index)
        elif s.status == "built":
            return (f" (patches {', '.join(f'{n}/{total}' for n in still)} still fail; {s.index}/{total} builds again)" if still
                    else f" ({s.index}/{total} builds again: the series is not bisectable)")
    return f" (still failing at {total}/{total})" if still else ""


_ADDS_GETRANDOM = re.compile(r"^arch/([^/]+)/(include/asm/vdso/getrandom\.h|.*vdso[^/]*/vgetrandom[^/]*\.c)$")


def _vdso(tb: TargetBuild, last: Step | None, touched: Iterable[str]) -> list[Finding]:
    """Each built step's vDSO images against the step before it that built them: a function lost is an
    error on the patch that lost it; a getrandom() the series adds must be exported by the last build."""
    if last is None or not last.index or not last.images:  # no patch built: the base's vDSO is not the series'
        return []
    t = tb.target.name
    out = []
    before: dict[str, vdso.Image] = {}
    for s in tb.steps:
        if s.status != "built":
            continue
        for im in s.images:
            old = before.get(im.path)
            if old is not None and s.index and (lost := sorted(old.names() - im.names())):
                out.append(Finding("build/vdso-export", Level.ERROR, f"the {t} vDSO ({im.path}) no longer exports "
                                   f"{', '.join(lost)} (its exports are quoted)", patch=s.index, quote=im.symbols or ("(no functions)",),
                                   hint="keep the symbol in the VERSION block of the vDSO linker script"))
            before[im.path] = im
    adds = any(_ADDS_GETRANDOM.match(p) and p.split("/")[1] == tb.target.srcarch for p in touched)
    if adds and not any(im.exports(*vdso.GETRANDOM) for im in last.images) and not out:
        im = last.images[0]
        out.append(Finding("build/vdso-export", Level.ERROR, f"the series adds vDSO getrandom() for {t} but the built vDSO "
                           f"({', '.join(i.path for i in last.images)}) does not export __vdso_getrandom or __kernel_getrandom "
                           "(its exports are quoted)", quote=im.symbols or ("(no functions)",),
                           hint="list the symbol in the VERSION block of the arch's vDSO linker script"))
    return out


def exported(builds: Sequence[TargetBuild]) -> dict[str, bool]:
    """arch directory -> whether the final step's vDSO images export getrandom() (for the arches built)."""
    out: dict[str, bool] = {}
    for tb in builds:
        built = [s for s in tb.steps if s.index and s.status == "built" and s.images]
        if built:
            out[tb.target.srcarch] = out.get(tb.target.srcarch, False) or any(im.exports(*vdso.GETRANDOM) for im in built[-1].images)
    return out
