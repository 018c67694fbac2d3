"""The rule engine on the demo series (loongarch vDSO getrandom v4) and variants of it edited in memory."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reviewer.model import Change, FileChange, Finding, Hunk, Level, Line, Series
from reviewer.rules import RULES_DIR, Rule, evaluate, load_rule, load_rules
from reviewer.rules.engine import _Index, readable, shown_path
from reviewer.series import fetch
from reviewer.series.patchparse import parse_diff
from reviewer.tree.base import GitBaseTree
from reviewer.tree.plainrepo import git
from tests.conftest import SERIES

RULE = "vdso-getrandom-new-arch"


@pytest.fixture(scope="module")
def demo() -> Series:
    """Built as the pipeline's load and parse stages build it."""
    path = SERIES / "loongarch-vdso-getrandom-v4.mbox"
    series = fetch.build_series(fetch.read_mbox(path), str(path))
    patches = tuple(replace(p, files=parse_diff(p.diff, f"patch {p.index}")) for p in series.patches)
    return replace(series, patches=patches)


@pytest.fixture(scope="module")
def rules() -> tuple[Rule, ...]:
    return tuple(r for r in load_rules(RULES_DIR) if r.id == RULE)


@pytest.fixture
def base(kernel_repo: Path) -> GitBaseTree:
    return GitBaseTree(kernel_repo, git(kernel_repo, "rev-parse", "HEAD").strip())


def without(series: Series, index: int, pattern: str) -> Series:
    """SERIES with the file changes whose path contains PATTERN dropped from patch INDEX."""
    return edit(series, index, lambda files: tuple(f for f in files if pattern not in f.path))


def edit(series: Series, index: int, change: object) -> Series:
    patches = tuple(replace(p, files=change(p.files)) if p.index == index else p for p in series.patches)  # type: ignore[operator]
    return replace(series, patches=patches)


def only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, findings
    return findings[0]


def added_file(path: str, *lines: str, change: Change = Change.ADDED, mode: str = "100644") -> FileChange:
    body = tuple(Line("+", text, None, n) for n, text in enumerate(lines, 1))
    hunk = Hunk(0, 0, 1, len(lines), "", body)
    return FileChange(path, None if change is Change.ADDED else path, change, None, mode, added=len(lines), hunks=(hunk,))


def test_demo_is_clean(demo: Series, rules: tuple[Rule, ...], base: GitBaseTree) -> None:
    assert list(evaluate(rules, demo, None)) == []
    assert list(evaluate(rules, demo, base)) == []


def test_missing_kconfig_select(demo: Series, rules: tuple[Rule, ...], base: GitBaseTree) -> None:
    found = only(list(evaluate(rules, without(demo, 1, "Kconfig"), base)))
    assert (found.rule, found.level, found.patch) == (f"{RULE}/kconfig-select", Level.ERROR, 1)
    assert found.path == "arch/loongarch/Kconfig"
    assert found.message.startswith("arch/loongarch/Kconfig does not select VDSO_GETRANDOM")
    assert found.hint and "arch/loongarch/Kconfig" in found.hint


def test_missing_kconfig_select_without_a_base_is_unverified(demo: Series, rules: tuple[Rule, ...]) -> None:
    found = only(list(evaluate(rules, without(demo, 1, "Kconfig"), None)))
    assert (found.rule, found.level) == (f"{RULE}/kconfig-select", Level.INFO)
    assert found.message.startswith("unverified: arch/loongarch/Kconfig does not select VDSO_GETRANDOM")
    assert found.message.endswith("(no kernel tree to check the base against)")


def test_missing_lds_export(demo: Series, rules: tuple[Rule, ...], base: GitBaseTree) -> None:
    # Never the pattern: without a tree the directory it looked in, with one the base's linker script.
    for tree, path in ((None, "arch/loongarch/"), (base, "arch/loongarch/vdso/vdso.lds.S")):
        found = only(list(evaluate(rules, without(demo, 1, "vdso.lds.S"), tree)))
        assert (found.rule, found.level, found.patch) == (f"{RULE}/lds-export", Level.ERROR, 1)
        assert "vdso.lds.S" in found.message and "__vdso_getrandom" in found.message
        assert found.path == path


def test_missing_selftest_enable(demo: Series, rules: tuple[Rule, ...], base: GitBaseTree) -> None:
    series = without(demo, 4, "tools/testing/selftests/vDSO/Makefile")
    found = only(list(evaluate(rules, series, base)))
    assert (found.rule, found.level, found.patch) == (f"{RULE}/selftest-enable", Level.ERROR, 1)
    assert "tools/testing/selftests/vDSO/Makefile" in found.message and "loongarch" in found.message
    assert only(list(evaluate(rules, series, None))).level is Level.INFO


def test_selftest_enabled_the_6_12_way(demo: Series, rules: tuple[Rule, ...], base: GitBaseTree) -> None:
    chacha = added_file("tools/testing/selftests/vDSO/vgetrandom-chacha.S", "#elif defined(__loongarch__)",
                        '#include "../../../../arch/loongarch/vdso/vgetrandom-chacha.S"', change=Change.MODIFIED)
    series = edit(demo, 4, lambda _files: (chacha,))
    assert list(evaluate(rules, series, base)) == []


def test_missing_symlink_is_a_warning(demo: Series, rules: tuple[Rule, ...], base: GitBaseTree) -> None:
    found = only(list(evaluate(rules, without(demo, 1, "tools/arch/loongarch/vdso"), base)))
    assert (found.rule, found.level, found.path) == (f"{RULE}/tools-arch-symlink", Level.WARNING, "tools/arch/loongarch/vdso")


@pytest.fixture
def base_612(kernel_repo: Path) -> GitBaseTree:
    """The bundled base in 6.12's convention: no tools/arch/<arch>/vdso symlink for any arch."""
    git(kernel_repo, "rm", "-q", "tools/arch/x86/vdso")
    git(kernel_repo, "commit", "-q", "-m", "tools/arch: drop the vdso symlinks (as 6.12 did)")
    return GitBaseTree(kernel_repo, git(kernel_repo, "rev-parse", "HEAD").strip())


def test_a_6_12_style_base_does_not_ask_for_the_symlink(demo: Series, rules: tuple[Rule, ...], base_612: GitBaseTree) -> None:
    assert list(evaluate(rules, without(demo, 1, "tools/arch/loongarch/vdso"), base_612)) == []
    # the other requirements still hold there: one finding for one missing piece
    found = only(list(evaluate(rules, without(without(demo, 1, "tools/arch/loongarch/vdso"), 1, "Kconfig"), base_612)))
    assert found.rule == f"{RULE}/kconfig-select"


def test_x86_wiring_in_the_base_satisfies_or_in_base(rules: tuple[Rule, ...], base: GitBaseTree, demo: Series) -> None:
    header = added_file("arch/x86/include/asm/vdso/getrandom.h", "#ifndef __ASM_VDSO_GETRANDOM_H")
    series = replace(demo, patches=(replace(demo.patches[0], files=(header,)),))
    unverified = list(evaluate(rules, series, None))
    # Without a tree the symlink's convention (applies_if_base_has) is unknown: nothing said of it.
    assert sorted((f.rule.split("/")[1], f.level) for f in unverified) == [
        ("kconfig-select", Level.INFO), ("lds-export", Level.ERROR), ("selftest-enable", Level.INFO)]
    found = only(list(evaluate(rules, series, base)))  # the base has x86's select, filter and symlink
    assert found.rule == f"{RULE}/lds-export"  # no or_in_base: the series itself must export it


def test_a_requirement_met_in_a_later_patch_breaks_bisection(demo: Series, rules: tuple[Rule, ...]) -> None:
    kconfig = next(f for f in demo.patches[0].files if f.path == "arch/loongarch/Kconfig")
    series = edit(without(demo, 1, "Kconfig"), 3, lambda files: (*files, kconfig))
    found = only(list(evaluate(rules, series, None)))
    assert (found.rule, found.level, found.patch) == (f"{RULE}/kconfig-select", Level.WARNING, 1)
    assert found.message == ("kconfig-select (arch/loongarch/Kconfig) is met only in patch 3, after the patch "
                             "that needs it (1): the series is not bisectable at 1")


LINE_RULE = """\
schema = 1
id = "{name}"
level = "warning"
summary = "a selected VDSO_ symbol must be defined"
why = "w"
scope = "{scope}"
[trigger]
any_of = [{{ path = '^arch/(?P<arch>[a-z0-9]+)/Kconfig$', added_line = '^\\s*select\\s+(?P<sym>VDSO_\\w+)' }}]
[[require]]
id = "defined"
path = '^lib/vdso/Kconfig$'
added_line = '^config {{sym}}$'
or_in_base = {or_in_base}
level = "error"
message = "{{arch}} selects {{sym}}, which the series does not define"
"""


def line_rule(tmp_path: Path, scope: str = "series", or_in_base: str = "false") -> Rule:
    path = tmp_path / "sym.toml"
    path.write_text(LINE_RULE.format(name="sym", scope=scope, or_in_base=or_in_base))
    return load_rule(path)


def test_captures_from_an_added_line_and_the_quote(demo: Series, tmp_path: Path, base: GitBaseTree) -> None:
    found = only(list(evaluate([line_rule(tmp_path)], demo, None)))
    assert (found.rule, found.level, found.patch, found.path) == ("sym/defined", Level.ERROR, 1, "lib/vdso/Kconfig")
    assert found.message == "loongarch selects VDSO_GETRANDOM, which the series does not define"
    assert found.quote == ("+\tselect VDSO_GETRANDOM",)
    assert list(evaluate([line_rule(tmp_path, or_in_base="true")], demo, base)) == []


def test_patch_scope_looks_only_inside_each_patch(demo: Series, tmp_path: Path) -> None:
    rule = load_rule(Path(RULES_DIR / f"{RULE}.toml"))
    scoped = replace(rule, scope="patch")
    found = list(evaluate([scoped], demo, None))
    assert [(f.rule.split("/")[1], f.patch, f.level) for f in found] == [("selftest-enable", 1, Level.INFO)]
    assert list(evaluate([line_rule(tmp_path, scope="patch")], demo, None))[0].patch == 1


ALL_OF = """\
schema = 1
id = "both"
level = "error"
summary = "s"
why = "w"
[trigger]
all_of = [{ message = 'LoongArch' }, { path = '^arch/(?P<arch>[a-z0-9]+)/Kconfig$', change = "modified" }]
[[require]]
id = "present"
path = '^arch/{arch}/vdso/vgetrandom\\.c$'
file = "present"
message = "no vgetrandom.c"
[[require]]
id = "added"
path = '^arch/{arch}/vdso/vdso\\.lds\\.S$'
file = "added"
message = "{arch}: vdso.lds.S was not added"
"""


def test_all_of_with_a_message_condition(demo: Series, tmp_path: Path) -> None:
    (tmp_path / "both.toml").write_text(ALL_OF)
    rule = load_rule(tmp_path / "both.toml")
    found = only(list(evaluate([rule], demo, None)))
    assert (found.rule, found.message) == ("both/added", "loongarch: vdso.lds.S was not added")
    deleted = replace(demo, patches=(*demo.patches, replace(demo.patches[-1], index=5, files=(
        FileChange("arch/loongarch/vdso/vgetrandom.c", "arch/loongarch/vdso/vgetrandom.c", Change.DELETED),))))
    assert [f.rule for f in evaluate([rule], deleted, None)] == ["both/present", "both/added"]
    no_message = replace(demo, patches=tuple(replace(p, message="x") for p in demo.patches))
    assert list(evaluate([rule], no_message, None)) == []


@pytest.mark.parametrize(("pattern", "shown"), [
    ("^arch/loongarch/Kconfig$", "arch/loongarch/Kconfig"),
    ("^tools/arch/x86\\-64/vdso$", "tools/arch/x86-64/vdso"),
    ("^lib/vdso/getrandom\\.c$", "lib/vdso/getrandom.c"),
    ("^tools/testing/selftests/vDSO/(Makefile|vgetrandom-chacha\\.S)$", "tools/testing/selftests/vDSO/(Makefile|vgetrandom-chacha\\.S)"),
    ("^arch/\\w+/Kconfig$", "arch/\\w+/Kconfig"),
])
def test_readable(pattern: str, shown: str) -> None:
    assert readable(pattern) == shown


SYSCALL_TABLES = "^(scripts/syscall\\.tbl|arch/.+/syscall[^/]*\\.tbl)$"
PPC_LDS = "^arch/powerpc/.*vdso[^/]*\\.lds\\.S$"


@pytest.mark.parametrize(("pattern", "shown"), [
    ("^arch/loongarch/Kconfig$", "arch/loongarch/Kconfig"),  # a plain path is itself
    ("^arch/loongarch/.*vdso[^/]*\\.lds\\.S$", "arch/loongarch/"),  # the directory it looks in
    ("^tools/testing/selftests/vDSO/(Makefile|vgetrandom-chacha\\.S)$", "tools/testing/selftests/vDSO/"),
    ("^arch/x86?/Kconfig$", "arch/"),  # `6?` may be absent: not part of the directory
    (SYSCALL_TABLES, None),  # scripts/ or arch/: no one directory
    ("^a/b\\.c|c/d\\.c$", None),  # top-level alternatives share no directory
    ("^(?:lib|mm)/.*\\.c$", None),
])
def test_a_finding_path_is_never_a_pattern(pattern: str, shown: str | None) -> None:
    assert shown_path(pattern, _Index(()), None) == shown


def test_a_finding_path_is_the_file_matched_or_the_directory_of_several(demo: Series, tmp_path: Path) -> None:
    """In the series first (the file that lacked the line), else in the base tree: one file, or the directory of several."""
    repo = tmp_path / "linux"
    for name in ("arch/powerpc/kernel/vdso/vdso32.lds.S", "arch/powerpc/kernel/vdso/vdso64.lds.S", "scripts/syscall.tbl"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("x\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = GitBaseTree(repo, git(repo, "rev-parse", "HEAD").strip())
    assert shown_path(PPC_LDS, _Index(()), base) == "arch/powerpc/kernel/vdso/"
    assert shown_path(SYSCALL_TABLES, _Index(()), base) == "scripts/syscall.tbl"
    lds = "^arch/loongarch/.*vdso[^/]*\\.lds\\.S$"
    assert shown_path(lds, _Index(demo.patches), base) == "arch/loongarch/vdso/vdso.lds.S"  # the series' own
    assert shown_path(lds, _Index(demo.patches), None, patch=1) == "arch/loongarch/vdso/vdso.lds.S"
    assert shown_path(lds, _Index(demo.patches), None, patch=2) == "arch/loongarch/"  # patch 2 has none


@pytest.mark.parametrize(("arch", "macro"), [("arm64", "__aarch64__"), ("s390", "__s390x__"), ("loongarch", "__loongarch__")])
def test_the_selftest_branch_names_the_compiler_macro(arch: str, macro: str, rules: tuple[Rule, ...]) -> None:
    """`aliases`: the 6.12 branch says `#elif defined(__aarch64__)` for arm64, `__s390x__` for s390."""
    header = added_file(f"arch/{arch}/include/asm/vdso/getrandom.h", "#ifndef __ASM_VDSO_GETRANDOM_H")
    branch = FileChange("tools/testing/selftests/vDSO/vgetrandom-chacha.S", "tools/testing/selftests/vDSO/vgetrandom-chacha.S",
                        Change.MODIFIED, "100644", "100644", added=1,
                        hunks=(Hunk(1, 1, 1, 2, "", (Line(" ", "#if defined(__x86_64__)", 1, 1),
                                                     Line("+", f"#elif defined({macro})", None, 2))),))
    from reviewer.model import Patch, Person

    patch = Patch(1, 1, f"{arch}: vDSO: getrandom", "1@x", Person("A", "a@x"), None, "m", "", files=(header, branch))
    series = Series("x", 1, "1@x", patch.author, None, 1, (patch,))
    assert "selftest-enable" not in {f.rule.split("/")[1] for f in evaluate(rules, series, None)}
    sparc = Hunk(1, 1, 1, 2, "", (Line("+", "#elif defined(__sparc__)", None, 2),))
    other = replace(patch, files=(header, replace(branch, hunks=(sparc,))))
    assert "selftest-enable" in {f.rule.split("/")[1] for f in evaluate(rules, replace(series, patches=(other,)), None)}
