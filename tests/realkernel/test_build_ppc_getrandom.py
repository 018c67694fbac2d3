"""`review --build` of accepted code: 6.12's powerpc vDSO getrandom() put back, as a 3-patch series, on a
base without it, builds clean for ppc64le and ppc32, and both built vDSOs export __kernel_getrandom.

The base is 6.12 less what its powerpc getrandom() commits added (found by the patterns below, which
cut code and copy none); the series is 6.12's own files again, made with git (`show` of 6.12 at each
path): the tip's tree is 6.12's, so every error the build reported would be a false one. Patch 1 touches
arch/powerpc/kernel/asm-offsets.c, which kbuild compiles to a `.s` for `prepare` and never to an object:
asked for asm-offsets.o, make assembled that `.s` and failed on its markers ("instruction address is not
a multiple of 4"). The exports are read again with the cross binutils at test time (the oracle).

Cost: cold (empty REVIEWER_BOOT_CACHE) two cross builds of minutes each; warm (the build directories of
test_build_real's powerpc test, same configuration) well under one.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reviewer.errors import ExitStatus
from tests.helpers import review
from tests.realkernel.kernel import BOOT_CACHE, commit, format_patch, git, show

pytestmark = [pytest.mark.slow]
AUTHOR = "Build Tester <build@example.org>"
VDSO = "arch/powerpc/kernel/vdso"
FUNCTION = r"static __always_inline\n[^\n]*\b{}\([^)]*\)\n\{{\n(?:.*\n)*?\}}\n\n"
# What 6.12's powerpc vDSO getrandom() commits added, per file (None: the file is new), as patterns that
# must each match in 6.12: the base is 6.12 without them.
ADDED: dict[str, tuple[str, ...] | None] = {
    "arch/powerpc/include/asm/vdso/getrandom.h": None,
    f"{VDSO}/getrandom.S": None,
    f"{VDSO}/vgetrandom.c": None,
    f"{VDSO}/vgetrandom-chacha.S": None,
    "arch/powerpc/Kconfig": (r"^\tselect VDSO_GETRANDOM\n",),
    f"{VDSO}/vdso32.lds.S": (r"^\t\t__kernel_getrandom;\n",),
    f"{VDSO}/vdso64.lds.S": (r"^\t\t__kernel_getrandom;\n",),
    f"{VDSO}/Makefile": (
        r"^obj-vdso(32|64) \+= getrandom-\S+ vgetrandom-chacha-\S+\n",  # the assembly objects
        r"^ifneq \(\$\(c-getrandom-y\),\)\n(.*\n)*?endif\n\n",  # lib/vdso/getrandom.c included in vgetrandom.c
        r"^\$\(obj\)/vgetrandom-(32|64)\.o: .*\n\t.*\n",  # its rules
        r" (\$\(obj\)/)?vgetrandom-(32|64)\.o(?= |$)",  # and its place in targets and the links
    ),
    "arch/powerpc/kernel/asm-offsets.c": (r"^.*\bVDSO_RNG_DATA_OFFSET\b.*\n",),
    "arch/powerpc/include/asm/vdso_datapage.h": (r"^\tstruct vdso_rng_data rng_data;\n",),
    "arch/powerpc/include/asm/vdso/vsyscall.h": (FUNCTION.format("__arch_get_k_vdso_rng_data"),),
    "tools/testing/selftests/vDSO/vgetrandom-chacha.S": (r"^#elif defined\(__powerpc__\).*\n#include .*/powerpc/.*\n",),
}
SERIES = (
    ("powerpc/vdso: Keep the getrandom() state in the vDSO data page",
     ("arch/powerpc/include/asm/vdso_datapage.h", "arch/powerpc/include/asm/vdso/vsyscall.h", "arch/powerpc/kernel/asm-offsets.c")),
    ("powerpc/vdso: Wire up getrandom() vDSO implementation",
     ("arch/powerpc/Kconfig", "arch/powerpc/include/asm/vdso/getrandom.h", f"{VDSO}/getrandom.S", f"{VDSO}/vgetrandom.c",
      f"{VDSO}/vgetrandom-chacha.S", f"{VDSO}/Makefile", f"{VDSO}/vdso32.lds.S", f"{VDSO}/vdso64.lds.S")),
    ("selftests: vDSO: Build vdso_test_chacha on powerpc", ("tools/testing/selftests/vDSO/vgetrandom-chacha.S",)),
)
IMAGES = {"ppc64le": f"{VDSO}/vdso64.so.dbg", "ppc32": f"{VDSO}/vdso32.so.dbg"}
CROSS = {"ppc64le": "powerpc64le-linux-gnu-", "ppc32": "powerpc-linux-gnu-"}


def _without(text: str, patterns: tuple[str, ...]) -> str:
    for pattern in patterns:
        text, n = re.subn(pattern, "", text, flags=re.M)
        assert n, f"{pattern!r} matches nothing in 6.12"
    return text


def _series(linux: Path, head: str, tmp: Path) -> Path:
    base = commit(linux, head, {p: None if cut is None else _without(show(linux, head, p), cut) for p, cut in ADDED.items()},
                  "powerpc: no vDSO getrandom() (the base of this test)\n")
    assert sorted(p for _, paths in SERIES for p in paths) == sorted(ADDED)
    tip = base
    for subject, paths in SERIES:
        tip = commit(linux, tip, {p: show(linux, head, p) for p in paths}, f"{subject}\n\nAs in 6.12.\n\nSigned-off-by: {AUTHOR}\n", AUTHOR)
    assert git(linux, "diff", "--name-only", head, tip) == "", "the series puts 6.12 back exactly"
    return format_patch(linux, base, tip, tmp / "ppc-getrandom.mbox")


def _oracle(target: str) -> set[str]:
    """The functions the target's last built vDSO exports, read by the cross binutils (readelf and nm)."""
    built = max(Path(BOOT_CACHE).glob(f"check-{target}-*/{IMAGES[target]}"), key=lambda p: p.stat().st_mtime)
    readelf = subprocess.run([f"{CROSS[target]}readelf", "--dyn-syms", "-W", str(built)], capture_output=True, text=True, check=True)
    funcs = {f"{w[7]}" for line in readelf.stdout.splitlines() if len(w := line.split()) >= 8 and w[3] == "FUNC" and w[6] != "UND"}
    nm = subprocess.run([f"{CROSS[target]}nm", "-D", "--defined-only", "--with-symbol-versions", str(built)],
                        capture_output=True, text=True, check=True)
    texts = {w[2] for line in nm.stdout.splitlines() if len(w := line.split()) == 3 and w[1] == "T"}
    assert {f.replace("@@", "@") for f in funcs} == {t.replace("@@", "@") for t in texts}, (readelf.stdout, nm.stdout)
    return funcs


def test_powerpc_vdso_getrandom_of_6_12_readded_builds_clean_for_both_targets(linux: Path, linux_head: str, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    assert all(shutil.which(f"{c}readelf") for c in CROSS.values())
    mbox = _series(linux, linux_head, tmp_path)
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", BOOT_CACHE)
    result = review(mbox, "--tree", linux, "--no-tests", "--no-checkpatch", "--build", "--arch", "ppc64le,ppc32",
                    "--build-timeout", "3000", "--format", "json", tmp=tmp_path / "t", timeout=3600)
    assert result.rc == ExitStatus.OK, (result.stderr, result.stdout[-3000:])
    result.assert_nothing_left()
    doc: dict[str, Any] = result.json()
    assert [f for f in doc["findings"] if f["level"] == "error" or f["rule"].startswith("build/")] == []
    builds = {b["target"]: b for b in doc["builds"]}
    assert set(builds) == {"ppc64le", "ppc32"}
    for target, image in IMAGES.items():
        steps = builds[target]["steps"]
        assert [s["status"] for s in steps] == ["built", "built", "built", "skipped"], steps  # 3/3 is the selftest
        # asm-offsets.c is built the way kbuild builds it (prepare), never as an object.
        assert steps[0]["goals"] == ["prepare", f"{VDSO}/"], steps[0]
        assert "__kernel_getrandom" not in " ".join(steps[0]["vdso"][image]), steps[0]["vdso"]
        exported = steps[2]["vdso"][image]
        assert "__kernel_getrandom@@LINUX_2.6.15" in exported and "__kernel_clock_gettime@@LINUX_2.6.15" in exported, exported
        assert set(exported) == _oracle(target)
        print(f"{target} {image}: {' '.join(exported)}")
