"""reviewer.bot.patchwork: the requests the client sends, captured by a real HTTP server on 127.0.0.1 (http.server in
a thread) that checks them against the fields Patchwork documents for its checks API, and how the client takes
the errors a Patchwork answers with (401, 404) or none at all (a timeout). No Patchwork runs here: this tests our
side of the conversation only (docs/bot.md says so)."""
from __future__ import annotations

import urllib.parse
from dataclasses import replace
from pathlib import Path

import pytest

from reviewer.bot.jobs import Jobs
from reviewer.bot.outbox import Delivery, Outbox
from reviewer.bot.patchwork import Check, Client, PatchworkError, per_message, per_patch
from reviewer.errors import ExitStatus
from reviewer.report import send
from tests.bot.pwserver import TOKEN, Patchwork


def test_a_check_is_posted_with_patchworks_fields(patchwork: Patchwork) -> None:
    check = Check(patchwork.url + "/", 7, "warning", "reviewer-static", "1 warning", "https://ci.example/r/7")
    made = Client(TOKEN).post(check)
    ((method, path, headers, body),) = patchwork.seen
    assert (method, path, headers["Authorization"], headers["Content-Type"]) == ("POST", "/api/1.1/patches/7/checks/",
                                                                                    f"Token {TOKEN}", "application/json")
    assert body == {"state": "warning", "context": "reviewer-static", "description": "1 warning", "target_url": "https://ci.example/r/7"}
    assert made["state"] == "warning"


def test_a_series_result_is_one_check_per_patch(patchwork: Patchwork) -> None:
    client = Client(TOKEN)
    for check in per_patch(patchwork.url, [11, 12, 13], "success", "reviewer-build_x86_64", "built"):
        client.post(check)
    assert [p for _, p, _, _ in patchwork.seen] == [f"/api/1.1/patches/{n}/checks/" for n in (11, 12, 13)]
    assert {b["state"] for *_, b in patchwork.seen} == {"success"}


def test_errors_name_the_url_and_why(patchwork: Patchwork) -> None:
    patchwork.answers.update({404: 404, 500: 0})
    with pytest.raises(PatchworkError, match=r"patches/1/checks/: 401: the token was refused: .*Invalid token") as e:
        Client("wrong").post(Check(patchwork.url, 1, "fail", "ctx"))
    assert e.value.status is ExitStatus.FETCH
    with pytest.raises(PatchworkError, match=r"patches/404/checks/: 404: no such patch"):
        Client(TOKEN).post(Check(patchwork.url, 404, "fail", "ctx"))
    with pytest.raises(PatchworkError, match=r"patches/500/checks/: no answer within 0.5 s"):
        Client(TOKEN, timeout=0.5).post(Check(patchwork.url, 500, "fail", "ctx"))


def test_a_check_patchwork_would_refuse_is_not_made() -> None:
    with pytest.raises(ValueError, match="state 'ok'"):
        Check("u", 1, "ok", "ctx")
    with pytest.raises(ValueError, match="context 'a b'"):
        Check("u", 1, "fail", "a b")
    with pytest.raises(ValueError, match="201 characters"):
        Check("u", 1, "fail", "ctx", target_url="x" * 201)
    assert Check("u", 1, "pending", "Aa-0_9", target_url="x" * 200).context == "Aa-0_9"


def test_the_outbox_posts_its_checks_with_the_apis_token(patchwork: Patchwork, tmp_path: Path) -> None:
    with Jobs(tmp_path / "jobs.db") as jobs:
        outbox = Outbox(jobs.db, attempts=1)
        outbox.put([(f"r/{c.patch}", c) for c in per_patch(patchwork.url, [1, 2], "fail", "reviewer-static")], now=0)
        outbox.put([("elsewhere", Check("http://127.0.0.1:9/api/1.1", 3, "fail", "reviewer-static"))], now=0)
        sender = Delivery(send.Transport(), tmp_path, {patchwork.url: TOKEN})
        rows = outbox.drain(sender, now=1)
    assert [(r.key, r.state, r.error) for r in rows] == [("r/1", "sent", None), ("r/2", "sent", None),
                                                         ("elsewhere", "failed", "no Patchwork token for http://127.0.0.1:9/api/1.1")]
    assert len(patchwork.seen) == 2


def test_a_check_named_by_message_id_goes_to_the_patch_patchwork_has(patchwork: Patchwork) -> None:
    api = patchwork.url.replace("/api/1.1", "/api/1.2")
    patchwork.patches[("netdevbpf", "<s.2@example.org>")] = 4242
    (check,) = per_message(api, "netdevbpf", ["<s.2@example.org>"], "fail", "reviewer-apply", "does not apply")
    Client(TOKEN).post(check)
    (get, post) = patchwork.seen
    assert get[0] == "GET" and urllib.parse.parse_qs(get[1].split("?", 1)[1]) == {"project": ["netdevbpf"], "msgid": ["s.2@example.org"]}
    assert (post[0], post[1], post[3]["state"]) == ("POST", "/api/1.2/patches/4242/checks/", "fail")
    with pytest.raises(PatchworkError, match=r"no patch <s.9@example.org> in project netdevbpf \(yet"):
        Client(TOKEN).post(replace(check, msgid="s.9@example.org"))
    with pytest.raises(ValueError, match="names its patch"):
        Check(api, 0, "fail", "ctx")
