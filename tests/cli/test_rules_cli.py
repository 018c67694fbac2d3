"""`review rules`, user rule directories and configuration, through the real CLI."""
from __future__ import annotations

from pathlib import Path

from reviewer.checks import CHECKS
from reviewer.errors import ExitStatus
from reviewer.rules import RULES_DIR
from tests.conftest import SERIES, git
from tests.helpers import review

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"

USER_RULE = """schema = 1
id = "no-loongarch-kconfig"
level = "warning"
summary = "Our subsystem wants to hear about LoongArch Kconfig changes"
why = "A house rule, to show that users' rules load."
[trigger]
any_of = [{ path = '^arch/loongarch/Kconfig$', added_line = 'select\\s+(?P<sym>\\w+)' }]
[[require]]
id = "never"
path = '^NEVER$'
file = "added"
message = "arch/loongarch/Kconfig now selects {sym}"
"""


def test_rules_lists_every_rule_and_check(tmp_path: Path) -> None:
    result = review("rules", tmp=tmp_path / "tmp")
    assert result.rc == 0, result.stderr
    for rule in RULES_DIR.glob("*.toml"):
        assert f"{rule.stem} [" in result.stdout
    for check in CHECKS:
        assert f"{check} [" in result.stdout
    assert "why:" in result.stdout and "summary:" in result.stdout
    # what a rule makes run: selftests and in-kernel tests, and when
    assert "  selftests: vDSO:vdso_test_getrandom, vDSO:vdso_test_chacha (with --run-tests)" in result.stdout
    assert "  in-kernel test overflow (kunit, CONFIG_OVERFLOW_KUNIT_TEST=y, lib/overflow_kunit.c; with --boot)" in result.stdout


def test_rules_check_accepts_the_shipped_rules(tmp_path: Path) -> None:
    result = review("rules", "--check", RULES_DIR, tmp=tmp_path / "tmp")
    assert result.rc == 0 and result.stdout.count(": ok (") == len(list(RULES_DIR.glob("*.toml")))


def test_rules_check_names_the_broken_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    bad = USER_RULE.replace('id = "no-loongarch-kconfig"', 'id = "bad"').replace('level = "warning"', 'level = "fatal"')
    (tmp_path / "r" / "bad.toml").write_text(bad)
    result = review("rules", "--check", tmp_path / "r", tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.CONFIG, "bad.toml: level: expected one of error, warning, info, got 'fatal'")


def test_a_users_rule_directory_is_loaded(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "no-loongarch-kconfig.toml").write_text(USER_RULE)
    doc = review(DEMO, "--rules", tmp_path / "r", "--format", "json", tmp=tmp_path / "tmp").json()
    mine = [f for f in doc["findings"] if f["rule"].startswith("no-loongarch-kconfig")]
    assert [(f["rule"], f["level"], f["message"]) for f in mine] == [
        ("no-loongarch-kconfig/never", "warning", "arch/loongarch/Kconfig now selects VDSO_GETRANDOM")]


def test_a_broken_user_rule_stops_before_anything_else(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "oops.toml").write_text("schema = 1\nid = 'oops'\n[trigger]\npaht = 'x'\n")
    result = review("does-not-exist.mbox", "--rules", tmp_path / "r", cwd=tmp_path, tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.CONFIG and "oops.toml" in result.stderr  # the rule error wins over the missing file


def test_git_config_disables_and_relevels(kernel_repo: Path, tmp_path: Path) -> None:
    before = {f["rule"]: f["level"] for f in review(DEMO, "-C", kernel_repo, "--format", "json", tmp=tmp_path / "t0").json()["findings"]}
    assert before["subject-format/length"] == "info"
    git(kernel_repo, "config", "reviewer.disable", "kconfig-symbol-exists")
    git(kernel_repo, "config", "reviewer.level.subject-format", "error")
    result = review(DEMO, "-C", kernel_repo, "--format", "json", tmp=tmp_path / "t1")
    after = {f["rule"]: f["level"] for f in result.json()["findings"]}
    assert "kconfig-symbol-exists/unverified" not in after and after["subject-format/length"] == "error"
    assert result.rc == ExitStatus.FINDINGS


def test_bad_config_is_exit_3(kernel_repo: Path, tmp_path: Path) -> None:
    git(kernel_repo, "config", "reviewer.level.subject-format", "loud")
    result = review(DEMO, "-C", kernel_repo, tmp=tmp_path / "tmp")
    result.assert_one_line_error(ExitStatus.CONFIG, "reviewer.level.subject-format: expected one of")


def test_reviewer_toml_in_the_tree(kernel_repo: Path, tmp_path: Path) -> None:
    (kernel_repo / ".reviewer.toml").write_text('[rules]\ndisable = ["subject-format"]\n')
    doc = review(DEMO, "--tree", kernel_repo, "--format", "json", tmp=tmp_path / "tmp").json()
    assert not [f for f in doc["findings"] if f["rule"].startswith("subject-format")]
    (kernel_repo / ".reviewer.toml").write_text('[rules]\ndisabel = ["x"]\n')
    result = review(DEMO, "--tree", kernel_repo, tmp=tmp_path / "tmp2")
    result.assert_one_line_error(ExitStatus.CONFIG, "unknown key 'disabel'")
