"""model.address: NAME <ADDR> for a header, as email.utils.formataddr writes it for ASCII (the oracle, at test time),
and a non-ASCII name quoted the same way instead of encoded; either way one name of one address when read back."""
from __future__ import annotations

import email.policy
import email.utils
from email.parser import HeaderParser

import pytest

from reviewer.model import address

NAMES = ["", "Ann Example", "Jane Q. Doe", "Mallory <m@evil.example>, x", 'Back\\slash "Q"', "a;b:c", "(comment)", "[x]"]


@pytest.mark.parametrize("name", NAMES)
def test_an_ascii_name_is_written_as_formataddr_writes_it(name: str) -> None:
    assert address(name, "ann@example.org") == email.utils.formataddr((name, "ann@example.org"))


@pytest.mark.parametrize("name", [*NAMES, "Ærø, Mallory <m@evil.example>", "Jürgen Müller", 'Zoë "Z" Ng'])
def test_every_name_reads_back_as_one_address(name: str) -> None:
    header = HeaderParser(policy=email.policy.default).parsestr(f"To: {address(name, 'ann@example.org')}\n\n")["To"]
    assert [(a.display_name, a.addr_spec) for a in header.addresses] == [(name, "ann@example.org")]


def test_a_non_ascii_name_is_not_encoded() -> None:
    assert address("Jürgen Müller", "j@example.org") == "Jürgen Müller <j@example.org>"
    assert address("Ærø, Mallory", "a@example.org") == '"Ærø, Mallory" <a@example.org>'
