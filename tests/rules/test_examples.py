"""Every shipped rule's [[example]] tables, run: the series each describes, on its base tree, gives
exactly the findings it expects, each at the level the rule gives it.

An example's patches must also apply, in order, to its tree with `git apply` (the tree holds every
file they change), so an example's diff cannot drift from the tree it claims to be made against.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from reviewer.errors import CommandError, ConfigError
from reviewer.model import Finding, Level, Patch, Person, Series
from reviewer.rules import RULES_DIR, Rule, evaluate, load_rule, load_rules
from reviewer.rules.doc import check_rules_dir
from reviewer.rules.schema import Example, check_examples
from reviewer.series.patchparse import parse_diff
from reviewer.tree.base import GitBaseTree
from reviewer.tree.plainrepo import git

RULES = load_rules(RULES_DIR)
CASES = [(rule, example) for rule in RULES for example in rule.examples]
AUTHOR = Person("Example Author", "author@example.org")


def series_of(example: Example) -> Series:
    total = len(example.patches)
    patches = tuple(
        Patch(index=n, total=total, subject=f"example {example.name} {n}/{total}", msgid=f"{example.name}-{n}@example.org",
              author=AUTHOR, date=None, message=f"example {n}\n\nSigned-off-by: {AUTHOR.name} <{AUTHOR.email}>\n",
              diff=diff, files=parse_diff(diff, f"patch {n}"))
        for n, diff in enumerate(example.patches, 1)
    )
    return Series(subject=f"example {example.name}", version=1, msgid=patches[0].msgid, author=AUTHOR, date=None,
                  total=total, patches=patches)


def tree_of(example: Example, where: Path) -> GitBaseTree | None:
    """The example's tree committed in a fresh repository (the base), its patches then applied in the work tree."""
    if example.tree is None:
        return None
    repo = where / "linux"
    for path, text in example.tree.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    repo.mkdir(exist_ok=True)
    git(repo, "init", "-q", "-b", "master")
    git(repo, "add", "-A", "-f")
    git(repo, "commit", "-q", "--allow-empty", "--no-verify", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    for n, diff in enumerate(example.patches, 1):
        (where / f"{n}.diff").write_text(diff)
        git(repo, "apply", "--index", str(where / f"{n}.diff"))
    return GitBaseTree(repo, base)


def verify(rule: Rule, example: Example, where: Path) -> list[Finding]:
    """Assert that RULE finds what EXAMPLE expects; return the findings."""
    assert example.patches, f"{rule.id}: example {example.name} has no patches to run"
    check_examples(rule)
    found = list(evaluate((rule,), series_of(example), tree_of(example, where)))
    assert Counter(f.rule for f in found) == Counter(example.expect), [f"{f.rule} [{f.level}]: {f.message}" for f in found]
    declared = {f"{rule.id}/{req.id}": req.level or rule.level for req in rule.requires}
    # Not `unverified` (no tree: give one) nor a bisection warning: the finding the rule is about.
    assert [(f.rule, f.level) for f in found] == [(f.rule, declared[f.rule]) for f in found], found
    return found


@pytest.mark.parametrize(("rule", "example"), CASES, ids=[f"{r.id}/{e.name}" for r, e in CASES])
def test_example(rule: Rule, example: Example, tmp_path: Path) -> None:
    verify(rule, example, tmp_path)


def test_every_rule_that_finds_something_shows_a_finding_and_a_clean_series() -> None:
    for rule in RULES:
        if rule.requires:  # overflow-kunit only chooses tests: it has no finding to show
            assert any(e.expect for e in rule.examples), f"{rule.id}: no example with a finding"
            assert any(not e.expect for e in rule.examples), f"{rule.id}: no example without findings"


def test_a_wrong_expectation_fails(tmp_path: Path) -> None:
    rule = {r.id: r for r in RULES}["vdso-getrandom-new-arch"]
    bad = next(e for e in rule.examples if e.expect)
    with pytest.raises(AssertionError):
        verify(rule, dataclasses.replace(bad, expect=()), tmp_path / "a")
    # Without its tree the same series is only `unverified` (info): the level is checked too.
    with pytest.raises(AssertionError):
        verify(rule, dataclasses.replace(bad, tree=None), tmp_path / "b")


def test_a_patch_that_does_not_fit_its_tree_fails(tmp_path: Path) -> None:
    rule = {r.id: r for r in RULES}["syscall-wiring"]
    bad = next(e for e in rule.examples if e.tree is not None)
    assert bad.tree is not None
    tree = {path: text.replace("463", "400") for path, text in bad.tree.items()}
    with pytest.raises(CommandError, match="patch does not apply|patch failed"):
        verify(rule, dataclasses.replace(bad, tree=tree), tmp_path)


# --- the schema of [[example]] -----------------------------------------------------------------

RULE = """\
schema = 1
id = "x"
level = "error"
summary = "s"
why = "w"
[trigger]
any_of = [{ path = '^lib/(?P<name>\\w+)\\.c$', change = "added" }]
[[require]]
id = "built"
path = '^lib/Makefile$'
added_line = '{name}\\.o'
or_in_base = true
message = "lib/{name}.c is not built"
"""
DIFF = """\
diff --git a/lib/foo.c b/lib/foo.c
new file mode 100644
--- /dev/null
+++ b/lib/foo.c
@@ -0,0 +1 @@
+int foo;
"""


def load(tmp_path: Path, example: str) -> Rule:
    path = tmp_path / "x.toml"
    path.write_text(RULE + "[[example]]\n" + example)
    return load_rule(path)


def error_of(tmp_path: Path, example: str) -> str:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, example)
    return info.value.message.removeprefix(f"{tmp_path / 'x.toml'}: ")


def test_an_example_loads_with_its_patches_and_tree(tmp_path: Path) -> None:
    rule = load(tmp_path, f'name = "e"\nexpect = ["x/built"]\npatches = [\'\'\'\n{DIFF}\'\'\']\n[example.tree]\n"lib/Makefile" = '
                          '"obj-y += bar.o\\n"\n')
    (example,) = rule.examples
    assert (example.name, example.expect, example.patches) == ("e", ("x/built",), (DIFF,))
    assert example.tree == {"lib/Makefile": "obj-y += bar.o\n"}
    assert [f.rule for f in verify(rule, example, tmp_path)] == ["x/built"]
    assert load(tmp_path, 'name = "e"\nexpect = []\n').examples[0].patches == ()  # only shown, not run


def test_example_errors_name_the_example_and_the_key(tmp_path: Path) -> None:
    assert error_of(tmp_path, 'name = "e"\nexpect = ["x/nope"]\n') == (
        "[[example]] #1 (e): expect: 'x/nope' is not a finding of this rule (its findings: x/built)")
    assert error_of(tmp_path, 'name = "e"\npatches = ["not a diff"]\n') == (
        "[[example]] #1: patches: #1: expected a diff as git writes it (`diff --git a/<path> b/<path>`, ---, +++, @@ hunks)")
    assert error_of(tmp_path, 'name = "e"\npatches = [1]\n').startswith("[[example]] #1: patches: expected a list of strings")
    assert error_of(tmp_path, f"name = \"e\"\npatches = ['''\n{DIFF}''']\ntree = {{ \"../x\" = \"\" }}\n") == (
        "[[example]] #1: tree: '../x': expected a relative path (a/b/c, no ., .. or empty parts)")
    assert error_of(tmp_path, f"name = \"e\"\npatches = ['''\n{DIFF}''']\ntree = {{ lib = {{ Makefile = \"\" }} }}\n") == (
        "[[example]] #1: tree: 'lib': expected the file's text (a string), got a table")
    assert error_of(tmp_path, 'name = "e"\ntree = {}\n') == "[[example]] #1: tree: a tree needs patches to apply to it"


def test_a_damaged_diff_is_found_by_review_rules_check(tmp_path: Path) -> None:
    """Loading checks only a diff's shape (a review never reads examples); `review rules --check` parses them."""
    damaged = DIFF.replace("@@ -0,0 +1 @@", "@@ -0,0 +1,3 @@")
    rule = load(tmp_path, f"name = \"e\"\npatches = ['''\n{damaged}''']\n")
    with pytest.raises(ConfigError) as info:
        check_rules_dir(tmp_path)
    assert info.value.message.startswith(f"{rule.source}: [[example]] #1 (e): patches: #1: corrupt diff (hunk @@ -0,0 +1,3 @@")
    load(tmp_path, f"name = \"e\"\npatches = ['''\n{DIFF}''']\n")
    assert check_rules_dir(tmp_path) == [f"{rule.source}: ok (x, 1 requirements)"]


def test_an_empty_tree_is_a_base_with_no_files(tmp_path: Path) -> None:
    """`tree = {}`: the requirement is looked for in a base that has nothing, so it is a finding, not `unverified`."""
    rule = load(tmp_path, f'name = "e"\nexpect = ["x/built"]\npatches = [\'\'\'\n{DIFF}\'\'\']\ntree = {{}}\n')
    (finding,) = verify(rule, rule.examples[0], tmp_path)
    assert finding.level is Level.ERROR
