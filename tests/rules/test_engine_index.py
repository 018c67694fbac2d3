"""The engine's series index (issue 7): each requirement's captured values are looked up in one scan
of the series, and the answers are exactly what `value in added text` says, change by change."""
from __future__ import annotations

import datetime as dt
import random

import pytest

from reviewer.model import Level, Patch, Person, Series
from reviewer.rules import RULES_DIR, engine, evaluate, load_rules
from reviewer.rules.engine import _Index
from reviewer.series.patchparse import parse_diff

AUTHOR = Person("Rule Author", "author@example.org")


def _naive(literals: set[str], texts: list[str]) -> dict[str, list[int]]:
    return {lit: found for lit in literals if (found := [at for at, text in enumerate(texts) if lit in text])}


def _containing(literals: set[str], texts: list[str]) -> dict[str, list[int]]:
    index = _Index(())
    index._texts = texts
    return {lit: found for lit, found in index.containing(literals).items() if found}


@pytest.mark.parametrize("one_by_one", [0, 10**9], ids=["regex", "one-by-one"])
def test_containing_is_substring_search(one_by_one: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "_ONE_BY_ONE", one_by_one)
    texts = ["obj-$(CONFIG_SYM_10) += a.o\nSYM_1", "CONFIG_SYM_100", "", "a.b*c(d)\n[x]", "x" * 300, "SYM_"]
    literals = {"SYM_1", "SYM_10", "SYM_100", "SYM_", "a", ".b*c(", "\n[x", "x" * 150, "nowhere", "S"}
    assert _containing(literals, texts) == _naive(literals, texts)
    rng = random.Random(7)
    for _ in range(200):
        alphabet = rng.choice(["ab", "ab_1", "aB1\n.*(|"])
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(rng.randint(1, 6))]
        literals = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(1, 10))}
        assert _containing(literals, texts) == _naive(literals, texts), (texts, literals)


def _patch(i: int, total: int, *, makefile: bool) -> Patch:
    sym, name = f"SYM_{i}", f"drv_{i}"
    diff = (f"diff --git a/drivers/x/Kconfig b/drivers/x/Kconfig\n--- a/drivers/x/Kconfig\n+++ b/drivers/x/Kconfig\n"
            f"@@ -1,1 +1,3 @@\n endmenu\n+config {sym}\n+\ttristate \"{sym}\"\n")
    if makefile:
        diff += (f"diff --git a/drivers/x/Makefile b/drivers/x/Makefile\n--- a/drivers/x/Makefile\n+++ b/drivers/x/Makefile\n"
                 f"@@ -1,1 +1,2 @@\n obj-y += core.o\n+obj-$(CONFIG_{sym}) += {name}.o\n")
    diff += (f"diff --git a/drivers/x/{name}.c b/drivers/x/{name}.c\nnew file mode 100644\n--- /dev/null\n+++ b/drivers/x/{name}.c\n"
             f"@@ -0,0 +1,1 @@\n+int {name};\n")
    return Patch(i, total, f"x: Add {name}", f"{i}@example.org", AUTHOR, dt.datetime(2024, 8, 20, tzinfo=dt.UTC),
                 "Add it.", diff, files=parse_diff(diff))


def test_a_long_series_is_looked_up_through_the_index() -> None:
    """60 patches: past the one-by-one size. SYM_1 is unused while SYM_10..SYM_19 are: only the
    regex, not the index (CONFIG_SYM_10 contains SYM_1), may tell them apart."""
    total = 60
    series = Series("x: Add drivers", 1, "0@example.org", AUTHOR, None, total,
                    tuple(_patch(i, total, makefile=i != 1) for i in range(1, total + 1)))
    rules = [r for r in load_rules(RULES_DIR) if r.id == "kconfig-symbol-used"]
    found = [(f.rule, f.patch, f.level) for f in evaluate(rules, series, None)]
    assert found == [("kconfig-symbol-used/used", 1, Level.INFO)]
