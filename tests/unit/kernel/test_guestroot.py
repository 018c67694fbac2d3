"""`review guest-root`: another architecture's userspace from its Debian packages, and what it says when apt cannot."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from reviewer.errors import ConfigError, ExitStatus
from reviewer.kernel import guestroot as root
from reviewer.kernel.arches import GUESTS
from tests.helpers import review


def test_an_architecture_apt_does_not_know_is_a_clear_error_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_GUEST_ROOTS", str(tmp_path / "roots"))
    unknown = dataclasses.replace(GUESTS["ppc64le"], deb="s390x")  # a real apt-get, asked for packages of an architecture never added
    with pytest.raises(ConfigError) as exc:
        root.make(unknown)
    assert exc.value.message == "apt-get cannot download the s390x packages: E: Unable to locate package bash:s390x"
    assert exc.value.hint == "as root, once: dpkg --add-architecture s390x && apt-get update"
    assert list((tmp_path / "roots").iterdir()) == []  # no half-made root
    assert root.missing(unknown) == f"no s390x guest root at {tmp_path}/roots/s390x (make it: review guest-root ppc64le)"


def test_the_command_names_the_architectures_it_makes_roots_for(tmp_path: Path) -> None:
    result = review("guest-root", "x86_64", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.USAGE
    assert result.stderr == ("review: error: guest-root 'x86_64': not another architecture's guest\n"
                             "hint: choose from: ppc64le, arm64 (the machine's own boots its own root)\n")


def test_finishing_a_root_adds_what_installing_would_have(tmp_path: Path) -> None:
    r = tmp_path / "r"
    (r / "bin").mkdir(parents=True)
    (r / "bin/bash").write_text("elf\n")
    (r / "usr/share/doc/bash").mkdir(parents=True)
    (r / "usr/lib/powerpc64le-linux-gnu/gconv").mkdir(parents=True)
    root._finish(r)
    assert (r / "bin/sh").readlink() == Path("bash") and (r / "sbin/poweroff").readlink() == Path("/bin/busybox")
    assert (r / "etc/passwd").read_text().startswith("root:x:0:0:")
    assert not (r / "usr/share/doc").exists() and not (r / "usr/lib/powerpc64le-linux-gnu/gconv").exists()
    assert all((r / d).is_dir() for d in ("dev", "proc", "sys", "tmp", "run"))
    ppc32 = review("guest-root", "ppc32", tmp=tmp_path / "tmp2")
    assert ppc32.rc == ExitStatus.USAGE
    assert ppc32.stderr == ("review: error: guest-root 'ppc32': a ppc32 guest needs no root (it boots an initramfs of the tests "
                            "and reviewer's own init)\nhint: roots are made for: ppc64le, arm64\n")
