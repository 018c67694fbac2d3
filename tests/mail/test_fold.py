"""The reply's headers as bytes: folded at 78 columns where they can be, never cut inside a
Message-ID, never turned into encoded words when they are ASCII; a body line past SMTP's 998."""
from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage

import pytest

from reviewer.report.email import POLICY, as_bytes, fold_words

LONG_ID = "<20240816110717.10249-1-xry111-a-very-long-local-part-for-a-message-id@mail.example.org>"


@pytest.mark.parametrize("text", [
    "Subject: Re: [PATCH v4 0/4] " + "LoongArch: vDSO: Wire up getrandom() vDSO implementation " * 4,
    "Subject: a  b " + "x" * 100 + " c",
    "Subject: short",
    "References: " + " ".join(f"<{i}-{'y' * 70}@example.org>" for i in range(3)),
])
def test_fold_words_unfolds_to_the_same_text(text: str) -> None:
    lines = fold_words(text, 78, text.index(":") + 2)
    assert "".join(lines) == text  # unfolding (dropping the line breaks) gives the header back
    assert all(ln.startswith(" ") for ln in lines[1:])
    assert all(len(ln) <= 78 or len(ln.split()) == 1 or ln is lines[0] and len(ln.split()) == 2 for ln in lines), lines


def _bytes(**headers: str) -> bytes:
    msg = EmailMessage(policy=POLICY)
    for name, value in headers.items():
        msg[name.replace("_", "-")] = value
    msg.set_content("hi\n")
    return as_bytes(msg)


def test_ids_stay_whole_and_plain() -> None:
    """Python folds an over-long In-Reply-To into =?utf-8?q?...?= encoded words: a reply that no
    mail client would thread. Here each id stays one token, folded only between ids."""
    references = " ".join([LONG_ID.replace("<2", f"<{i}") for i in range(3)] + [LONG_ID])
    data = _bytes(Message_ID=LONG_ID, In_Reply_To=LONG_ID, References=references)
    assert b"=?" not in data
    head = data.split(b"\n\n", 1)[0].decode()
    assert f"In-Reply-To: {LONG_ID}\n" in head and f"Message-ID: {LONG_ID}\n" in head
    msg = email.message_from_bytes(data, policy=email.policy.default)
    assert msg["In-Reply-To"] == LONG_ID and msg["References"].split()[-1] == LONG_ID


def test_an_ascii_subject_never_becomes_encoded_words() -> None:
    subject = "Re: [PATCH] x: " + "y" * 100 + " and more words after the long one " * 3
    data = _bytes(Subject=subject)
    assert b"=?" not in data
    assert email.message_from_bytes(data, policy=email.policy.default)["Subject"] == subject


def test_non_ascii_subject_and_names_are_encoded_and_folded() -> None:
    subject = "Re: [PATCH] Jörg's " + "ärger " * 30 + "end"
    cc = ", ".join(f"Jörg Müller {i} <j{i}@example.org>" for i in range(10))
    data = _bytes(Subject=subject, Cc=cc)
    assert max(len(ln) for ln in data.split(b"\n")) <= 78
    msg = email.message_from_bytes(data, policy=email.policy.default)
    assert msg["Subject"] == subject
    assert [a.display_name for a in msg["Cc"].addresses] == [f"Jörg Müller {i}" for i in range(10)]


def test_a_body_line_past_998_octets_goes_quoted_printable() -> None:
    from reviewer.report.message import _cte

    assert _cte("short\nlines\n") == "7bit" and _cte("ünïcode\n") == "8bit"
    assert _cte("> +" + "x" * 1000 + "\n") == "quoted-printable"
