"""Every patch carries a Signed-off-by from its author, written as the author's From: line.

Why: the Developer's Certificate of Origin (Documentation/process/submitting-patches.rst)
needs the author's sign-off; maintainers cannot apply a patch without it. The author is the
mail's From: (the in-body `From:` when the mail has one), the sign-offs are the
`Signed-off-by:` lines of the commit message's trailer block (not follow-up replies').
We decide as the tree's scripts/checkpatch.pl (6.12) does, so that its NO_AUTHOR_SIGN_OFF,
MISSING_SIGN_OFF and FROM_SIGN_OFF_MISMATCH and this check never disagree (tested against
checkpatch.pl itself, tests/realkernel/test_checkpatch_oracle.py). Each Signed-off-by is
split into name, `(comment)` in the name, address and a comment after it:
- one equal to the author in all four (the name's case too): signed off, nothing to say;
- none equal, but the last one that is close: same name and address but for the address's
  case or a comment: `comment` (info; checkpatch's CHECK); same address (any case), another
  name: `name`; same name, an address that differs only in a `+tag` (`jane+lkml@` and
  `jane@`): `subaddress`; same name, another address: `address` (warnings, as checkpatch's);
- no Signed-off-by at all, or none by the author (neither name nor address): an error.
A `# comment` after a trailer is the trailer's comment (as git and b4 read it), not part of the
address: `Signed-off-by: A <a@example.org> # 6.1` is the author's own, where checkpatch's
--strict calls it a comment mismatch (a CHECK).
PASS: `From: A <a@example.org>` and `Signed-off-by: A <a@example.org>`.
FAIL: no Signed-off-by, or one from someone else only (error); `Signed-off-by: A <a+lkml@example.org>`
(subaddress), `Signed-off-by: B <a@example.org>` (name), `Signed-off-by: A <a@corp.example>` (address).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

from reviewer.checks._address import Address, parse, reformat, without_subaddress
from reviewer.model import Finding, Level, Patch, Person, Series

ID = "author-signoff"
LEVEL = Level.ERROR
LEVELS = {"comment": Level.INFO, "name": Level.WARNING, "subaddress": Level.WARNING, "address": Level.WARNING}
ADD = "add `Signed-off-by: NAME <EMAIL>` matching the From: line (git commit -s)"
HINTS = {
    "comment": "write the sign-off exactly as the From: line",
    "name": "sign off with the From: name, or send the patch under the name you sign off with",
    "subaddress": "sign off with the From: address, +tag and all",
    "address": "sign off with the From: address, or put the sign-off's address in an in-body `From:` line",
}


def check(series: Series) -> Iterator[Finding]:
    for patch in series.patches:
        signoffs = [t.value for t in patch.trailers if t.source == "patch" and t.name.lower() == "signed-off-by"]
        if not signoffs:
            yield Finding.on(patch, "no Signed-off-by at all", hint=ADD)
        elif patch.author.email:
            yield from _against(patch, reformat(author_text(patch.author)), signoffs)


def author_text(person: Person) -> str:
    """The From: line's `Name <address>` (b4 fills an empty name with the address: that is no name)."""
    name = person.name if person.name not in ("", person.email) else ""
    return f"{name} <{person.email}>" if name else person.email


def closeness(signoff: Address, author: Address) -> str | None:
    """The empty sub-id for the author's own sign-off, a sub-id for a near one, None for someone else's."""
    if signoff == author:
        return ""
    same_address, same_name = signoff.address.lower() == author.address.lower(), signoff.name == author.name
    if same_address:
        return "comment" if same_name else "name"
    if not same_name:
        return None
    return "subaddress" if without_subaddress(signoff.address) == without_subaddress(author.address) else "address"


def verdict(author: Address, signoffs: Sequence[str]) -> tuple[str, str] | None:
    """None when the author signed off; else (sub-id, the sign-off it is about), sub-id "" for none
    by the author. The last near sign-off counts, as in checkpatch."""
    found = ("", "")
    for text in signoffs:
        kind = closeness(parse(text), author)
        if kind == "":
            return None
        if kind is not None:
            found = (kind, text)
    return found


def _against(patch: Patch, author: Address, signoffs: Sequence[str]) -> Iterator[Finding]:
    result = verdict(author, signoffs)
    if result is None:
        return
    kind, text = result
    if not kind:
        yield Finding.on(patch, f"no Signed-off-by from the author {author}", hint=ADD)
        return
    yield Finding(kind, LEVEL, f"the author's Signed-off-by `{text.strip()}` differs from From: `{author}` in "
                  f"{_differs(kind, parse(text), author)}", patch.index, hint=HINTS[kind])


def _differs(kind: str, signoff: Address, author: Address) -> str:
    if kind != "comment":
        return {"name": "the name", "subaddress": "the address's +tag", "address": "the address"}[kind]
    parts = (("the address's case", signoff.address, author.address), ("the name's comment", signoff.name_comment, author.name_comment),
             ("the comment after the address", signoff.comment, author.comment))
    return " and ".join(what for what, mine, theirs in parts if mine != theirs)
