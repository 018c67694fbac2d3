"""Patches signed with patatt (or DKIM) verify, and the signature is the author's.

Why: a signature shows the patch is what its author sent (b4's attestation,
https://b4.docs.kernel.org/); a bad one means the patch was changed on the way. Unsigned
patches are the norm, so nothing is said about them; a signature whose key is not in the
keyring is only an info. The policy is the user's: `git config reviewer.level.attestation
error` makes a bad signature fail the review (b4's `attestation-policy hardfail`).
PASS: a patch signed by its From: address with a key in the keyring, or an unsigned patch.
FAIL: a signed patch whose body was changed after signing (badsig).
"""
from __future__ import annotations

from collections.abc import Iterator

from reviewer.model import Finding, Level, Series

ID = "attestation"
LEVEL = Level.WARNING
LEVELS = {"nokey": Level.INFO}


def check(series: Series) -> Iterator[Finding]:
    for patch in series.patches:
        for verdict in patch.attestation:
            status, _, who = verdict.partition(" ")
            if status == "badsig":
                yield Finding("badsig", LEVEL, f"the signature of {who} does not verify: the patch changed after it was signed",
                              patch.index)
            elif status == "nokey":
                yield Finding("nokey", LEVEL, f"signed by {who}, but the key is not in the keyring", patch.index,
                              hint="add the key to patatt's keyring (git config patatt.keyringsrc) to verify it")
            elif status == "signed" and "(From: " in who:
                yield Finding("mismatch", LEVEL, f"signed by {who}, not by the patch's author", patch.index)
