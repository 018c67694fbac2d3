"""Compiler, linker and make diagnostics (reviewer/compile/diag.py), read from the real tools' output.

The host gcc, clang-19, ld and make run at test time on small files written here (milliseconds each):
what they print is the oracle, in the C locale and under C.UTF-8 (where gcc quotes typographically).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reviewer.compile import diag

SOURCE = """\
int used(void);

int f(void)
{
\tint unused;
\treturn used();
}

int g(void)
{
\tint y = 2;
\treturn y
}
"""


def _compile(cc: str, cwd: Path, path: str, *flags: str, locale: str = "C") -> str:
    """CC's stderr for PATH (as given on its command line, relative to CWD)."""
    env = {**os.environ, "LANG": locale, "LC_ALL": locale, "LC_MESSAGES": locale}
    env.pop("GCC_COLORS", None)
    done = subprocess.run([cc, "-Wall", "-Wunused-variable", "-fdiagnostics-color=never", *flags, "-c", path, "-o", os.devnull],
                          cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode != 0, "the file has an error: the compiler must fail"
    return done.stderr


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """src/mm/t.c beside an empty build directory (kbuild's O= layout)."""
    (tmp_path / "src" / "mm").mkdir(parents=True)
    (tmp_path / "src" / "mm" / "t.c").write_text(SOURCE)
    (tmp_path / "out").mkdir()
    return tmp_path


@pytest.mark.parametrize("cc", ["gcc", "clang-19"])
def test_real_compiler_output_with_columns(cc: str, tree: Path) -> None:
    log = _compile(cc, tree / "out", "../src/mm/t.c")
    found = diag.parse(log, ("../src",))
    assert [(d.path, d.line, d.kind) for d in found] == [("mm/t.c", 5, "warning"), ("mm/t.c", 12, "error")]
    warning, error = found
    assert warning.text == "unused variable 'unused' [-Wunused-variable]"
    assert error.text.startswith("expected ';'")
    # The quote is the compiler's line with the path made relative, column kept.
    assert warning.quote.startswith("mm/t.c:5:") and warning.quote.count(":") >= 3
    assert warning.quote.endswith("warning: unused variable 'unused' [-Wunused-variable]")


def test_gcc_without_column(tree: Path) -> None:
    found = diag.parse(_compile("gcc", tree / "out", "../src/mm/t.c", "-fno-show-column"), ("../src",))
    assert [(d.path, d.line, d.kind) for d in found] == [("mm/t.c", 5, "warning"), ("mm/t.c", 12, "error")]
    assert found[0].quote == "mm/t.c:5: warning: unused variable 'unused' [-Wunused-variable]"


@pytest.mark.parametrize("cc", ["gcc", "clang-19"])
def test_fatal_error_is_an_error(cc: str, tree: Path) -> None:
    (tree / "src" / "mm" / "h.c").write_text('#include "not-there.h"\n')
    found = diag.parse(_compile(cc, tree / "out", "../src/mm/h.c"), ("../src",))
    assert [(d.path, d.line, d.kind) for d in found] == [("mm/h.c", 1, "error")]
    assert "not-there.h" in found[0].text
    assert "fatal error:" in found[0].quote


def test_gcc_typographic_quotes_under_utf8_are_made_plain(tree: Path) -> None:
    plain = _compile("gcc", tree / "out", "../src/mm/t.c", locale="C")
    fancy = _compile("gcc", tree / "out", "../src/mm/t.c", locale="C.UTF-8")
    assert "\u2018unused\u2019" in fancy, "gcc under C.UTF-8 quotes with U+2018/U+2019 (the case this guards)"
    a, b = diag.parse(plain, ("../src",)), diag.parse(fancy, ("../src",))
    assert [d.key for d in a] == [d.key for d in b]
    assert b[0].text == "unused variable 'unused' [-Wunused-variable]"
    assert not any("\u2018" in d.quote or "\u2019" in d.quote for d in b)


def test_absolute_paths_made_relative_to_the_source_tree(tree: Path) -> None:
    src, out = tree / "src", tree / "out"
    log = _compile("gcc", out, str(src / "mm" / "t.c"))
    assert str(src) in log
    found = diag.parse(log, (str(src), str(out), "../src"))
    assert {d.path for d in found} == {"mm/t.c"}
    assert not any(str(tree) in d.quote for d in found)
    # Without the prefix the path stays as printed (nothing else is guessed away).
    assert {d.path for d in diag.parse(log)} == {str(src / "mm" / "t.c")}


def test_build_directory_prefix_and_dot_slash(tmp_path: Path) -> None:
    out = tmp_path / "out"
    log = (f"{out}/include/generated/foo.h:3:1: warning: no newline at end of file\n"
           "./arch/x86/kernel/x.c:7:2: error: expected ';' before '}' token\n")
    found = diag.parse(log, (str(tmp_path / "src"), str(out) + "/"))
    assert [(d.path, d.line) for d in found] == [("include/generated/foo.h", 3), ("arch/x86/kernel/x.c", 7)]


def test_a_line_printed_twice_by_make_j_is_one_diagnostic(tmp_path: Path) -> None:
    # A header's warning is printed once per compile that includes it: real make -j2, two objects.
    (tmp_path / "h.h").write_text("static int header_unused;\n")
    for name in ("a", "b"):
        (tmp_path / f"{name}.c").write_text(f'#include "h.h"\nint {name}(void)\n{{\n\tint {name}_unused;\n\treturn 0;\n}}\n')
    (tmp_path / "Makefile").write_text("all: a.o b.o\n%.o: %.c\n\t@echo '  CC      $@'; gcc -Wall -c $< -o $@\n")
    done = subprocess.run(["make", "-j2", "-k"], cwd=tmp_path, capture_output=True, text=True, check=False,
                          env={**os.environ, "LC_ALL": "C", "MAKEFLAGS": ""})
    assert done.returncode == 0, done.stderr
    log = done.stdout + done.stderr
    assert log.count("h.h:1:12: warning: 'header_unused' defined but not used") == 2
    found = diag.parse(log)
    assert sorted((d.path, d.line) for d in found) == [("a.c", 4), ("b.c", 4), ("h.h", 1)]


def test_notes_context_and_source_excerpts_are_not_diagnostics() -> None:
    log = ("mm/t.c: In function 'f':\n"
           "In file included from mm/t.c:3:\n"
           "mm/t.c:9:17: note: each undeclared identifier is reported only once\n"
           "    5 |         int unused; // mm/t.c:5:13: warning: not a diagnostic\n"
           "      |             ^~~~~~\n"
           "1 warning and 1 error generated.\n")
    assert diag.parse(log) == []


def _link(tmp_path: Path, *cflags: str) -> str:
    """ld's stderr for an object that calls a function nobody defines (the real linker's wording)."""
    (tmp_path / "u.c").write_text("int missing_fn(void);\nint caller(void)\n{\n\treturn missing_fn();\n}\n")
    subprocess.run(["gcc", *cflags, "-c", "u.c", "-o", "u.o"], cwd=tmp_path, check=True)
    done = subprocess.run(["ld", "-e", "caller", "u.o", "-o", "u"], cwd=tmp_path, capture_output=True, text=True, check=False,
                          env={**os.environ, "LC_ALL": "C"})
    assert done.returncode != 0
    return done.stderr


def test_linker_undefined_reference_without_debug_info(tmp_path: Path) -> None:
    log = _link(tmp_path)
    assert "undefined reference to `missing_fn'" in log
    found = diag.parse(log, (str(tmp_path),))
    assert [(d.path, d.kind) for d in found] == [("u.c", "error")]
    assert found[0].text.startswith("undefined reference to `missing_fn'")


def test_linker_undefined_reference_with_debug_info(tmp_path: Path) -> None:
    # With -g, ld names the source line (an absolute path): made relative as a compiler's is.
    log = _link(tmp_path, "-g")
    found = diag.parse(log, (str(tmp_path),))
    assert [(d.path, d.kind) for d in found] == [("u.c", "error")]
    assert found[0].text.startswith("undefined reference to `missing_fn'")


def _d(path: str, line: int, text: str, kind: str = "warning") -> diag.Diagnostic:
    return diag.Diagnostic(path, line, kind, text, f"{path}:{line}:5: {kind}: {text}")


def test_key_ignores_line_numbers_and_numbers_in_the_text() -> None:
    a = _d("mm/t.c", 5, "unused variable 'unused' [-Wunused-variable]")
    moved = _d("mm/t.c", 15, "unused variable 'unused' [-Wunused-variable]")
    assert a.key == moved.key
    assert _d("mm/t.c", 1, "array subscript 4 is above array bounds of 'int[4]'").key == \
        _d("mm/t.c", 9, "array subscript 5 is above array bounds of 'int[5]'").key
    # ...but not the file, the kind, or an identifier with digits in it.
    assert a.key != _d("mm/u.c", 5, a.text).key
    assert a.key != _d("mm/t.c", 5, a.text, kind="error").key
    assert _d("mm/t.c", 5, "unused variable 'x1'").key != _d("mm/t.c", 5, "unused variable 'x2'").key


def test_a_warning_moved_ten_lines_is_not_new(tree: Path) -> None:
    before = diag.parse(_compile("gcc", tree / "out", "../src/mm/t.c"), ("../src",))
    (tree / "src" / "mm" / "t.c").write_text("/* ten lines */\n" * 10 + SOURCE)
    after = diag.parse(_compile("gcc", tree / "out", "../src/mm/t.c"), ("../src",))
    assert [d.line for d in after] == [15, 22]
    assert diag.new(after, before) == []


def test_a_second_copy_of_the_same_warning_in_the_same_file_is_new(tree: Path) -> None:
    before = diag.parse(_compile("gcc", tree / "out", "../src/mm/t.c"), ("../src",))
    (tree / "src" / "mm" / "t.c").write_text(SOURCE + "\nint h(void)\n{\n\tint unused;\n\treturn 0;\n}\n")
    after = diag.parse(_compile("gcc", tree / "out", "../src/mm/t.c"), ("../src",))
    fresh = diag.new(after, before)
    assert [(d.line, d.text) for d in fresh] == [(17, "unused variable 'unused' [-Wunused-variable]")]


def test_new_counts_per_key() -> None:
    w = "unused variable 'a' [-Wunused-variable]"
    before = [_d("a.c", 1, w), _d("a.c", 2, w)]
    assert diag.new([_d("a.c", 11, w), _d("a.c", 12, w)], before) == []
    third = _d("a.c", 13, w)
    assert diag.new([_d("a.c", 11, w), _d("a.c", 12, w), third], before) == [third]
    other = _d("b.c", 1, w)
    assert diag.new([other], before) == [other]
    assert diag.new([], before) == []


def test_make_errors_from_real_make(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("all: sub\nsub:\n\t@$(MAKE) --no-print-directory inner\ninner:\n\t@false\n")
    env = {**os.environ, "LC_ALL": "C", "MAKEFLAGS": ""}
    failed = subprocess.run(["make", "-s"], cwd=tmp_path, capture_output=True, text=True, check=False, env=env)
    missing = subprocess.run(["make", "nope.o"], cwd=tmp_path, capture_output=True, text=True, check=False, env=env)
    assert diag.make_errors(failed.stdout + failed.stderr) == ["[Makefile:5: inner] Error 1", "[Makefile:3: sub] Error 2"]
    assert diag.make_errors(missing.stderr) == ["No rule to make target 'nope.o'.  Stop."]
    assert diag.make_errors("  CC      mm/t.o\nmake: Nothing to be done for 'all'.\n") == []


def test_lld_undefined_symbol_with_its_reference(tmp_path: Path) -> None:
    # LoongArch links with lld: its message and its `>>> referenced by` line, from the real linker.
    (tmp_path / "u.c").write_text("int bar(void);\nint foo(void) { return bar(); }\n")
    subprocess.run(["clang-19", "-c", "-g", "u.c", "-o", "u.o"], cwd=tmp_path, check=True)
    done = subprocess.run(["ld.lld-19", "-shared", "--no-undefined", "u.o", "-o", "u.so"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode != 0
    (d,) = diag.parse(done.stderr, (str(tmp_path),))
    assert (d.kind, d.text, d.path, d.line) == ("error", "undefined symbol: bar", "u.c", 2)
    assert d.quote.startswith("ld.lld-19: error: undefined symbol: bar")


POWERPC_ASCII = 'void f(void)\n{\n\tasm volatile(".ascii \\"abc\\"\\n\\tnop");\n}\n'  # an instruction after 3 bytes


@pytest.mark.parametrize("flags", [(), ("-pipe",)])
def test_assembler_errors_in_the_compilers_own_assembly_name_makes_goal(tmp_path: Path, flags: tuple[str, ...]) -> None:
    # What asm-offsets.c's markers do when assembled: gas reports lines of gcc's temporary file (or of
    # {standard input} with -pipe), which mean nothing to the reader; make's next line names the goal.
    (tmp_path / "a.c").write_text(POWERPC_ASCII)
    done = subprocess.run(["powerpc-linux-gnu-gcc", *flags, "-c", "a.c", "-o", os.devnull], cwd=tmp_path, env={**os.environ, "LANG": "C"},
                          capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "Error: instruction address is not a multiple of 4" in done.stderr
    log = done.stderr + "make[4]: *** [scripts/Makefile.build:229: arch/powerpc/kernel/asm-offsets.o] Error 1\n"
    (found,) = diag.parse(log)  # one line per misplaced instruction: one diagnostic
    assert (found.path, found.line, found.kind) == ("", None, "error")
    assert found.text == "assembler: instruction address is not a multiple of 4 (building arch/powerpc/kernel/asm-offsets.o)"
    assert found.quote == "as: Error: instruction address is not a multiple of 4"


def test_assembler_errors_in_a_source_file_keep_its_line(tmp_path: Path) -> None:
    (tmp_path / "src" / "arch").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (tmp_path / "src" / "arch" / "t.S").write_text("\tnop\n\tbogus 1\n")
    done = subprocess.run(["powerpc-linux-gnu-gcc", "-c", "../src/arch/t.S", "-o", os.devnull], cwd=tmp_path / "out",
                          env={**os.environ, "LANG": "C"}, capture_output=True, text=True, check=False)
    (found,) = diag.parse(done.stderr, ("../src",))
    assert (found.path, found.line, found.kind, found.text) == ("arch/t.S", 2, "error", "unrecognized opcode: `bogus'")
    assert found.quote == "arch/t.S:2: Error: unrecognized opcode: `bogus'"


def test_makes_own_warnings_about_makefiles_are_not_compiler_diagnostics() -> None:
    # Printed by the top-level Makefile when asked for arch/powerpc/kernel/vmlinux.lds (6.12, measured).
    log = ("/src/Makefile:1984: warning: overriding recipe for target 'arch/powerpc/kernel/vmlinux.lds'\n"
           "/src/Makefile:1224: warning: ignoring old recipe for target 'arch/powerpc/kernel/vmlinux.lds'\n"
           "/src/mm/t.c:5:6: warning: unused variable 'x' [-Wunused-variable]\n")
    assert [(d.path, d.line) for d in diag.parse(log, ("/src",))] == [("mm/t.c", 5)]
