"""A small client for Patchwork's REST checks API: a series' result posted as one check on each of its patches.

`POST {api}/patches/{id}/checks/` with `state` (pending | success | warning | fail), `context`
(^[-a-zA-Z0-9_]+$), `target_url` (at most 200 characters) and `description`, authenticated by
`Authorization: Token ...` (https://patchwork.readthedocs.io/en/latest/api/rest/, "Checks"). Only the
newest check of a context counts, and posting needs maintainer rights on the project. A check made before the
patch's id is known names its Message-ID instead (`patch` 0): the id is looked up when it is posted, with
`GET {api}/patches/?project=P&msgid=ID` (API 1.2 and later); Patchwork reads a list's mail a few minutes after
it arrives, so a patch it does not have yet is a PatchworkError, and the outbox tries again later. Plain requests:
git-pw has no check command. Tested against a loopback HTTP server that checks the request; no real
Patchwork instance was tested (docs/bot.md).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import requests

from reviewer.errors import ExitStatus, ReviewerError

STATES = ("pending", "success", "warning", "fail")
CONTEXT = re.compile(r"^[-a-zA-Z0-9_]+$")
MAX_TARGET_URL = 200
TIMEOUT = 30.0


class PatchworkError(ReviewerError):
    """Patchwork refused a check or could not be reached (exit 4, like a failed fetch: the network said no)."""

    status = ExitStatus.FETCH


@dataclass(frozen=True)
class Check:
    """One check on one patch of the Patchwork whose REST API is at API (`https://host/api/1.1/`)."""

    api: str
    patch: int
    state: str
    context: str
    description: str = ""
    target_url: str = ""
    msgid: str = ""  # with patch 0: the patch's Message-ID (no <>), looked up in PROJECT when the check is posted
    project: str = ""

    def __post_init__(self) -> None:
        if not self.patch and not (self.msgid and self.project):
            raise ValueError("a check names its patch: an id, or a Message-ID and a project")
        if self.state not in STATES:
            raise ValueError(f"check state {self.state!r}: not one of {', '.join(STATES)}")
        if not CONTEXT.match(self.context):
            raise ValueError(f"check context {self.context!r}: not of letters, digits, '-' and '_'")
        if len(self.target_url) > MAX_TARGET_URL:
            raise ValueError(f"check target_url: {len(self.target_url)} characters (at most {MAX_TARGET_URL})")

    def fields(self) -> dict[str, str]:
        """The JSON body Patchwork documents."""
        return {"state": self.state, "context": self.context, "target_url": self.target_url, "description": self.description}


def per_patch(api: str, patches: Iterable[int], state: str, context: str, description: str = "", target_url: str = "") -> list[Check]:
    """A series' result as a check on each of its PATCHES (Patchwork's checks are per patch)."""
    return [Check(api, p, state, context, description, target_url) for p in patches]


def per_message(api: str, project: str, msgids: Iterable[str], state: str, context: str, description: str = "",
                target_url: str = "") -> list[Check]:
    """As per_patch, the patches named by their Message-IDs (looked up when each check is posted)."""
    return [Check(api, 0, state, context, description, target_url, m.strip("<>"), project) for m in msgids]


class Client:
    """Posts checks with TOKEN (a maintainer's API token: it lives only in the sender)."""

    def __init__(self, token: str, timeout: float = TIMEOUT) -> None:
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}", "Accept": "application/json"})
        self.timeout = timeout

    def patch_id(self, check: Check) -> int:
        """The id of the patch CHECK names by its Message-ID; PatchworkError when Patchwork has no such patch (yet)."""
        url = f"{check.api.rstrip('/')}/patches/"
        answer = self._call("get", url, params={"project": check.project, "msgid": check.msgid})
        if answer.status_code != requests.codes.ok:
            raise _refused(url, answer)
        found = answer.json()
        if not isinstance(found, list) or not found or not isinstance(found[0], dict) or not isinstance(found[0].get("id"), int):
            raise PatchworkError(f"{url}: no patch <{check.msgid}> in project {check.project} (yet: it is tried again later)")
        return int(found[0]["id"])

    def post(self, check: Check) -> dict[str, object]:
        """Create CHECK; Patchwork's answer (the check it made). PatchworkError naming the patch and why otherwise."""
        patch = check.patch or self.patch_id(check)
        url = f"{check.api.rstrip('/')}/patches/{patch}/checks/"
        answer = self._call("post", url, json=check.fields())
        if answer.status_code != requests.codes.created:
            raise _refused(url, answer)
        body = answer.json()
        return body if isinstance(body, dict) else {}

    def _call(self, method: str, url: str, **kw: object) -> requests.Response:
        try:
            return self.session.request(method, url, timeout=self.timeout, **kw)  # type: ignore[arg-type]
        except requests.Timeout as exc:
            raise PatchworkError(f"{url}: no answer within {self.timeout:g} s") from exc
        except requests.RequestException as exc:
            raise PatchworkError(f"cannot reach {url}: {exc}") from exc


def _refused(url: str, answer: requests.Response) -> PatchworkError:
    why = {401: "the token was refused", 403: "the token's user may not post checks (maintainer rights on the project)",
           404: "no such patch (or API URL)"}.get(answer.status_code, "the check was refused")
    detail = " ".join(answer.text.split())[:200]
    return PatchworkError(f"{url}: {answer.status_code}: {why}" + (f": {detail}" if detail else ""))
