"""reviewer.config: git config + .reviewer.toml -> Config, and applying it to findings."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reviewer import config
from reviewer.errors import ConfigError
from reviewer.model import Finding, Level
from reviewer.rules.doc import check_rules_dir, list_rules
from tests.conftest import git

FINDINGS = [
    Finding("subject-format/prefix", Level.WARNING, "no prefix"),
    Finding("cover-letter", Level.WARNING, "no cover"),
    Finding("vdso-getrandom-new-arch/tools-arch-symlink", Level.WARNING, "no symlink"),
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    return tmp_path


def test_git_config(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    rules, more = tmp_path_factory.mktemp("rules"), tmp_path_factory.mktemp("more")
    git(repo, "config", "--add", "reviewer.rules", str(rules))
    git(repo, "config", "--add", "reviewer.rules", str(more))
    git(repo, "config", "--add", "reviewer.disable", "cover-letter")
    git(repo, "config", "reviewer.level.subject-format", "info")
    cfg = config.load(repo)
    assert cfg.rule_dirs == (rules, more)
    assert cfg.disable == {"cover-letter"}
    assert [(f.rule, f.level) for f in config.apply(cfg, FINDINGS)] == [
        ("subject-format/prefix", Level.INFO), ("vdso-getrandom-new-arch/tools-arch-symlink", Level.WARNING)]


def test_requirement_level_beats_rule_level() -> None:
    cfg = config.Config(levels={"vdso-getrandom-new-arch": Level.ERROR, "vdso-getrandom-new-arch/tools-arch-symlink": Level.INFO})
    assert config.apply(cfg, FINDINGS[2:])[0].level is Level.INFO


def test_bad_level_names_the_key(repo: Path) -> None:
    git(repo, "config", "reviewer.level.cover-letter", "fatal")
    with pytest.raises(ConfigError, match=r"reviewer\.level\.cover-letter: expected one of error, warning, info"):
        config.load(repo)


def test_tree_toml(repo: Path, tmp_path: Path) -> None:
    tree = tmp_path / "linux"
    tree.mkdir()
    (tree / ".reviewer.toml").write_text('[rules]\ndisable = ["cover-letter"]\nlevels = { "changelog" = "info" }\ndirs = ["tools/rules"]\n')
    cfg = config.load(repo, tree)
    assert cfg.rule_dirs == (tree / "tools/rules",)
    assert cfg.levels["changelog"] is Level.INFO and "cover-letter" in cfg.disable


@pytest.mark.parametrize(("text", "fragment"), [
    ("[rule]\n", "unknown key 'rule'"),
    ("[rules]\nenable = []\n", "[rules]: unknown key 'enable'"),
    ('[rules]\ndisable = "x"\n', "[rules]: disable: expected a list of strings"),
    ('[rules]\nlevels = { x = "loud" }\n', "levels.x: expected one of error, warning, info"),
    ("[rules\n", "cannot read it"),
])
def test_tree_toml_errors(repo: Path, tmp_path: Path, text: str, fragment: str) -> None:
    (tmp_path / ".reviewer.toml").write_text(text)
    with pytest.raises(ConfigError) as exc:
        config.load(repo, tmp_path)
    assert fragment in exc.value.message and ".reviewer.toml" in exc.value.message


def test_validate_ids() -> None:
    config.validate_ids(config.Config(disable=frozenset({"cover-letter/x"})), ["cover-letter"])
    with pytest.raises(ConfigError, match="reviewer.disable: unknown rule or check 'nope'"):
        config.validate_ids(config.Config(disable=frozenset({"nope"})), ["cover-letter"])


def test_list_rules_shows_rules_and_checks() -> None:
    text = list_rules()
    for fragment in ("syscall-wiring [error] (rule", "requires syscall-wiring/prototype [error]", "syscall-cond [error] (check)",
                     "fixes-tag [error] (check)", "level fixes-tag/unknown: warning", "PASS:", "why:"):
        assert fragment in text


def test_check_rules_dir(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text('schema = 1\nid = "x"\nlevel = "info"\nsummary = "s"\nwhy = "w"\n'
                                     '[trigger]\nany_of = [{ paht = "a" }]\n')
    with pytest.raises(ConfigError, match=r"x\.toml: \[trigger\] any_of #1: unknown key 'paht'"):
        check_rules_dir(tmp_path)
    (tmp_path / "x.toml").write_text('schema = 1\nid = "x"\nlevel = "info"\nsummary = "s"\nwhy = "w"\n'
                                     '[trigger]\nany_of = [{ path = "a" }]\n')
    assert check_rules_dir(tmp_path) == [f"{tmp_path / 'x.toml'}: ok (x, 0 requirements)"]


def test_every_documented_key_is_known(repo: Path, tmp_path: Path) -> None:
    """The keys docs/reference.md documents load; their spelling does not matter to git (nor to us)."""
    for key, value in [("reviewer.rules", str(tmp_path)), ("reviewer.disable", "cover-letter"), ("reviewer.level.changelog", "info"),
                       ("reviewer.checkpatchIgnore", "LONG_LINE"), ("reviewer.reuseWorktrees", "false"), ("reviewer.logDir", "logs"),
                       ("reviewer.resultCache", "true"), ("reviewer.LOREURL", "https://lore.kernel.org/all/"),
                       ("reviewer.cacheminutes", "0")]:
        git(repo, "config", "--add", key, value)
    assert config.load(repo).disable == {"cover-letter"}


@pytest.mark.parametrize(("key", "value", "message", "hint"), [
    ("reviewer.cachMinutes", "5", "git config reviewer.cachminutes: unknown key", "did you mean reviewer.cacheMinutes?"),
    ("reviewer.loreurl2", "x", "git config reviewer.loreurl2: unknown key", "did you mean reviewer.loreUrl?"),
    ("reviewer.levels.changelog", "info", "git config reviewer.levels.changelog: unknown key", "reviewer.level.<id>"),
    ("reviewer.level", "info", "git config reviewer.level: unknown key", "did you mean reviewer.level.<id>?"),
    ("reviewer.cacheMinutes", "-3", "git config reviewer.cacheMinutes: expected a number of minutes (0 or more), got '-3'",
     "0: always fetch"),
    ("reviewer.cacheMinutes", "inf", "expected a number of minutes (0 or more), got 'inf'", ""),
    ("reviewer.loreUrl", "ftp://lore.kernel.org/all/", "git config reviewer.loreUrl: expected an http:// or https:// URL", ""),
    ("reviewer.loreUrl", "http://", "git config reviewer.loreUrl: expected an http:// or https:// URL", ""),
    ("reviewer.rules", "/nonexistent/rules", "git config reviewer.rules /nonexistent/rules: no such directory", ""),
])
def test_unknown_keys_and_bad_values(repo: Path, key: str, value: str, message: str, hint: str) -> None:
    git(repo, "config", key, value)
    with pytest.raises(ConfigError) as exc:
        config.load(repo)
    assert message in exc.value.message and hint in exc.value.hint


def test_missing_directories_are_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x\n")
    with pytest.raises(ConfigError, match=r"^-C .*/gone: no such directory$"):
        config.load(tmp_path / "gone")
    with pytest.raises(ConfigError, match=r"^--tree .*/file: not a directory$"):
        config.load(tmp_path, tmp_path / "file")


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("REVIEWER_LORE_RETRIES", "", 3), ("REVIEWER_LORE_RETRIES", "0", 0), ("REVIEWER_LORE_RETRIES", " 5 ", 5),
    ("REVIEWER_LORE_BACKOFF", "0", 0.0), ("REVIEWER_LORE_TIMEOUT", "0.5", 0.5), ("REVIEWER_LORE_DEADLINE", "", 120.0),
    ("REVIEWER_SMTP_DEADLINE", "30", 30.0),
])
def test_environment_numbers(monkeypatch: pytest.MonkeyPatch, name: str, value: str, expected: float) -> None:
    monkeypatch.setenv(name, value)
    assert config.env_number(name) == expected
    config.check_environment()


@pytest.mark.parametrize(("name", "value", "expect"), [
    ("REVIEWER_LORE_RETRIES", "-1", "a whole number, 0 or more"), ("REVIEWER_LORE_RETRIES", "three", "a whole number"),
    ("REVIEWER_LORE_BACKOFF", "-0.5", "a number of seconds, 0 or more"), ("REVIEWER_LORE_TIMEOUT", "0", "above 0"),
    ("REVIEWER_LORE_DEADLINE", "1e999", "above 0"), ("REVIEWER_SMTP_DEADLINE", "NaN", "above 0"),
    ("REVIEWER_BOOT_ACCEL", "TCG", "expected tcg"),
])
def test_bad_environment_names_the_variable(monkeypatch: pytest.MonkeyPatch, name: str, value: str, expect: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as exc:
        config.check_environment()
    assert exc.value.message.startswith(f"{name}={value!r}: expected") and expect in exc.value.message
    assert exc.value.hint == f"fix or unset {name} in the environment"


def test_bad_boot_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x\n")
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", str(tmp_path / "file"))
    with pytest.raises(ConfigError, match="REVIEWER_BOOT_CACHE=.*: not a directory"):
        config.check_environment()
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", str(tmp_path / "not-yet"))  # made when first needed
    config.check_environment()


# --- levels: reviewer.<id>.level, the id a subsection (git refuses `/` in a key name) -------------

def test_a_rule_id_with_a_slash_is_a_subsection(repo: Path) -> None:
    refused = subprocess.run(["git", "-C", str(repo), "config", "reviewer.level.checkpatch/LONG_LINE", "warning"], capture_output=True,
                             text=True)
    assert refused.returncode != 0 and "invalid key" in refused.stderr  # why the subsection form exists
    git(repo, "config", "reviewer.checkpatch/LONG_LINE.level", "info")
    git(repo, "config", "reviewer.vdso-getrandom-new-arch/tools-arch-symlink.level", "error")
    git(repo, "config", "reviewer.cover-letter.level", "info")
    cfg = config.load(repo)
    assert dict(cfg.levels) == {"checkpatch/LONG_LINE": Level.INFO, "vdso-getrandom-new-arch/tools-arch-symlink": Level.ERROR,
                                "cover-letter": Level.INFO}
    found = [*FINDINGS, Finding("checkpatch/LONG_LINE", Level.WARNING, "line over 100 columns")]
    assert [(f.rule, f.level) for f in config.apply(cfg, found)] == [
        ("subject-format/prefix", Level.WARNING), ("cover-letter", Level.INFO),
        ("vdso-getrandom-new-arch/tools-arch-symlink", Level.ERROR), ("checkpatch/LONG_LINE", Level.INFO)]
    config.validate_ids(cfg, ["checkpatch", "vdso-getrandom-new-arch", "cover-letter"])


def test_the_subsection_form_beats_the_older_one(repo: Path) -> None:
    git(repo, "config", "reviewer.changelog.level", "error")
    git(repo, "config", "reviewer.level.changelog", "info")  # read after it, and still the weaker form
    git(repo, "config", "reviewer.level.cover-letter", "info")  # the older form alone still works
    assert dict(config.load(repo).levels) == {"changelog": Level.ERROR, "cover-letter": Level.INFO}


def test_a_bad_subsection_level_names_its_key(repo: Path) -> None:
    git(repo, "config", "reviewer.checkpatch/LONG_LINE.level", "loud")
    with pytest.raises(ConfigError, match=r"^reviewer\.checkpatch/LONG_LINE\.level: expected one of error, warning, info, got 'loud'"):
        config.load(repo)


@pytest.mark.parametrize(("key", "message"), [
    ("reviewer.checkpatch/LONG_LINE.levle", "git config reviewer.checkpatch/LONG_LINE.levle: unknown key"),
    ("reviewer.checkpatch/LONG_LINE.levels", "git config reviewer.checkpatch/LONG_LINE.levels: unknown key"),
])
def test_unknown_level_keys_point_at_the_subsection_form(repo: Path, key: str, message: str) -> None:
    git(repo, "config", key, "info")
    with pytest.raises(ConfigError) as exc:
        config.load(repo)
    assert exc.value.message == message
    assert "reviewer.<id>.level (reviewer.level.<id> for an id without /)" in exc.value.hint


def test_an_unknown_id_is_named_by_a_key_git_can_store() -> None:
    with pytest.raises(ConfigError, match=r"^reviewer\.nope/x\.level: unknown rule or check 'nope/x'$"):
        config.validate_ids(config.Config(levels={"nope/x": Level.INFO}), ["cover-letter"])
    with pytest.raises(ConfigError, match=r"^reviewer\.level\.nope: unknown rule or check 'nope'$"):
        config.validate_ids(config.Config(levels={"nope": Level.INFO}), ["cover-letter"])
