"""The bot's build stage on the real 6.12 tree: a series of ours that breaks lib/cmdline.c, posted to a real
public-inbox list, reviewed by `review bot run --once` with stages static, apply and build for x86_64 (the
build-x86_64 pool), and the compiler's error mailed to the author, threaded to the patch. make is the oracle:
the error asserted is the one gcc printed for the line the series wrote. The build directories and ccache are
shared with the real tier's build and boot tests (REVIEWER_BOOT_CACHE)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bot.mails import LIST
from tests.bot.test_run import Site, _about, site  # noqa: F401 (the list, its mirror, the bot and an SMTP server)
from tests.realkernel.conftest import linux, linux_head  # noqa: F401 (Debian's 6.12 tree as a git repository)
from tests.realkernel.kernel import BOOT_CACHE, IDENTITY, commit, format_patch, show

pytestmark = [pytest.mark.slow]
OLD = "int get_option(char **str, int *pint)\n{\n"


def test_a_series_that_does_not_build_gets_the_compilers_error(site: Site, linux: Path, linux_head: str,  # noqa: F811
                                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_BOOT_CACHE", BOOT_CACHE)  # the bot's process inherits it: the tier's warm build
    src = show(linux, linux_head, "lib/cmdline.c")
    assert src.count(OLD) == 1
    who = f"{IDENTITY['GIT_AUTHOR_NAME']} <{IDENTITY['GIT_AUTHOR_EMAIL']}>"
    tip = commit(linux, linux_head, {"lib/cmdline.c": src.replace(OLD, OLD + "\tbot_undeclared_count++;\n", 1)},
                 f"lib/cmdline: count the options\n\nOn purpose.\n\nSigned-off-by: {who}\n")
    mbox = format_patch(linux, linux_head, tip, tmp_path / "broken.mbox", "--thread", f"--to={LIST}")
    site.config.write_text(site.config.read_text() + f'stages = ["static", "apply", "build"]\narches = ["x86_64"]\ntree = "{linux}"\n')
    site.deliver([mbox.read_text().split("\n", 1)[1].encode()])  # one mail, without the mbox's "From " line

    sent = site.run_once(timeout=1800)
    (msg,) = sent
    body = str(msg.get_body(preferencelist=("plain",)).get_content()).replace("\r\n", "\n")  # type: ignore[union-attr]
    assert "does not build for x86_64" in body and "bot_undeclared_count" in body, body
    assert msg["To"].addresses[0].addr_spec == IDENTITY["GIT_AUTHOR_EMAIL"]
    assert str(msg["In-Reply-To"]).strip("<>") in _about(sent)
    assert f"Base commit: {linux_head}" in body  # the series' base-commit, which the tree has
    pools = json.loads(site.bot("status", "--format", "json").stdout)["lists"]["test"]["pools"]
    assert (pools["static"]["done"], pools["apply"]["done"], pools["build-x86_64"]["done"]) == (1, 1, 1), pools
