"""reviewer.config: git config + .reviewer.toml -> Config, and applying it to findings."""
from __future__ import annotations

from pathlib import Path

import pytest

from reviewer import config
from reviewer.errors import ConfigError
from reviewer.model import Finding, Level
from reviewer.rulesdoc import check_rules_dir, list_rules
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


def test_git_config(repo: Path) -> None:
    git(repo, "config", "--add", "reviewer.rules", "/srv/rules")
    git(repo, "config", "--add", "reviewer.rules", "/srv/more")
    git(repo, "config", "--add", "reviewer.disable", "cover-letter")
    git(repo, "config", "reviewer.level.subject-format", "info")
    cfg = config.load(repo)
    assert cfg.rule_dirs == (Path("/srv/rules"), Path("/srv/more"))
    assert cfg.disable == {"cover-letter"}
    assert [(f.rule, f.level) for f in config.apply(cfg, FINDINGS)] == [
        ("subject-format/prefix", Level.INFO), ("vdso-getrandom-new-arch/tools-arch-symlink", Level.WARNING)]


def test_requirement_level_beats_rule_level(repo: Path) -> None:
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
    for fragment in ("syscall-wiring [error] (rule", "requires syscall-wiring/cond-syscall [error]",
                     "fixes-tag [error] (check)", "level fixes-tag/unknown: warning", "PASS:", "why:"):
        assert fragment in text


def test_check_rules_dir(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text('schema = 1\nid = "x"\nlevel = "info"\nsummary = "s"\nwhy = "w"\n[trigger]\nany_of = [{ paht = "a" }]\n')
    with pytest.raises(ConfigError, match=r"x\.toml: \[trigger\] any_of #1: unknown key 'paht'"):
        check_rules_dir(tmp_path)
    (tmp_path / "x.toml").write_text('schema = 1\nid = "x"\nlevel = "info"\nsummary = "s"\nwhy = "w"\n[trigger]\nany_of = [{ path = "a" }]\n')
    assert check_rules_dir(tmp_path) == [f"{tmp_path / 'x.toml'}: ok (x, 0 requirements)"]
