"""Golden reply mails (tests/report/golden/reply-*.eml), and the kernel mail style they must keep.

Regenerate with `./dev test tests/report --update-golden` and review the diff.
"""
from __future__ import annotations

import datetime as dt
import email
import email.policy
import email.utils
import os
from dataclasses import replace
from pathlib import Path

import pytest

from reviewer.ktap import Result
from reviewer.model import BenchResult, Review, TestRun
from reviewer.pipeline import review
from reviewer.report import email as reply_mail
from reviewer.request import ReviewRequest, SelftestOptions, SourceOptions
from tests.conftest import SERIES

GOLDEN = Path(__file__).parent / "golden"
DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
OPTS = reply_mail.ReplyOptions(
    "Rev Iewer <rev@example.org>",
    date=dt.datetime(2024, 8, 18, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    make_msgid=lambda: "<reply-1@example.org>",
    signature="reviewer (golden test)",
)


def no_select_mbox(dest: Path) -> Path:
    """The demo series with patch 1's `select VDSO_GETRANDOM` commented out: a rule error on a quotable hunk."""
    text = DEMO.read_text()
    assert text.count("+\tselect VDSO_GETRANDOM\n") == 1
    dest.write_text(text.replace("+\tselect VDSO_GETRANDOM\n", "+\t# select VDSO_GETRANDOM\n"))
    return dest


def _review(target: Path, tree: Path | None) -> Review:
    result, error = review(ReviewRequest(SourceOptions(target=str(target), cwd=target.parent, tree=tree),
                                         selftests=SelftestOptions(no_tests=True)))
    assert error is None, error
    return result


def _tested(result: Review) -> Review:
    """The demo as if run with --run-tests: fixed figures, so the summary's format is pinned."""
    runs = tuple(TestRun("vDSO:vdso_test_getrandom", tree, "plain", Result.PASS, secs)
                 for tree, secs in (("base", 0.41), ("patched", 0.43)))
    bench = (BenchResult.of("vdso_test_getrandom bench-single", "plain", "vdso", "s", [0.101, 0.102, 0.103], [0.103, 0.104, 0.105], 3,
                            limit=1.25),)
    return replace(result, selftests=runs, benchmarks=bench)


def _compare(name: str, actual: bytes, *, update: bool) -> None:
    path = GOLDEN / name
    if update:
        path.write_bytes(actual)
    assert path.exists(), f"{path} missing: run with --update-golden"
    assert actual.decode() == path.read_text()


@pytest.fixture
def cases(tmp_path: Path, kernel_repo: Path) -> dict[str, bytes]:
    demo = _review(DEMO, kernel_repo)
    bad = _review(no_select_mbox(tmp_path / "no-select.mbox"), kernel_repo)
    missing = _review(SERIES / "missing-2of3.mbox", None)
    tested = replace(OPTS, trailers=("Tested-by: Rev Iewer <rev@example.org>",))
    return {
        "reply-demo-v4.eml": reply_mail.as_bytes(reply_mail.reply(demo, OPTS)),
        "reply-demo-tested.eml": reply_mail.as_bytes(reply_mail.reply(_tested(demo), tested)),
        "reply-no-select.eml": reply_mail.as_bytes(reply_mail.reply(bad, OPTS)),
        "reply-no-select-per-patch.eml": reply_mail.as_mbox(reply_mail.per_patch(bad, OPTS)),
        "reply-missing-2of3.eml": reply_mail.as_bytes(reply_mail.reply(missing, OPTS)),
    }


def test_reply_goldens(cases: dict[str, bytes], request: pytest.FixtureRequest) -> None:
    for name, data in cases.items():
        _compare(name, data, update=request.config.getoption("--update-golden"))


def test_kernel_mail_style(cases: dict[str, bytes]) -> None:
    for name, data in cases.items():
        msg = email.message_from_bytes(data.split(b"\n", 1)[1] if data.startswith(b"From ") else data, policy=email.policy.default)
        text = msg.get_body().get_content()  # type: ignore[union-attr]
        for line in text.splitlines():
            # Prose wraps at 72; indented figures are never wrapped but stay short.
            assert line.startswith(">") or len(line) <= (80 if line.startswith("  ") else 72), (name, line)
        assert "\n-- \n" in text, name
        assert ("Tested-by:" in text) == (name == "reply-demo-tested.eml"), name
        assert "Reviewed-by" not in text and "Acked-by" not in text, name


def test_no_select_quotes_the_hunk(cases: dict[str, bytes]) -> None:
    text = cases["reply-no-select.eml"].decode()
    assert "> diff --git a/arch/loongarch/Kconfig b/arch/loongarch/Kconfig\n> @@ -23,6 +23,7 @@ config LOONGARCH\n" in text
    assert ">  \tselect USER_STACKTRACE_SUPPORT\n> +\t# select VDSO_GETRANDOM\n" in text
    assert "In-Reply-To: <20240816110717.10249-1-xry111@example.org>" in text
    subject = email.message_from_string(text, policy=email.policy.default)["Subject"]
    assert subject == "Re: [PATCH v4 0/4] LoongArch: vDSO: Wire up getrandom() vDSO implementation"
    per_patch = cases["reply-no-select-per-patch.eml"].decode()
    assert per_patch.count("\nFrom: Rev Iewer") + per_patch.startswith("From: ") == 1  # only patch 1 has findings
    assert "In-Reply-To: <20240816110717.10249-2-xry111@example.org>" in per_patch
    refs = email.message_from_string(per_patch, policy=email.policy.default)["References"]
    assert refs.split() == ["<20240816110717.10249-1-xry111@example.org>", "<20240816110717.10249-2-xry111@example.org>"]


def test_recipients_by_policy() -> None:
    result = _review(DEMO, None)
    s = result.series
    assert s is not None and s.cover is not None
    for policy, cc_count in ((reply_mail.ReplyPolicy.AUTHOR, 0), (reply_mail.ReplyPolicy.LIST, 1), (reply_mail.ReplyPolicy.ALL, 5)):
        to, cc = reply_mail.recipients(s, s.cover.to, s.cover.cc, policy, OPTS.sender)
        assert to == ["Xi Ruo <xry111@example.org>"]
        assert len(cc) == cc_count, (policy, cc)
    # The sender never mails himself, and nobody gets it twice.
    to, cc = reply_mail.recipients(s, s.cover.to, s.cover.cc, reply_mail.ReplyPolicy.ALL, "Huai Chen <CHENHUAI@example.org>")
    assert not any("chenhuai" in a.lower() for a in to + cc)


def test_a_name_from_the_series_adds_no_recipient() -> None:
    # A display name is the series' text: one with a comma and an address in it, written as a valid quoted name,
    # must stay one name of one address in the reply's To: and Cc:, not become a second recipient.
    s = _review(DEMO, None).series
    assert s is not None and s.cover is not None
    hostile = "Mallory <m@evil.example>, x"
    s = replace(s, author=replace(s.author, name=hostile))
    cc = (f'"{hostile}" <list@example.org>', 'Back\\slash "Q" <q@example.org>')
    to, cc_out = reply_mail.recipients(s, (), cc, reply_mail.ReplyPolicy.ALL, OPTS.sender)
    header = email.message_from_string(f"To: {', '.join(to)}\nCc: {', '.join(cc_out)}\n\n", policy=email.policy.default)
    assert [a.addr_spec for a in header["To"].addresses] == ["xry111@example.org"]
    assert [a.display_name for a in header["To"].addresses] == [hostile]
    assert [a.addr_spec for a in header["Cc"].addresses] == ["list@example.org", "q@example.org"]
    assert [a.display_name for a in header["Cc"].addresses] == [email.utils.parseaddr(a)[0] for a in cc] == [hostile, "Back\\slash Q"]


def test_wrap_keeps_code_spans() -> None:
    text = reply_mail.wrap("word " * 12 + "`select VDSO_GETRANDOM if FOO` " + "word " * 6)
    assert "`select VDSO_GETRANDOM if FOO`" in text
    assert all(len(ln) <= 72 for ln in text.splitlines())


def test_reply_keeps_the_sent_subject_and_the_reference_chain(tmp_path: Path) -> None:
    """An RFC cover letter sent in reply to an earlier discussion: `Re: [RFC PATCH 0/3] ...`,
    and References carries the discussion before the cover letter."""
    import subprocess
    import sys

    text = (SERIES / "missing-2of3.mbox").read_text()
    text = text.replace("Subject: [PATCH 0/3] x86/vdso: Comment updates",
                        "Subject: [RFC PATCH 0/3] x86/vdso: Comment updates\nIn-Reply-To: <idea-1@example.org>\n"
                        "References: <idea-0@example.org> <idea-1@example.org>", 1)
    mbox = tmp_path / "rfc.mbox"
    mbox.write_text(text)
    env = {**os.environ, "GIT_AUTHOR_NAME": "Rev Iewer", "GIT_AUTHOR_EMAIL": "rev@example.org"}
    subprocess.run(["git", "config", "--global", "user.name", "Rev Iewer"], check=True)
    subprocess.run(["git", "config", "--global", "user.email", "rev@example.org"], check=True)
    done = subprocess.run([sys.executable, "-m", "reviewer", str(mbox), "--reply", "-"], capture_output=True, text=True, env=env,
                          cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # the missing 2/3 is an error finding
    headers = done.stdout.split("\n\n", 1)[0].replace("\n ", " ")
    assert "\nSubject: Re: [RFC PATCH 0/3] x86/vdso: Comment updates\n" in headers + "\n"
    assert "References: <idea-0@example.org> <idea-1@example.org> <20240820083000.7000-1-sam@example.org>" in headers
    assert "In-Reply-To: <20240820083000.7000-1-sam@example.org>" in headers
