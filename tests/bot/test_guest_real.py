"""The bot's guest stage on the real 6.12 tree: a series that makes the vDSO's getrandom() always fall back to the
syscall (tests/realkernel/test_vm_real.py's), posted to a real public-inbox list and reviewed by `review bot run
--once` with stages guest for x86_64 (pool guest-x86_64): the relevant selftests (the vDSO directory, chosen by
rules/vdso-selftests.toml for lib/vdso/) run in the base and the patched
kernels booted under QEMU, and vdso_test_getrandom's own failure on the patched kernel is mailed to the author.
The kernels are built in REVIEWER_BOOT_CACHE, shared with the real tier."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bot.mails import LIST
from tests.bot.test_run import Site, site  # noqa: F401 (the list, its mirror, the bot and an SMTP server)
from tests.realkernel.conftest import linux, linux_head  # noqa: F401 (Debian's 6.12 tree as a git repository)
from tests.realkernel.kernel import BOOT_CACHE, IDENTITY, commit, format_patch, show

pytestmark = [pytest.mark.slow, pytest.mark.boot]
SRC = "lib/vdso/getrandom.c"
FLAGS = "\t/* Handle unexpected flags by falling back to the kernel. */\n"
CHECK = "vgetrandom passed buffer to syscall getrandom unexpectedly"


def test_a_selftest_that_fails_in_the_patched_guest_is_mailed(site: Site, linux: Path, linux_head: str,  # noqa: F811
                                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", BOOT_CACHE)
    src = show(linux, linux_head, SRC)
    who = f"{IDENTITY['GIT_AUTHOR_NAME']} <{IDENTITY['GIT_AUTHOR_EMAIL']}>"
    fallback = src.replace(FLAGS, "\t/* Let the kernel fill every buffer. */\n\tgoto fallback_syscall;\n\n" + FLAGS, 1)
    tip = commit(linux, linux_head, {SRC: fallback},
                 f"vdso: getrandom: Always use the syscall\n\nA slower vDSO getrandom(), on purpose.\n\nSigned-off-by: {who}\n")
    mbox = format_patch(linux, linux_head, tip, tmp_path / "fallback.mbox", "--thread", f"--to={LIST}")
    site.config.write_text(site.config.read_text() + f'stages = ["guest"]\narches = ["x86_64"]\ntree = "{linux}"\n')
    site.deliver([mbox.read_text().split("\n", 1)[1].encode()])

    (msg,) = site.run_once(timeout=3600)
    body = str(msg.get_body(preferencelist=("plain",)).get_content()).replace("\r\n", "\n")  # type: ignore[union-attr]
    prose = " ".join(body.split())  # the reply wraps at 72 columns
    conclusion = "One error: vDSO:vdso_test_getrandom fails on the patched tree (plain), pass on base: exit=1: Bail out! "
    assert conclusion + CHECK in prose, body
    assert "vDSO:vdso_test_getrandom [plain]: pass" in prose and "-> fail" in prose and "booted x86_64" in prose, body
    pools = json.loads(site.bot("status", "--format", "json").stdout)["lists"]["test"]["pools"]
    assert pools["guest-x86_64"]["done"] == 1 and set(pools) == {"guest-x86_64", "report"}, pools
