"""report/outgoing.py: the reply built from a review and delivered; nothing is sent unless asked, and
then only once the question is answered yes."""
from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pytest

from reviewer import app
from reviewer.errors import UsageError
from reviewer.model import Review
from reviewer.report import outgoing, send
from reviewer.request import ReviewRequest, SourceOptions
from tests.conftest import SERIES

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
SENDER = "Rev Iewer <rev@example.org>"


@pytest.fixture(scope="module")
def demo() -> Review:
    return app.review(ReviewRequest(SourceOptions(target=str(DEMO), cwd=DEMO.parent))).review


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[EmailMessage]:
    out: list[EmailMessage] = []
    monkeypatch.setattr(send, "send", lambda msg, _t, _cwd: out.append(msg))
    return out


def test_a_reply_file_is_written_and_nothing_sent(demo: Review, tmp_path: Path, sent: list[EmailMessage]) -> None:
    out = outgoing.Outgoing(reply=str(tmp_path / "r.eml"), trailers=outgoing.trailers(["Tested-by: A <a@example.org>"]))
    notes: list[str] = []
    msgs = outgoing.prepare(demo, out, SENDER, say=notes.append)
    outgoing.deliver(msgs, out, tmp_path, send.Transport(), say=notes.append)
    text = (tmp_path / "r.eml").read_text()
    assert "Tested-by: A <a@example.org>" in text and f"From: {SENDER}" in text
    assert notes == [f"review: reply written to {tmp_path / 'r.eml'} (1 message)"] and sent == []


def test_send_asks_and_no_sends_nothing(demo: Review, tmp_path: Path, sent: list[EmailMessage], capsys: pytest.CaptureFixture[str]) -> None:
    out = outgoing.Outgoing(send=True)
    asked: list[str] = []
    notes: list[str] = []
    msgs = outgoing.prepare(demo, out, SENDER, say=notes.append)
    outgoing.deliver(msgs, out, tmp_path, send.Transport(), confirm=lambda q: asked.append(q) is not None, say=notes.append)
    assert asked == ["Send 1 message(s) via localhost:25?"] and sent == [] and notes == ["review: nothing sent"]
    assert "Subject: Re: [PATCH v4 0/4]" in capsys.readouterr().out  # shown before the question


def test_send_without_anyone_to_ask_sends_nothing(demo: Review, tmp_path: Path, sent: list[EmailMessage]) -> None:
    out = outgoing.Outgoing(send=True)
    outgoing.deliver(outgoing.prepare(demo, out, SENDER), out, tmp_path, send.Transport(), say=lambda _t: None)
    assert sent == []


def test_send_yes_and_confirmed_send(demo: Review, tmp_path: Path, sent: list[EmailMessage]) -> None:
    for out, confirm in ((outgoing.Outgoing(send=True, yes=True), None), (outgoing.Outgoing(send=True), lambda _q: True)):
        outgoing.deliver(outgoing.prepare(demo, out, SENDER), out, tmp_path, send.Transport(), confirm=confirm, say=lambda _t: None)
    assert len(sent) == 2


def test_the_options_must_agree() -> None:
    with pytest.raises(UsageError, match="shape a reply"):
        outgoing.Outgoing(per_patch=True).validate("terminal", reads_message=False)
    with pytest.raises(UsageError, match="is for b4's checks"):
        outgoing.Outgoing(reply="-").validate("b4-check", reads_message=True)
    with pytest.raises(UsageError, match="contradict"):
        outgoing.Outgoing(send=True, dry_run=True).validate("json", reads_message=False)
    with pytest.raises(UsageError, match="expected 'Tested-by"):
        outgoing.trailers(["Tested: me"])
    assert outgoing.in_reply_to("<a@b.example>") == "a@b.example"
