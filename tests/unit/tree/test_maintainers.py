"""The one MAINTAINERS parser (reviewer/tree/maintainers.py) against get_maintainer.pl's rules, one rule a
test, each on a small hand-written MAINTAINERS that a naive reading (blank-line blocks, fnmatch, a
regex anchored at both ends, no X:, no `-d`) gets wrong. tests/realkernel/test_maintainers_oracle.py
asks get_maintainer.pl itself on the 6.12 tree."""
from __future__ import annotations

from collections.abc import Sequence

from reviewer.checks import maintainers_coverage
from reviewer.model import Change, FileChange, Patch, Person, Series
from reviewer.tree.maintainers import IsDir, Maintainers, parse

HEAD = "List of maintainers\n\nDescriptions of section entries:\n\n\tF: *Files* and directories\n\n"
REST = "\nTHE REST\nM:\tLinus <l@example.org>\nS:\tBuried alive in reporters\nF:\t*\nF:\t*/\n"


def _parse(*entries: str) -> Maintainers:
    return parse(HEAD + "\n".join(entries) + REST)


def _titles(m: Maintainers, path: str, is_dir: IsDir | None = None) -> list[str]:
    return [e.title for e in m.covering(path, is_dir)]


def _covers(pattern: str, paths: Sequence[str], letter: str = "F") -> dict[str, bool]:
    m = _parse(f"ONE\nM:\tA <a@example.org>\n{letter}:\t{pattern}\n")
    return {p: "ONE" in _titles(m, p) for p in paths}


def test_an_entry_is_a_title_and_its_fields_blank_lines_and_comments_included() -> None:
    m = _parse("FOO DRIVER\nM:\tA <a@example.org>\n\n# a comment inside\nF:\tdrivers/foo/\n"
               "BAR DRIVER\nM:\tB <b@example.org>\nF:drivers/bar.c\nK:\t\\bbar_\\w+\n")
    assert [e.title for e in m.entries] == ["FOO DRIVER", "BAR DRIVER", "THE REST"]  # the header's indented lines are text
    foo, bar, _ = m.entries
    assert foo.fields == (("M", "A <a@example.org>"), ("F", "drivers/foo/"))  # a blank line does not end an entry
    assert bar.files == ("drivers/bar.c",) and bar.keywords == ("\\bbar_\\w+",)  # `F:x` needs no blank; a title ends FOO
    assert _titles(m, "drivers/foo/core.c") == ["FOO DRIVER", "THE REST"]
    assert _titles(m, "drivers/bar.c") == ["BAR DRIVER", "THE REST"]


def test_a_trailing_slash_covers_everything_below() -> None:
    assert _covers("drivers/foo/", ["drivers/foo/a.c", "drivers/foo/sub/deep/b.h", "drivers/foo/", "drivers/foobar.c"]) == {
        "drivers/foo/a.c": True, "drivers/foo/sub/deep/b.h": True, "drivers/foo/": True, "drivers/foobar.c": False}


def test_star_and_question_mark_stay_in_one_component_without_a_trailing_slash() -> None:
    assert _covers("arch/*/include/asm/vdso/getrandom.h", ["arch/loongarch/include/asm/vdso/getrandom.h",
                   "arch/a/b/include/asm/vdso/getrandom.h"]) == {
        "arch/loongarch/include/asm/vdso/getrandom.h": True, "arch/a/b/include/asm/vdso/getrandom.h": False}
    assert _covers("lib/*", ["lib/sort.c", "lib/842/842.h", "lib/"]) == {"lib/sort.c": True, "lib/842/842.h": False, "lib/": True}
    assert _covers("drivers/mfd/da90??-*.c", ["drivers/mfd/da9052-core.c", "drivers/mfd/da905-core.c", "drivers/mfd/da9/2-core.c"]) == {
        "drivers/mfd/da9052-core.c": True, "drivers/mfd/da905-core.c": False, "drivers/mfd/da9/2-core.c": False}


def test_star_crosses_slashes_in_a_pattern_with_a_trailing_slash() -> None:
    # get_maintainer.pl turns `*` into `.*` and counts no slashes for a `dir/` pattern
    assert _covers("drivers/*/qcom/", ["drivers/media/platform/qcom/camss/camss.c", "drivers/clk/qcom/gcc.c", "drivers/qcom.c"]) == {
        "drivers/media/platform/qcom/camss/camss.c": True, "drivers/clk/qcom/gcc.c": True, "drivers/qcom.c": False}


def test_dots_are_literal_and_brackets_are_character_classes() -> None:
    assert _covers("drivers/edac/altera_edac.[ch]", ["drivers/edac/altera_edac.c", "drivers/edac/altera_edac.h",
                   "drivers/edac/altera_edacxc", "drivers/edac/altera_edac.s"]) == {
        "drivers/edac/altera_edac.c": True, "drivers/edac/altera_edac.h": True,
        "drivers/edac/altera_edacxc": False, "drivers/edac/altera_edac.s": False}


def test_the_end_of_a_pattern_is_not_anchored() -> None:
    paths = ["Documentation/ABI/testing/sysfs-class-power", "Documentation/ABI/testing/sysfs-class-power-mp2629",
             "Documentation/ABI/testing/sysfs-class-powe"]
    assert _covers("Documentation/ABI/testing/sysfs-class-power", paths) == dict(zip(paths, [True, True, False], strict=True))


def test_a_directory_named_without_its_slash_covers_what_is_below_it() -> None:
    assert _covers("drivers/acpi/arm64", ["drivers/acpi/arm64/iort.c", "drivers/acpi/arm64/sub/x.c", "drivers/acpi/arm64/"]) == {
        "drivers/acpi/arm64/iort.c": True, "drivers/acpi/arm64/sub/x.c": True, "drivers/acpi/arm64/": True}


def test_the_tree_says_whether_a_bare_name_is_a_directory() -> None:
    """`F: include/asm-generic/bitops` is a directory in 6.12, so it does not cover its sibling bitops.h (get_maintainer.pl's -d)."""
    m = _parse("BITOPS API\nM:\tA <a@example.org>\nF:\tinclude/asm-generic/bitops\n")
    asked: list[str] = []

    def is_dir(path: str) -> bool:
        asked.append(path)
        return path == "include/asm-generic/bitops"
    assert _titles(m, "include/asm-generic/bitops.h", is_dir) == ["THE REST"]
    assert _titles(m, "include/asm-generic/bitops.h", lambda _: False) == ["BITOPS API", "THE REST"]
    assert _titles(m, "include/asm-generic/bitops.h") == ["BITOPS API", "THE REST"]  # no tree: a file, as far as we know
    assert _titles(m, "include/asm-generic/bitops/atomic.h", lambda _: False) == ["BITOPS API", "THE REST"]  # below it: a directory
    assert asked == ["include/asm-generic/bitops"]  # asked only where it decides, never for the other paths


def test_x_excludes_the_whole_entry() -> None:
    m = _parse("CHAR and MISC DRIVERS\nM:\tG <g@example.org>\nF:\tdrivers/char/\nN:\tmisc\n"
               "X:\tdrivers/char/agp/\nX:\tdrivers/char/*misc*\n")
    assert _titles(m, "drivers/char/mem.c") == ["CHAR and MISC DRIVERS", "THE REST"]
    assert _titles(m, "drivers/char/agp/generic.c") == ["THE REST"]
    assert _titles(m, "drivers/char/xmisc.c") == ["THE REST"]  # excluded although F: and N: both match
    assert _titles(m, "lib/misc.c") == ["CHAR and MISC DRIVERS", "THE REST"]


def test_n_is_a_regex_searched_anywhere_with_perls_x_flag() -> None:
    paths = ["drivers/soc/tegra/fuse.c", "arch/arm64/boot/dts/nvidia/tegra194.dtsi", "drivers/integrated.c", "tegra.c"]
    assert _covers("[^a-z]tegra", paths, "N") == dict(zip(paths, [True, True, False, False], strict=True))
    assert _covers("^drivers/ foo  # blanks and comments are ignored", ["drivers/foo.c", "drivers/ foo.c"], "N") == {
        "drivers/foo.c": True, "drivers/ foo.c": False}


def test_k_matches_contents_never_paths() -> None:
    assert _covers("foo", ["drivers/foo.c", "foo"], "K") == {"drivers/foo.c": False, "foo": False}


def test_the_rest_covers_every_path_and_covered_ignores_it() -> None:
    m = _parse("MM\nM:\tA <a@example.org>\nF:\tmm/\n")
    assert [_titles(m, p) for p in ("README", "kernel/fork.c", "kernel/")] == [["THE REST"]] * 3
    assert m.covered("mm/slub.c") and not m.covered("kernel/fork.c")


def test_entries_come_in_file_order_and_once() -> None:
    m = _parse("ZZZ\nM:\tA <a@example.org>\nF:\tmm/\nF:\tmm/slub.c\n", "AAA\nM:\tB <b@example.org>\nF:\tmm/sl?b.c\n")
    assert _titles(m, "mm/slub.c") == ["ZZZ", "AAA", "THE REST"]


def test_a_pattern_python_cannot_compile_matches_nothing() -> None:
    m = _parse("BROKEN\nM:\tA <a@example.org>\nF:\tdrivers/foo(\nF:\tdrivers/bar.c\n")
    assert _titles(m, "drivers/foo(x") == ["THE REST"] and _titles(m, "drivers/bar.c") == ["BROKEN", "THE REST"]


def test_a_text_is_parsed_once() -> None:
    text = HEAD + "MM\nF:\tmm/\n"
    assert parse(text) is parse("".join(list(text)))  # an equal text, another object


def _added(path: str) -> Series:
    patch = Patch(1, 1, "x: y", "a@b", Person("A", "a@b"), None, "", "", files=(FileChange(path, None, Change.ADDED),))
    return Series("x: y", 1, "a@b", Person("A", "a@b"), None, 1, (patch,))


class _Tree:
    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def paths(self) -> Sequence[str]:
        return list(self.files)

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def is_symlink(self, _path: str) -> bool:
        return False


def test_maintainers_coverage_reads_directories_in_the_tree_after_the_series() -> None:
    text = HEAD + "BITOPS API\nM:\tA <a@example.org>\nF:\tinclude/asm-generic/bitops\n" + REST
    plain = _Tree({"MAINTAINERS": text})
    with_dir = _Tree({"MAINTAINERS": text, "include/asm-generic/bitops/atomic.h": ""})

    def found(tree: _Tree) -> list[str | None]:
        return [f.path for f in maintainers_coverage.check(_added("include/asm-generic/bitops.h"), tree)]
    assert found(plain) == []  # bitops is no directory: `F: include/asm-generic/bitops` covers bitops.h
    assert found(with_dir) == ["include/asm-generic/bitops.h"]  # it is one: get_maintainer.pl made it `bitops/`
    assert [f.path for f in maintainers_coverage.check(_added("include/asm-generic/bitops/new.h"), plain)] == []
