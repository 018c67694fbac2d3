"""scripts/get_maintainer.pl on one patch mail -> the MAINTAINERS sections it touches.

Run as `get_maintainer.pl --no-git --no-git-fallback --sections MAIL` from the tree's top (it
insists on that): one block per section, its name and then its `X:\tvalue` lines. From the
sections come two findings: `missing-cc` when a mailed patch's To/Cc lacks a section's list or
all of its maintainers (netdev's CI checks the same), and `recipients`, the To/Cc an author
should use, when the series was not mailed yet (a git range has no To/Cc).
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


def missing_cc(patch: Patch, sections: Sequence[Section]) -> Iterator[Finding]:
    """A warning per touched section whose list, or every maintainer, is not on the patch's To/Cc."""
    present = {_key(a) for a in (*patch.to, *patch.cc, patch.author.email)}
    for section in (s for s in sections if s.name != REST):
        lists = [a for a in section.lists if _key(a) not in present]
        nobody = bool(section.maintainers) and not any(_key(m) in present for m in section.maintainers)
        what = [f"the list {', '.join(lists)}"] if lists else []
        what += [f"all its maintainers ({', '.join(section.maintainers)})"] if nobody else []
        if what:
            yield Finding("get-maintainer/missing-cc", Level.WARNING,
                          f"touches {section.name}, but To/Cc misses {' and '.join(what)}",
                          patch.index, _first_file(patch, section), hint=HINT)


def recipients(series: Series, sections: Iterable[Section]) -> Finding:
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
