"""Which in-kernel tests a series calls for: a built-in map, KUnit suites beside the touched files, rules.

An in-kernel test runs while the kernel boots (built in, =y): dmapool_test prints per-size
times; a KUnit suite prints KTAP. Each names the Kconfig symbols that build it. A rule
(rules/*.toml, `[[in_kernel_test]]`) names tests that sit elsewhere than the code they test;
they count when the rule's trigger hits the series.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from reviewer.model import Patch
from reviewer.rules.engine import trigger_hits
from reviewer.rules.schema import InKernelTest, Rule
from reviewer.run.sandbox import read_untrusted
from reviewer.tree.testnames import test_stem


@dataclass(frozen=True)
class InTest:
    name: str  # "dmapool_test", "kunit:cmdline"
    kind: str  # "dmapool" | "kunit"
    symbols: tuple[str, ...]  # Kconfig symbols to set =y
    paths: tuple[str, ...] = ()  # anchored regexes of the files it tests
    source: str = ""  # the test's source file, for the "would run" listing
    rule: str = ""  # the rule that names it, if a rule does


# The built-in map: tests whose source does not sit beside the code they measure.
BUILTIN: tuple[InTest, ...] = (
    InTest("dmapool_test", "dmapool", ("DMAPOOL_TEST",),
           (r"^mm/dmapool(_test)?\.c$", r"^include/linux/dmapool\.h$"), "mm/dmapool_test.c"),
    InTest("kunit:slub_test", "kunit", ("KUNIT", "SLUB_KUNIT_TEST", "!SLUB_TINY", "SYSFS", "SLUB_DEBUG"),
           (r"^mm/slub\.c$",), "lib/slub_kunit.c"),
)

_SUITE_CALL = re.compile(r"^\s*kunit_test_(?:init_section_)?suites?\(", re.M)
_SUITE_NAME = re.compile(r"struct kunit_suite\s+\w+\s*=\s*\{[^}]*?\.name\s*=\s*\"(?P<name>[^\"]+)\"", re.S)


def relevant(touched: Iterable[str], tree: Path | None = None, extra: Sequence[InTest] = ()) -> list[tuple[InTest, str]]:
    """(test, why) for each in-kernel test the touched paths call for; TREE (the base tree, for
    KUnit suites beside a touched file) may be sparse as long as the touched directories are there."""
    found: dict[str, tuple[InTest, str]] = {}
    paths = list(touched)
    for test in (*extra, *BUILTIN):
        hit = next((p for p in paths if any(re.search(rx, p) for rx in test.paths)), None)
        if test.name in found or (hit is None and not (test.rule and not test.paths)):
            continue  # a rule's test without paths: its trigger hit on a commit message
        found[test.name] = (test, _why(test, hit))
    for path in paths if tree is not None else []:
        assert tree is not None
        for test in kunit_beside(tree, path):
            why = f"{path} is the KUnit suite" if test.source == path else f"KUnit suite {test.source} sits beside {path}"
            found.setdefault(test.name, (test, why))
    return list(found.values())


def _why(test: InTest, hit: str | None) -> str:
    what = test.source or test.name
    if test.rule:
        return f"{hit} triggers rule {test.rule}, which names {what}" if hit else f"rule {test.rule} names {what}"
    return f"{hit} is covered by {what}"


def from_rules(rules: Iterable[Rule], patches: Sequence[Patch]) -> list[InTest]:
    """The in-kernel tests named by the rules whose trigger hits PATCHES, each relevant to the files that hit."""
    out = []
    for rule in (r for r in rules if r.in_kernel_tests):
        hits = trigger_hits(rule, patches)
        paths = tuple(dict.fromkeys(f"^{re.escape(h.path)}$" for h in hits if h.path))
        out += [from_rule(rule.id, t, paths) for t in rule.in_kernel_tests if hits]
    return out


def from_rule(rule: str, test: InKernelTest, paths: tuple[str, ...] = ()) -> InTest:
    """A rule's [[in_kernel_test]] as the runner takes it: KUnit suites also need KUNIT."""
    kunit = test.kind == "kunit"
    symbols = ("KUNIT", test.config, *test.extra_config) if kunit else (test.config, *test.extra_config)
    return InTest(f"kunit:{test.name}" if kunit else test.name, test.kind, tuple(dict.fromkeys(symbols)), paths, test.source, rule)


def kunit_beside(tree: Path, path: str) -> list[InTest]:
    """KUnit suites in PATH's directory (or its tests/ subdirectory) named after PATH's file."""
    rel = Path(path)
    stem = test_stem(path)
    candidates = [*(tree / rel.parent).glob("*.c"), *(tree / rel.parent / "tests").glob("*.c")]
    out = []
    for c in sorted(candidates):
        if test_stem(c.name) == stem and (t := kunit_suite(tree, c)) is not None:
            out.append(t)
    return out


def kunit_suite(tree: Path, source: Path) -> InTest | None:
    """The InTest for a KUnit source file: its suite name, and the symbol its Makefile builds it with."""
    text = _read(source)
    if text is None or not _SUITE_CALL.search(text):
        return None
    name = m["name"] if (m := _SUITE_NAME.search(text)) else source.stem
    symbol = makefile_symbol(source.parent / "Makefile", source.stem)
    if symbol is None:
        return None
    rel = str(source.relative_to(tree))
    return InTest(f"kunit:{name}", "kunit", ("KUNIT", symbol), (f"^{re.escape(rel)}$",), rel)


def makefile_symbol(makefile: Path, obj: str) -> str | None:
    text = _read(makefile)
    if text is None:
        return None
    rx = re.compile(rf"^obj-\$\(CONFIG_(?P<sym>\w+)\)\s*[+:]?=.*(?<![\w-]){re.escape(obj)}\.o\b", re.M)
    m = rx.search(text.replace("\\\n", " "))
    return m["sym"] if m else None


def _read(path: Path) -> str | None:
    """PATH of the patched worktree, where sandboxed builds and tests have run: never through a symlink
    or blocking on a FIFO they may have left (None if it is not a plain file)."""

    try:
        return read_untrusted(path).decode(errors="replace")
    except OSError:
        return None


def symbols(tests: Iterable[InTest]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s for t in tests for s in t.symbols))


def describe(test: InTest) -> str:
    """How the test would run, for the report when booting is not asked for."""
    config = " ".join(f"CONFIG_{s}=y" for s in test.symbols if not s.startswith("!"))
    return f"{test.name}: tinyconfig + {config}, booted under QEMU on base and patched"
