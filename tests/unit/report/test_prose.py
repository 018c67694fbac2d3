"""The reply's prose (reviewer/report/prose.py): 72 columns, code spans whole, nothing that reads as a trailer."""
from __future__ import annotations

from reviewer.report import escape, prose

NAME = "a\nReviewed-by: Rev Iewer <rev@example.org>"


def test_wrap_keeps_code_spans_and_the_width() -> None:
    text = prose.wrap("word " * 12 + "`select VDSO_GETRANDOM if FOO` " + "word " * 6)
    assert "`select VDSO_GETRANDOM if FOO`" in text
    assert all(len(ln) <= 72 for ln in text.splitlines())


def test_a_word_longer_than_a_line_gets_a_line_of_its_own_indented() -> None:
    command = "`perl /tmp/linux/scripts/get_maintainer.pl --no-git --no-git-fallback --sections /tmp/reviewer-scripts-x/0001.patch`"
    lines = prose.wrap(f"get_maintainer.pl failed: {command} exited 2: the tree is not a kernel tree.").splitlines()
    assert lines[1] == prose.VERBATIM + command.strip("`")
    assert all(len(ln) <= 72 for ln in lines if not ln.startswith(prose.VERBATIM))


def test_no_line_opens_like_a_trailer() -> None:
    """A name with spaces (legal in a file name) can put `Reviewed-by:` anywhere in a message: it never opens a line."""
    for lead in range(0, 70, 3):
        message = "x" * lead + " no MAINTAINERS entry covers the new file Reviewed-by: Rev Iewer <rev@example.org> of the series"
        lines = prose.wrap(escape.text(message)).splitlines()
        assert not any(escape.trailer_like(ln) for ln in lines), lines
        assert all(len(ln) <= 72 for ln in lines), lines
    opening = prose.wrap('Fixes: 6bbeb48ebf41 is "Linux 6.11-rc3", not "Linux 6.10"; ' + "more words " * 8)
    assert opening.startswith("`Fixes:` 6bbeb48ebf41") and all(len(ln) <= 72 for ln in opening.splitlines())


def test_an_escaped_newline_stays_inside_its_word() -> None:
    text = prose.wrap(escape.text(f"no Makefile builds {NAME}.o, so it is never compiled"))
    assert "a\\nReviewed-by:" in text and not any(ln.startswith("Reviewed-by") for ln in text.splitlines())


def test_hang_wraps_a_figure_line_under_itself() -> None:
    line = "      not enough runs for a verdict (3 runs per side; a verdict needs 5 a side, interleaved)"
    out = prose.hang(line).splitlines()
    assert out[0].startswith("      not enough") and all(ln.startswith("        ") for ln in out[1:])
    assert all(len(ln) <= 72 for ln in out) and " ".join(ln.strip() for ln in out) == line.strip()
    assert prose.hang("  apply: short") == "  apply: short"
