"""The facts of a series' shape, in the words every report uses: postings, partial rerolls,
follow-up patches, patches sent on someone's behalf, pull requests."""
from __future__ import annotations

from reviewer.model import Posting, Series


def when(posting: Posting) -> str:
    return posting.date.strftime("%Y-%m-%d %H:%M %z") if posting.date else "undated"


def other_postings(s: Series) -> list[str]:
    """The postings of the reviewed revision that are not reviewed, and replaced copies, one line each."""
    out = []
    for p in s.postings:
        if p.revision != s.version:
            continue
        if not p.reviewed:
            held = f"{len(p.patches)} of {p.total} patches"
            out.append(f"v{p.revision} also posted {when(p)} by {p.sender} ({held}): <{p.msgid}> {p.subject}")
        out += [f"an earlier copy of a patch, replaced by a later one in the same posting: <{m}>" for m in p.replaced]
    return out


def reroll(s: Series) -> str | None:
    """`v3 is a partial reroll: 2/3 resent; 1/3, 3/3 carried over from v2`."""
    source = s.reroll_from
    if source is None:
        return None
    carried = [f"{p.index}/{s.total}" for p in s.patches if p.carried_from is not None]
    resent = [f"{p.index}/{s.total}" for p in s.patches if p.carried_from is None]
    return (f"v{s.version} is a partial reroll: {', '.join(resent) or 'nothing'} resent; "
            f"{', '.join(carried)} carried over from v{source}")


def followups(s: Series) -> list[str]:
    out = []
    for f in s.followup_patches:
        of = "the cover letter" if f.of_patch == 0 else f"patch {f.of_patch}/{s.total}"
        out.append(f"{f.subject} by {f.author}, in reply to {of} (not part of the series): <{f.msgid}>")
    return out


def on_behalf(s: Series) -> list[str]:
    """Patches whose author (the in-body From:) is not the mail's sender."""
    groups: dict[tuple[str, str], list[str]] = {}
    for p in s.patches:
        if p.sender is not None:
            groups.setdefault((str(p.author), str(p.sender)), []).append(f"{p.index}/{s.total}")
    return [f"{', '.join(idx)}: by {author}, sent by {sender}" for (author, sender), idx in groups.items()]


def pull(s: Series) -> str | None:
    pr = s.pull_request
    if pr is None:
        return None
    span = ", ".join(x for x in (f"since {pr.base[:12]}" if pr.base else "", f"up to {pr.tip[:12]}" if pr.tip else "") if x)
    return f"{pr.url} {pr.ref}" + (f" ({span})" if span else "")


def ran_on(base: str, patched: str) -> str:
    """Where a base/patched pair of runs ran, in one phrase: "host 6.1.0-28-amd64 x86_64" when both ran on one
    kernel, "booted x86_64 tcg: base c4bac1c88685, patched 0a1b2c3d4e5f" when each booted its own."""
    if not base or not patched or base == patched:
        return base or patched
    b, p = base.split(" "), patched.split(" ")
    if b[0] == p[0] == "booted" and len(b) == len(p) == 4 and b[2:] == p[2:]:
        return f"booted {' '.join(b[2:])}: base {b[1]}, patched {p[1]}"
    return f"base: {base}; patched: {patched}"
