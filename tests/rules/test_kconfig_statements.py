"""What kconfig-symbol-removed counts as a use of a symbol, line by line (its fixtures test the whole check)."""
from __future__ import annotations

from reviewer.checks.kconfig_symbol_removed import _refers_to, _statements

KCONFIG = """\
config FOO_USER
\tbool "Uses FOO" if FOO
\tdepends on BAR && !FOO # FOO again
\thelp
\t  select FOO if you need it; depends on FOO too.

\t  Still help: if FOO is set, nothing happens.
config OTHER
\tdefault FOO
\tselect BAZ if FOO
"""


def test_help_texts_are_left_out() -> None:
    assert [n for n, _ in _statements(KCONFIG)] == [1, 2, 3, 8, 9, 10]


def test_kconfig_statements_and_prompts_use_symbols() -> None:
    uses = {n: _refers_to("drivers/x/Kconfig", line, {"FOO", "BAR"}) for n, line in _statements(KCONFIG)}
    assert uses == {1: set(), 2: {"FOO"}, 3: {"BAR", "FOO"}, 8: set(), 9: {"FOO"}, 10: {"FOO"}}
    assert _refers_to("drivers/x/Kconfig", '\tprompt "FOO # not a comment" if BAR', {"FOO", "BAR"}) == {"BAR"}


def test_makefiles_sources_and_what_does_not_count() -> None:
    symbols = {"FOO"}
    assert _refers_to("drivers/x/Makefile", "obj-$(CONFIG_FOO) += foo.o", symbols) == symbols
    assert _refers_to("drivers/x/foo.c", "#if IS_ENABLED(CONFIG_FOO_MODULE)", symbols) == symbols
    assert _refers_to("drivers/x/foo.c", "/* CONFIG_FOO is gone */", symbols) == set()  # not a preprocessor test
    assert _refers_to("arch/m68k/configs/amiga_defconfig", "CONFIG_FOO=m", symbols) == set()
    assert _refers_to("arch/powerpc/configs/fsl-emb-nonhw.config", "CONFIG_FOO=y", symbols) == set()
    assert _refers_to("tools/testing/selftests/x/config", "CONFIG_FOO=y", symbols) == set()
