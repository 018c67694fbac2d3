"""scripts/get_maintainer.pl on one patch mail -> the MAINTAINERS sections it touches.

Run as `get_maintainer.pl --no-git --no-git-fallback --sections MAIL` from the tree's top (it
insists on that): one block per section, its name and then its `X:\tvalue` lines. From the
sections come two findings: `missing-cc` when a mailed patch's To/Cc lacks a section's list or
all of its maintainers (netdev's CI checks the same), and `recipients`, the To/Cc an author
should use, when the series was not mailed yet (a git range has no To/Cc). Both are infos, each
section said once for the series: who to Cc is the author's business before sending, and a reply
that repeats it for every patch buries what the review found (issue 30).
"""
from __future__ import annotations

import email.utils
import fnmatch
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from reviewer.model import Finding, Level, Patch, Series

SCRIPT = "scripts/get_maintainer.pl"
ARGS = ("--no-git", "--no-git-fallback", "--sections")
REST = "THE REST"  # the catch-all section: Linus and LKML; not a subsystem to Cc
HINT = "Cc them (`b4 prep --auto-to-cc`, or git send-email --cc-cmd='scripts/get_maintainer.pl --no-git --no-git-fallback')"


@dataclass(frozen=True)
class Section:
    name: str
    maintainers: tuple[str, ...] = ()  # "Name <addr>"
    reviewers: tuple[str, ...] = ()
    lists: tuple[str, ...] = ()  # addresses only
    files: tuple[str, ...] = ()  # F: patterns


def argv(tree: Path, mail: Path) -> list[str]:
    return ["perl", str(tree / SCRIPT), *ARGS, str(mail)]


def parse(output: str) -> list[Section]:
    """The sections in get_maintainer's `--sections` output, in its order, each once (it repeats them per file)."""
    seen: dict[str, Section] = {}
    for block in output.split("\n\n"):
        if (section := _section(block.strip("\n").splitlines())) is not None:
            seen.setdefault(section.name, section)
    return list(seen.values())


def _section(lines: list[str]) -> Section | None:
    if not lines or ":\t" in lines[0][:3]:
        return None
    fields: dict[str, list[str]] = {}
    for line in lines[1:]:
        key, sep, value = line.partition(":\t")
        if sep and len(key) == 1:
            fields.setdefault(key, []).append(value.strip())
    lists = [email.utils.parseaddr(v)[1] for v in fields.get("L", [])]
    return Section(lines[0].strip(), tuple(fields.get("M", [])), tuple(fields.get("R", [])),
                   tuple(a for a in lists if "@" in a), tuple(fields.get("F", [])))


def missing_cc(patches: Sequence[Patch], sections: Sequence[Sequence[Section]]) -> Iterator[Finding]:
    """An info per touched section whose list, or every maintainer, is not on the To/Cc of some of the
    PATCHES touching it (SECTIONS: each patch's), said once for the series and naming those patches."""
    misses: dict[str, list[tuple[Patch, Section, str | None]]] = {}
    for patch, per in zip(patches, sections, strict=True):
        for section in _missed(patch, per):
            misses.setdefault(section.name, []).append((patch, section, _first_file(patch, section)))
    for name, hits in misses.items():
        lists = list(dict.fromkeys(a for patch, s, _ in hits for a in s.lists if not _has(patch, a)))
        section = hits[0][1]
        nobody = any(s.maintainers and not any(_has(p, m) for m in s.maintainers) for p, s, _ in hits)
        what = [f"the list {', '.join(lists)}"] if lists else []
        what += [f"all its maintainers ({', '.join(section.maintainers)})"] if nobody else []
        yield Finding("get-maintainer/missing-cc", Level.INFO, f"{_who(hits)} {name}, but To/Cc misses {' and '.join(what)}",
                      hits[0][0].index if len(hits) == 1 else None, hits[0][2], hint=HINT)


def _missed(patch: Patch, sections: Sequence[Section]) -> Iterator[Section]:
    for section in (s for s in sections if s.name != REST):
        if any(not _has(patch, a) for a in section.lists) or (section.maintainers and not any(_has(patch, m) for m in section.maintainers)):
            yield section


def _has(patch: Patch, address: str) -> bool:
    return _key(address) in {_key(a) for a in (*patch.to, *patch.cc, patch.author.email)}


def _who(hits: list[tuple[Patch, Section, str | None]]) -> str:
    """`touches` (one patch: the finding names it), `patches 2/4 and 3/4 touch` or `every patch touches`."""
    if len(hits) == 1:
        return "touches"
    total = hits[0][0].total
    if len(hits) == total:
        return "every patch touches"
    names = [f"{p.index}/{total}" for p, _, _ in hits]
    return f"patches {', '.join(names[:-1])} and {names[-1]} touch"


def recipients(sections: Iterable[Section]) -> Finding:
    """The To (maintainers) and Cc (reviewers, lists) for the whole series, as b4 --auto-to-cc picks."""
    to: dict[str, str] = {}
    cc: dict[str, str] = {}
    for s in sections:
        for who in s.maintainers if s.name != REST else ():
            to.setdefault(_key(who), who)
        for who in (*s.reviewers, *s.lists):
            cc.setdefault(_key(who), who)
    cc = {k: v for k, v in cc.items() if k not in to}
    message = f"send to: To: {', '.join(to.values()) or '-'}; Cc: {', '.join(cc.values()) or '-'}"
    return Finding("get-maintainer/recipients", Level.INFO, message,
                   hint="from scripts/get_maintainer.pl --no-git --no-git-fallback on the touched files")


def mailed(series: Series) -> bool:
    """Whether the series carries recipients at all (a git range or a prep branch does not)."""
    cover = series.cover
    return any(p.to or p.cc for p in series.patches) or (cover is not None and bool(cover.to or cover.cc))


def _key(address: str) -> str:
    """`Name <a+tag@b>` -> `a@b`: people are Cc'd without their sub-address tags too."""
    addr = (email.utils.parseaddr(address)[1] or address).lower()
    local, at, domain = addr.partition("@")
    return f"{local.split('+', 1)[0]}{at}{domain}"


def _first_file(patch: Patch, section: Section) -> str | None:
    paths = [fc.path for fc in patch.files]
    return next((p for p in paths for pattern in section.files if _matches(pattern, p)), None)


def _matches(pattern: str, path: str) -> bool:
    if pattern.endswith("/"):
        return path.startswith(pattern)
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(path, pattern)
    return path == pattern or path.startswith(pattern + "/")
