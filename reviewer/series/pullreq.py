"""A pull request mail, as `git request-pull` writes it, read for its repository and branch.

    The following changes since commit <base>:
      <subject> (<date>)
    are available in the Git repository at:
      <url> <ref>
    for you to fetch changes up to <tip>:

A maintainer pulls such a mail; its commits were signed off in the sender's tree, so it is
not judged as a patch (no Signed-off-by findings). `request-pull -p` appends the diff.
"""
from __future__ import annotations

import re

from reviewer.model import PullRequest

_SINCE = re.compile(r"^The following changes since commit ([0-9a-f]{7,40}):?\s*$", re.MULTILINE | re.IGNORECASE)
_AT = re.compile(r"^are available in the git repository at:?\s*\n\s*\n?[ \t]*(\S+)(?:[ \t]+(\S+))?[ \t]*$",
                 re.MULTILINE | re.IGNORECASE)
_UP_TO = re.compile(r"^for you to fetch changes up to ([0-9a-f]{7,40}):?\s*$", re.MULTILINE | re.IGNORECASE)


def parse(body: str) -> PullRequest | None:
    """The pull request BODY asks for, or None when it is not one."""
    body = body.replace("\r\n", "\n")
    at = _AT.search(body)
    if at is None:
        return None
    since, up_to = _SINCE.search(body), _UP_TO.search(body)
    return PullRequest(url=at.group(1), ref=at.group(2) or "HEAD",
                       base=since.group(1) if since else None, tip=up_to.group(1) if up_to else None)
