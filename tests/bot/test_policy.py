"""reviewer/bot/policy.py: muted by default, validated with the key and file named, reloaded on change (a
broken file keeps the old policy), and the plan / may_mail decisions, with the time passed in."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from reviewer.bot.assemble import Assembled, Readiness
from reviewer.bot.policy import KEYS, Action, MailTo, Patchwork, Policies, Policy, Rfc, Sent, Verdict, load, may_mail, plan
from reviewer.errors import ConfigError
from reviewer.model import Level

NOW = 1_000_000.0
HOUR = 3600.0
FULL = """\
[bot]
home = "/var/lib/reviewer-bot"

[lists.netdev]
mirror = "/srv/lore/netdev"
stages = ["static", "apply", "build"]
arches = ["x86_64", "arm64"]
mail = "author+list"
patchwork = { url = "https://patchwork.example/api/1.2/", project = "netdevbpf", checks = true, token_file = "patchwork.token" }
rfc = "full"
embargo_hours = 24
max_mails_per_day = 20
max_mails_per_author_per_day = 3
quiet_on_clean = false
threshold = "error"
ignore_from = ["bot@example.org", ".*-robot@.*"]
settle = 600
bench_runs = 5
maintainers = ["Mai@Example.org"]
"""


def series(**kw: object) -> Assembled:
    base = Assembled(key="netdev/s.0@example.org", list="netdev", identity="id", revision=1, root="s.0@example.org",
                     subject="net: do it", sender="ann@example.org", expected=2, parts=("s.0", "s.1", "s.2"), missing=(),
                     rfc=False, resend=False, patch_ids=("a", "b"), last_part_at=NOW - 10 * HOUR, state=Readiness.READY)
    return replace(base, **kw)  # type: ignore[arg-type]


def write(tmp_path: Path, text: str, name: str = "policy.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_list_without_a_policy_is_muted(tmp_path: Path) -> None:
    policies = load(write(tmp_path, "[lists.netdev]\nmail = 'author'\n"))
    other = policies.get("lkml")
    assert other == Policy("lkml")
    assert (other.mail, other.stages, other.rfc, other.quiet_on_clean, other.settle) == (MailTo.OFF, ("static",), Rfc.STATIC, True, 1800)
    assert may_mail(other, series(list="lkml"), [Level.ERROR], [], NOW).verdict is Verdict.NEVER
    assert Policy("x").patchwork is None and Policy("x").embargo_hours == 0


def test_every_key_is_read(tmp_path: Path) -> None:
    p = load(write(tmp_path, FULL)).get("netdev")
    assert p == Policy("netdev", ("static", "apply", "build"), ("x86_64", "arm64"), MailTo.AUTHOR_LIST,
                       Patchwork("https://patchwork.example/api/1.2/", "netdevbpf", checks=True, token_file="patchwork.token"),
                       Rfc.FULL, 24.0, 20, 3,
                       quiet_on_clean=False, threshold=Level.ERROR, ignore_from=("bot@example.org", ".*-robot@.*"), settle=600.0,
                       maintainers=("mai@example.org",), bench_runs=5)


@pytest.mark.parametrize(("text", "said"), [
    ("[lists.netdev]\nmial = 'author'\n", "[lists.netdev] mial: unknown key"),
    ("[lists.netdev]\nmail = 'everyone'\n", "[lists.netdev] mail: 'everyone' is not one of off | author | author+list"),
    ("[lists.netdev]\nstages = ['static', 'boot']\n", "[lists.netdev] stages: unknown value 'boot'"),
    ("[lists.netdev]\nstages = []\n", "[lists.netdev] stages: empty"),
    ("[lists.netdev]\nrfc = 'some'\n", "[lists.netdev] rfc: 'some' is not one of skip | static | full"),
    ("[lists.netdev]\nembargo_hours = -1\n", "[lists.netdev] embargo_hours: expected a number >= 0"),
    ("[lists.netdev]\nmax_mails_per_day = 2.5\n", "[lists.netdev] max_mails_per_day: expected a whole number >= 0"),
    ("[lists.netdev]\nquiet_on_clean = 'yes'\n", "[lists.netdev] quiet_on_clean: expected true or false"),
    ("[lists.netdev]\nthreshold = 'info'\n", "[lists.netdev] threshold: 'info' is not one of error | warning"),
    ("[lists.netdev]\nignore_from = ['(']\n", "[lists.netdev] ignore_from: '(': invalid regex"),
    ("[lists.netdev]\npatchwork = { url = 'u', project = 'p', token = 'x' }\n", "[lists.netdev] patchwork.token: unknown key"),
    ("[lists.netdev]\npatchwork = { url = 'u' }\n", "[lists.netdev] patchwork.project: expected a non-empty string"),
    ("[listz.netdev]\n", "[listz]: unknown table"),
    ("[lists.netdev\n", "not valid TOML"),
])
def test_validation_names_the_key_and_the_file(tmp_path: Path, text: str, said: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert caught.value.message.startswith(f"{path}: ")
    assert said in caught.value.message


def _touch_later(path: Path, text: str) -> None:
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_reloaded_reads_a_changed_file_and_keeps_the_old_policy_when_broken(tmp_path: Path) -> None:
    path = write(tmp_path, "[lists.netdev]\nmail = 'author'\n")
    first = load(path)
    assert first.reloaded() is first  # unchanged: not read again
    _touch_later(path, "[lists.netdev]\nmail = 'author+list'\n")
    second = first.reloaded()
    assert second.get("netdev").mail is MailTo.AUTHOR_LIST and second.error is None
    _touch_later(path, "[lists.netdev]\nmail = 'loud'\n")
    broken = second.reloaded()
    assert broken.get("netdev").mail is MailTo.AUTHOR_LIST
    assert broken.error is not None and "mail: 'loud'" in broken.error and str(path) in broken.error
    assert broken.reloaded() is broken  # the broken file is not read again until it changes
    path.unlink()
    gone = broken.reloaded()
    assert gone.get("netdev").mail is MailTo.AUTHOR_LIST and gone.error is not None and "cannot read it" in gone.error
    write(tmp_path, "[lists.netdev]\nmail = 'off'\n")
    fixed = gone.reloaded()
    assert fixed.get("netdev").mail is MailTo.OFF and fixed.error is None


def test_reloaded_sees_a_change_with_the_same_mtime(tmp_path: Path) -> None:
    path = write(tmp_path, "[lists.netdev]\nmail = 'author'\n")
    first = load(path)
    stat = path.stat()
    path.write_text("[lists.netdev]\nmail = 'off'   \n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert first.reloaded().get("netdev").mail is MailTo.OFF


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read it"):
        load(tmp_path / "nope.toml")
    assert Policies(tmp_path / "nope.toml").reloaded().error is not None


FULL_POLICY = Policy("netdev", ("static", "apply", "build", "guest"), ("x86_64",), MailTo.AUTHOR, rfc=Rfc.STATIC,
                     ignore_from=("bot@example.org", r".*-robot@intel\.com"))


def test_plan_of_a_complete_series_runs_the_policy_stages() -> None:
    p = plan(series(), FULL_POLICY, NOW)
    assert (p.action, p.stages, p.arches, p.mailable) == (Action.RUN, ("static", "apply", "build", "guest"), ("x86_64",), True)
    assert plan(series(), replace(FULL_POLICY, stages=("static", "apply")), NOW).arches == ()  # no build, no arch
    assert not plan(series(), replace(FULL_POLICY, mail=MailTo.OFF), NOW).mailable


def test_plan_of_an_incomplete_series_is_static_and_never_mailed() -> None:
    p = plan(series(state=Readiness.INCOMPLETE, missing=(2,)), FULL_POLICY, NOW)
    assert (p.action, p.stages, p.mailable) == (Action.RUN, ("static",), False)
    assert "incomplete" in p.reason and "2" in p.reason
    waiting = plan(series(state=Readiness.WAITING, missing=(2,)), FULL_POLICY, NOW)
    assert (waiting.action, waiting.stages) == (Action.WAIT, ())


@pytest.mark.parametrize(("rfc", "action", "stages"), [
    (Rfc.SKIP, Action.SKIP, ()),
    (Rfc.STATIC, Action.RUN, ("static",)),
    (Rfc.FULL, Action.RUN, ("static", "apply", "build", "guest")),
])
def test_plan_of_an_rfc_follows_its_rfc_value(rfc: Rfc, action: Action, stages: tuple[str, ...]) -> None:
    p = plan(series(rfc=True), replace(FULL_POLICY, rfc=rfc), NOW)
    assert (p.action, p.stages) == (action, stages)
    assert plan(series(rfc=False), replace(FULL_POLICY, rfc=rfc), NOW).stages == FULL_POLICY.stages


def test_plan_of_a_resend_or_duplicate_reuses() -> None:
    resend = plan(series(resend=True, duplicate_of="netdev/old@example.org"), FULL_POLICY, NOW)
    assert (resend.action, resend.stages, resend.mailable) == (Action.REUSE, (), False)
    assert "RESEND of netdev/old@example.org" in resend.reason
    same = plan(series(duplicate_of="netdev/old@example.org"), FULL_POLICY, NOW)
    assert same.action is Action.REUSE and "patch-id" in same.reason


@pytest.mark.parametrize("sender", ["bot@example.org", "BOT@Example.org", "lkp-robot@intel.com"])
def test_plan_skips_an_ignored_sender(sender: str) -> None:
    p = plan(series(sender=sender), FULL_POLICY, NOW)
    assert p.action is Action.SKIP and sender in p.reason
    assert plan(series(sender="robot@intel.com.evil.org"), FULL_POLICY, NOW).action is Action.RUN  # a regex matches whole addresses


def test_may_mail_off_author_and_author_list() -> None:
    off = may_mail(replace(FULL_POLICY, mail=MailTo.OFF), series(), [Level.ERROR], [], NOW)
    assert off.verdict is Verdict.NEVER and "off" in off.reason
    author = may_mail(FULL_POLICY, series(), [Level.ERROR], [], NOW)
    assert (author.verdict, author.to_list) == (Verdict.SEND, False)
    both = may_mail(replace(FULL_POLICY, mail=MailTo.AUTHOR_LIST), series(), [Level.ERROR], [], NOW)
    assert (both.verdict, both.to_list, both.send) == (Verdict.SEND, True, True)


def test_may_mail_never_for_incomplete_duplicate_rfc_skip_stopped() -> None:
    for s, pol in ((series(state=Readiness.INCOMPLETE, missing=(2,)), FULL_POLICY), (series(duplicate_of="k"), FULL_POLICY),
                   (series(rfc=True), replace(FULL_POLICY, rfc=Rfc.SKIP)), (series(sender="bot@example.org"), FULL_POLICY)):
        assert may_mail(pol, s, [Level.ERROR], [], NOW).verdict is Verdict.NEVER, s
    stopped = may_mail(FULL_POLICY, series(), [Level.ERROR], [], NOW, stopped=True)
    assert stopped.verdict is Verdict.NEVER and "stopped" in stopped.reason


def test_may_mail_is_quiet_on_clean_below_the_threshold() -> None:
    assert may_mail(FULL_POLICY, series(), [], [], NOW).verdict is Verdict.NEVER
    assert may_mail(FULL_POLICY, series(), [Level.INFO], [], NOW).verdict is Verdict.NEVER
    assert may_mail(FULL_POLICY, series(), [Level.WARNING], [], NOW).verdict is Verdict.SEND
    errors_only = replace(FULL_POLICY, threshold=Level.ERROR)
    assert may_mail(errors_only, series(), [Level.WARNING], [], NOW).verdict is Verdict.NEVER
    assert may_mail(errors_only, series(), [Level.WARNING, Level.ERROR], [], NOW).verdict is Verdict.SEND
    assert may_mail(replace(FULL_POLICY, quiet_on_clean=False), series(), [], [], NOW).verdict is Verdict.SEND


def test_may_mail_waits_for_the_embargo() -> None:
    pol = replace(FULL_POLICY, embargo_hours=24)
    early = may_mail(pol, series(last_part_at=NOW - HOUR), [Level.ERROR], [], NOW)
    assert (early.verdict, early.not_before) == (Verdict.LATER, NOW + 23 * HOUR)
    assert may_mail(pol, series(last_part_at=NOW - 24 * HOUR), [Level.ERROR], [], NOW).verdict is Verdict.SEND


def test_may_mail_keeps_the_per_list_rate_limit() -> None:
    pol = replace(FULL_POLICY, max_mails_per_day=2)
    sent = [Sent("netdev", "x@example.org", NOW - 20 * HOUR), Sent("netdev", "y@example.org", NOW - 2 * HOUR)]
    full = may_mail(pol, series(), [Level.ERROR], sent, NOW)
    assert (full.verdict, full.not_before) == (Verdict.LATER, NOW + 4 * HOUR)
    assert "max_mails_per_day = 2" in full.reason
    older = [Sent("netdev", "x@example.org", NOW - 25 * HOUR), sent[1], Sent("lkml", "z@example.org", NOW - HOUR)]
    assert may_mail(pol, series(), [Level.ERROR], older, NOW).verdict is Verdict.SEND  # a day old, or another list's


def test_may_mail_keeps_the_per_author_rate_limit() -> None:
    pol = replace(FULL_POLICY, max_mails_per_author_per_day=1, max_mails_per_day=10)
    sent = [Sent("netdev", "Ann@example.org", NOW - 3 * HOUR)]
    full = may_mail(pol, series(), [Level.ERROR], sent, NOW)
    assert (full.verdict, full.not_before) == (Verdict.LATER, NOW + 21 * HOUR)
    assert "max_mails_per_author_per_day = 1" in full.reason
    assert may_mail(pol, series(sender="bob@example.org"), [Level.ERROR], sent, NOW).verdict is Verdict.SEND


def test_the_documented_example_loads_and_every_key_is_documented(tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "bot.md").read_text()
    section = doc.split("## Policy, commands and etiquette", 1)[1]
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    p = load(write(tmp_path, example)).get("netdev")
    assert (p.mail, p.embargo_hours, p.max_mails_per_author_per_day) == (MailTo.AUTHOR_LIST, 24, 3)
    assert plan(series(sender="kernel-robot@example.org"), p, NOW).action is Action.SKIP
    assert sorted(k for k in KEYS if f"| `{k}` |" not in section) == []


def test_a_rate_limit_of_zero_sends_nothing() -> None:
    for key in ("max_mails_per_day", "max_mails_per_author_per_day"):
        got = may_mail(replace(FULL_POLICY, **{key: 0}), series(), [Level.ERROR], [], NOW)  # type: ignore[arg-type]
        assert (got.verdict, got.reason) == (Verdict.NEVER, f"{key} = 0")
