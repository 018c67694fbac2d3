"""patatt attestation per patch: a real ed25519 key, a real signature, b4's verdict."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from reviewer.errors import ExitStatus
from tests.conftest import SERIES
from tests.helpers import review

PATATT = Path(sys.executable).with_name("patatt")


def _sign(tmp_path: Path) -> tuple[bytes, Path]:
    """A key for the single-patch fixture's author, in a keyring dir, and the patch signed with it."""
    author = "solo@example.org"
    msg = (SERIES / "single-patch.mbox").read_bytes()
    mail = msg.split(b"\n", 1)[1] if msg.startswith(b"From ") else msg  # patatt signs one RFC 2822 message
    assert b"From: " in mail
    subprocess.run(["git", "config", "--global", "user.email", author], check=True)
    subprocess.run(["git", "config", "--global", "user.name", "Solo Sender"], check=True)
    subprocess.run([PATATT, "genkey", "-n", "review-test"], check=True, capture_output=True, cwd=tmp_path)
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local/share") / "patatt"
    subprocess.run(["git", "config", "--global", "patatt.signingkey", "ed25519:review-test"], check=True)
    subprocess.run(["git", "config", "--global", "patatt.selector", "review-test"], check=True)
    signed = subprocess.run([PATATT, "sign"], input=mail, capture_output=True, check=True, cwd=tmp_path).stdout
    assert b"X-Developer-Signature" in signed
    return signed, data / "public"


def test_a_signed_patch_verifies_and_a_tampered_one_does_not(tmp_path: Path) -> None:
    text = (SERIES / "single-patch.mbox").read_text()
    author = text.split("\nFrom: ", 1)[1].split("\n", 1)[0]
    assert "solo@example.org" in author, author  # the fixture's author signs it
    signed, keyring = _sign(tmp_path)
    good = tmp_path / "signed.eml"
    good.write_bytes(signed)
    unknown = review(good, "--format", "json", cwd=tmp_path, tmp=tmp_path / "t0").json()
    assert unknown["patches"][0]["attestation"][0].startswith("nokey ")
    subprocess.run(["git", "config", "--global", "patatt.keyringsrc", str(keyring)], check=True)
    doc = review(good, "--format", "json", cwd=tmp_path, tmp=tmp_path / "t1").json()
    assert doc["patches"][0]["attestation"] == ["signed ed25519/solo@example.org"]
    assert not [f for f in doc["findings"] if f["rule"].startswith("attestation")]
    bad = tmp_path / "tampered.eml"
    assert b"\nSigned-off-by:" in signed
    bad.write_bytes(signed.replace(b"\nSigned-off-by:", b"\nA sentence added on the way.\n\nSigned-off-by:", 1))
    result = review(bad, "--format", "json", cwd=tmp_path, tmp=tmp_path / "t2")
    assert result.rc == ExitStatus.OK  # a bad signature is a warning unless the user's policy says otherwise
    (finding,) = [f for f in result.json()["findings"] if f["rule"].startswith("attestation")]
    assert (finding["rule"], finding["level"]) == ("attestation/badsig", "warning")
    subprocess.run(["git", "config", "--global", "reviewer.level.attestation", "error"], check=True)
    strict = review(bad, "--format", "json", cwd=tmp_path, tmp=tmp_path / "t3")
    assert strict.rc == ExitStatus.FINDINGS
