"""Rule files: the shipped ones load; every malformed one is a ConfigError naming file, table and key."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from reviewer.errors import ConfigError, ExitStatus
from reviewer.model import Level
from reviewer.rules import RULES_DIR, load_rule, load_rules

GOOD = """\
schema = 1
id = "x"
level = "error"
summary = "s"
why = "w"
[trigger]
any_of = [{ path = '^arch/(?P<arch>[a-z0-9]+)/include/asm/vdso/getrandom\\.h$', change = "added" }]
[[require]]
id = "kconfig-select"
path = '^arch/{arch}/Kconfig$'
added_line = '^\\s*select\\s+VDSO_GETRANDOM\\b'
or_in_base = true
message = "arch/{arch}/Kconfig does not select VDSO_GETRANDOM"
[[require]]
id = "lds-export"
path = '^arch/{arch}/.*vdso[^/]*\\.lds\\.S$'
added_line = '^\\s*__(vdso|kernel)_getrandom;'
message = "no export"
"""


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule files are named relative to the working directory, as a user would type them."""
    monkeypatch.chdir(tmp_path)


def write(tmp_path: Path, text: str, name: str = "x") -> Path:
    path = tmp_path / "rules" / f"{name}.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def error_of(tmp_path: Path, text: str, name: str = "x") -> str:
    with pytest.raises(ConfigError) as info:
        load_rule(write(tmp_path, text, name))
    assert info.value.status is ExitStatus.CONFIG
    assert info.value.hint
    return info.value.message


def test_shipped_rules_load() -> None:
    rules = load_rules(RULES_DIR)
    assert [r.id for r in rules] == sorted(p.stem for p in RULES_DIR.glob("*.toml"))
    vdso = {r.id: r for r in rules}["vdso-getrandom-new-arch"]
    assert [r.id for r in vdso.requires] == ["kconfig-select", "lds-export", "selftest-enable", "tools-arch-symlink"]
    assert vdso.selftests == ("vDSO:vdso_test_getrandom", "vDSO:vdso_test_chacha")
    assert vdso.captures == {"arch"}
    assert vdso.requires[3].level is Level.WARNING and vdso.requires[3].file == "symlink"
    symlink = vdso.requires[3].applies_if_base_has
    assert symlink is not None and symlink.fullmatch("tools/arch/x86/vdso") and not symlink.fullmatch("tools/arch/x86/vdso/x.S")


def test_good_rule_loads_with_defaults(tmp_path: Path) -> None:
    rule = load_rule(write(tmp_path, GOOD))
    assert (rule.id, rule.level, rule.scope, rule.references, rule.all_of) == ("x", Level.ERROR, "series", (), ())
    cond = rule.any_of[0]
    assert isinstance(cond.path, re.Pattern) and cond.change == "added" and cond.added_line is None
    kconfig = rule.requires[0]
    assert kconfig.or_in_base and kconfig.level is None and kconfig.bisect and kconfig.hint is None


def test_missing_directory_has_no_rules(tmp_path: Path) -> None:
    assert load_rules(tmp_path / "nowhere") == ()


def test_bad_regex_names_requirement_number_and_id(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace("_getrandom;'", "_getrandom;('"))
    assert msg.startswith("rules/x.toml: [[require]] #2 (lds-export): added_line: invalid regex: ")


def test_applies_if_base_has_is_a_regex_named_in_its_error(tmp_path: Path) -> None:
    text = GOOD.replace("id = \"lds-export\"\n", "id = \"lds-export\"\napplies_if_base_has = '^tools/arch/(['\n", 1)
    msg = error_of(tmp_path, text)
    assert msg.startswith("rules/x.toml: [[require]] #2 (lds-export): applies_if_base_has: invalid regex: "), msg


def test_unknown_key_in_trigger(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace("[trigger]\n", "[trigger]\npaht = 'a'\n"))
    assert msg == "rules/x.toml: [trigger]: unknown key 'paht'"


def test_unknown_key_in_condition(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace("{ path =", "{ paht = 'x', path ="))
    assert msg == "rules/x.toml: [trigger] any_of #1: unknown key 'paht'"


def test_unknown_key_at_top_and_in_require(tmp_path: Path) -> None:
    assert error_of(tmp_path, "colour = 1\n" + GOOD) == "rules/x.toml: unknown key 'colour'"
    msg = error_of(tmp_path, GOOD + "orinbase = true\n")
    assert msg == "rules/x.toml: [[require]] #2 (lds-export): unknown key 'orinbase'"


def test_bad_level(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace('level = "error"', 'level = "fatal"'))
    assert msg == "rules/x.toml: level: expected one of error, warning, info, got 'fatal'"


def test_id_must_match_file_name(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace('id = "x"', 'id = "foo"'))
    assert msg == "rules/x.toml: id 'foo' does not match the file name 'x'"


def test_schema_version(tmp_path: Path) -> None:
    assert error_of(tmp_path, GOOD.replace("schema = 1", "schema = 2")) == "rules/x.toml: schema: expected 1, got 2"
    msg = error_of(tmp_path, GOOD.replace("schema = 1\n", ""))
    assert msg == "rules/x.toml: schema: missing required key"


def test_wrong_types(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace('summary = "s"', "summary = 3"))
    assert msg == "rules/x.toml: summary: expected a string, got an integer 3"
    msg = error_of(tmp_path, GOOD.replace("or_in_base = true", 'or_in_base = "yes"'))
    assert msg == "rules/x.toml: [[require]] #1 (kconfig-select): or_in_base: expected a boolean, got a string 'yes'"
    msg = error_of(tmp_path, 'references = ["a", 2]\n' + GOOD)
    assert msg.startswith("rules/x.toml: references: expected a list of strings")


def test_bad_change_and_scope_and_file(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace('change = "added"', 'change = "created"'))
    assert msg.startswith("rules/x.toml: [trigger] any_of #1: change: expected one of any, added, modified")
    msg = error_of(tmp_path, 'scope = "file"\n' + GOOD)
    assert msg == "rules/x.toml: scope: expected one of series, patch, got 'file'"
    bad_file = GOOD.replace("added_line = '^\\s*__(vdso|kernel)_getrandom;'", 'file = "exists"')
    msg = error_of(tmp_path, bad_file)
    assert msg == "rules/x.toml: [[require]] #2 (lds-export): file: expected one of added, present, symlink, got 'exists'"


def test_trigger_regex_and_missing_trigger(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace("(?P<arch>", "(?P<arch"))
    assert msg.startswith("rules/x.toml: [trigger] any_of #1: path: invalid regex: ")
    start, end = GOOD.index("[trigger]"), GOOD.index("[[require]]")
    assert error_of(tmp_path, GOOD[:start] + GOOD[end:]) == "rules/x.toml: trigger: missing required key"
    msg = error_of(tmp_path, GOOD.replace("any_of = [{ path = '^arch", "any_of = [{ change = 'added' }]\n#"))
    assert msg == "rules/x.toml: [trigger] any_of #1: path: missing required key (a condition needs path, message or both)"


def test_requirement_needs_exactly_one_test(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD + 'file = "present"\n')
    assert msg == "rules/x.toml: [[require]] #2 (lds-export): needs exactly one of added_line, removed_line, file; got added_line, file"
    msg = error_of(tmp_path, GOOD.replace('message = "no export"\n', ""))
    assert msg == "rules/x.toml: [[require]] #2 (lds-export): message: missing required key"


def test_unknown_placeholder(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace("^arch/{arch}/Kconfig$", "^arch/{archh}/Kconfig$"))
    assert msg == "rules/x.toml: [[require]] #1 (kconfig-select): path: unknown placeholder {archh}; the trigger captures: arch"


def test_quantifier_braces_are_not_placeholders(tmp_path: Path) -> None:
    rule = load_rule(write(tmp_path, GOOD.replace("^arch/{arch}/Kconfig$", "^arch/{arch}/K{1,2}config$")))
    assert rule.requires[0].path == "^arch/{arch}/K{1,2}config$"


def test_or_in_base_with_removed_line(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace("added_line = '^\\s*select", "removed_line = '^\\s*select"))
    assert msg == ("rules/x.toml: [[require]] #1 (kconfig-select): or_in_base: "
                   "cannot be combined with removed_line (a base tree has no removed lines)")


def test_duplicate_requirement_ids(tmp_path: Path) -> None:
    msg = error_of(tmp_path, GOOD.replace('id = "lds-export"', 'id = "kconfig-select"'))
    assert msg == "rules/x.toml: [[require]]: duplicate requirement id 'kconfig-select'"


def test_selftests_and_examples(tmp_path: Path) -> None:
    rule = load_rule(write(tmp_path, GOOD + '[selftests]\nrun = ["vDSO:a"]\n[[example]]\nname = "e"\nexpect = ["x/lds-export"]\n'))
    assert rule.selftests == ("vDSO:a",) and rule.examples[0].expect == ("x/lds-export",)
    msg = error_of(tmp_path, GOOD + "[selftests]\nrun = [1]\n")
    assert msg.startswith("rules/x.toml: [selftests]: run: expected a list of strings")
    msg = error_of(tmp_path, GOOD + '[[example]]\nname = "e"\nexpected = []\n')
    assert msg == "rules/x.toml: [[example]] #1: unknown key 'expected'"


def test_invalid_toml(tmp_path: Path) -> None:
    assert error_of(tmp_path, "schema = = 1\n").startswith("rules/x.toml: invalid TOML: ")


def test_load_rules_stops_at_the_first_bad_file(tmp_path: Path) -> None:
    write(tmp_path, GOOD)
    write(tmp_path, GOOD.replace('id = "x"', 'id = "y"').replace("level = \"error\"", "level = 1"), "y")
    with pytest.raises(ConfigError, match=r"rules/y.toml: level: expected a string, got an integer 1"):
        load_rules(tmp_path / "rules")
