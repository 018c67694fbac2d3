"""What the user named: a file, a directory, a git range or a Message-ID -> Series."""
from __future__ import annotations

import io
import logging
import stat
import sys
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from reviewer.errors import FetchError, InputError
from reviewer.model import Series
from reviewer.series import fetch, lore, msgid
from reviewer.store import threads as cache
from reviewer.tree import git as tree_git
from reviewer.tree import kerneltop

if TYPE_CHECKING:
    import git  # GitPython: only a git range needs it (docs/design.md, "Imports kept lazy")


class Kind(StrEnum):
    MBOX = "mbox"
    MAILDIR = "maildir"
    PATCHDIR = "patchdir"
    RANGE = "range"
    MSGID = "msgid"
    STDIN = "stdin"


@dataclass(frozen=True)
class TargetSpec:
    kind: Kind
    text: str
    path: Path | None = None
    ref: msgid.MsgRef | None = None


def classify(text: str, cwd: Path) -> TargetSpec:
    """Decide what TEXT names. Files win over everything, then ids, then git revisions."""
    if text == "-":
        return TargetSpec(Kind.STDIN, text)
    path = Path(text) if Path(text).is_absolute() else cwd / text
    try:
        if (found := _on_disk(path, text)) is not None:
            return found
    except PermissionError as exc:  # a directory on the way, or the directory itself, that we may not read
        raise InputError(f"{text}: cannot read it: {exc.strerror}", "check its permissions, and those of the directories above it") from exc
    if msgid.looks_like_range(text):
        return TargetSpec(Kind.RANGE, text)
    ref = msgid.parse(text) or lore.link_msgid(text, cwd)
    if ref is not None:
        return TargetSpec(Kind.MSGID, text, ref=ref)
    if _looks_like_path(text):
        raise InputError(f"{text}: no such file or directory", "check the path; give an mbox, a maildir or a git format-patch directory")
    return TargetSpec(Kind.RANGE, text)


def range_tree(text: str | None, cwd: Path) -> Path | None:
    """The kernel tree a git range TEXT is read from, to review the range against as --tree would: the top of
    CWD's work tree when that is a kernel tree. None: TEXT is no git range, or CWD is in no kernel tree."""
    try:
        if text is None or classify(text, cwd).kind is not Kind.RANGE:
            return None
    except InputError:
        return None
    from reviewer.tree.repo import top_of  # GitPython, which reads the range next

    top = top_of(cwd)
    return top if top and kerneltop.is_kernel_tree(top) else None


def _on_disk(path: Path, text: str) -> TargetSpec | None:
    if path.is_dir():
        is_maildir = all((path / d).is_dir() for d in ("cur", "new", "tmp"))
        return TargetSpec(Kind.MAILDIR if is_maildir else Kind.PATCHDIR, text, path)
    if path.exists():
        _regular(path, text)
        return TargetSpec(Kind.MBOX, text, path)
    return None


def _regular(path: Path, text: str) -> None:
    """TEXT names a file that can be read to its end: a FIFO waits for a writer forever, a device
    (/dev/zero) never ends, a socket cannot be opened; none of them is a saved mail."""
    mode = path.stat().st_mode
    kind = next((k for test, k in _SPECIAL if test(mode)), None)
    if kind is not None:
        raise InputError(f"{text}: {kind}, not a file", "give an mbox or patch file, a directory, or - to read standard input")


_SPECIAL = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _looks_like_path(text: str) -> bool:
    return "/" in text and not text.startswith(("origin/", "refs/")) or text.endswith((".mbox", ".patch", ".eml", ".mbx"))


# What loading tells on the way (a newer revision, a search that failed): log records, never prints; the CLI
# shows them on stderr (the NullHandler keeps logging's last resort quiet for a caller without logging).
log = logging.getLogger(__name__)
log.addHandler(logging.NullHandler())


@dataclass(frozen=True)
class Remote:
    """How to reach lore for a Message-ID target (the CLI's --lore-url, --no-cache, --offline; git config
    reviewer.loreUrl and reviewer.cacheMinutes, read and checked by config.py before anything is fetched)."""

    lore_url: str | None = None
    no_cache: bool = False
    offline: bool = False
    configured_url: str | None = None  # reviewer.loreUrl
    cache_minutes: float | None = None  # reviewer.cacheMinutes (None: the cache's own freshness)

    @property
    def fresh_seconds(self) -> float:
        return self.cache_minutes * 60 if self.cache_minutes is not None else cache.FRESH_SECONDS


def load(target: TargetSpec, cwd: Path, revision: int | None = None, *, debug: bool = False, remote: Remote | None = None) -> Series:
    """Read the messages TARGET names and build the series from them."""
    if target.kind is Kind.MSGID:
        assert target.ref is not None
        msgs = _fetch(target.ref, remote or Remote(), cwd)
        series = fetch.build_series(msgs, target.text, revision, debug=debug)
        if series.revisions and series.version < max(series.revisions):
            log.info("note: a newer revision of this series exists (v%d); reviewing v%d as asked", max(series.revisions), series.version)
        return series
    if target.kind is Kind.RANGE:
        msgs, base = range_messages(cwd, target.text)
        series = fetch.build_series(msgs, target.text, revision, debug=debug)
        return series if series.base_commit else _with_base(series, base)
    msgs = _read(target)
    if not msgs:
        raise InputError(f"{target.text}: empty input, no mail in it", "give an mbox or format-patch output holding a patch series")
    return fetch.build_series(msgs, target.text, revision, debug=debug)


def _fetch(ref: msgid.MsgRef, remote: Remote, cwd: Path) -> list[fetch.Message]:
    """The thread of REF, from the cache when fresh (or --offline), else from lore (then cached)."""
    if remote.offline:
        return fetch.split_thread(_offline(ref))
    server = lore.Server(lore.server_url(ref, remote.lore_url, remote.configured_url, cwd))
    fresh = remote.fresh_seconds
    if not remote.no_cache:
        cached = _cached(ref, fresh)
        if cached is not None:
            return fetch.split_thread(cached)
    full = ref.msgid
    if ref.truncated:
        full = lore.resolve(server, ref.msgid)
        # Several cached threads started with the prefix: now that lore said which, it may be cached.
        cached = None if remote.no_cache else cache.read(full, fresh)
        if cached is not None:
            return fetch.split_thread(cached)
    msgs = fetch.split_thread(server.thread_mbox(full))
    try:
        msgs = fetch.with_other_revisions(msgs, server.url, server.session, server.policy.timeout)
    except FetchError as exc:
        log.warning("%s", exc.message)
    cache.write(full, fetch.to_mbox(msgs))
    return msgs


def _cached(ref: msgid.MsgRef, fresh: float) -> bytes | None:
    """A fresh cached thread for REF without asking lore; a truncated id only when exactly one
    cached thread starts with it (lore would be asked to resolve an ambiguous one)."""
    ids = _cached_ids(ref)
    data = cache.read(ids[0], fresh) if len(ids) == 1 else None
    if data is not None and ref.truncated:
        log.info("resolved %s to %s (a thread cached in the last %s minutes)", ref.msgid, ids[0], f"{fresh / 60:g}")
    return data


def _cached_ids(ref: msgid.MsgRef) -> list[str]:
    """The cached Message-IDs REF may name: those starting with it when it is truncated."""
    return cache.starting_with(ref.msgid) if ref.truncated else [ref.msgid]


def _offline(ref: msgid.MsgRef) -> bytes:
    hint = "run once without --offline to fetch and cache it"
    ids = _cached_ids(ref)
    if len(ids) > 1:
        raise FetchError(f"{ref.msgid!r} is ambiguous: {len(ids)} cached series match: {', '.join(ids)}", "give more of the Message-ID")
    data = cache.read(ids[0], max_age=None) if ids else None
    if data is None:
        raise FetchError(f"<{ref.msgid}> is not in the cache ({cache.directory()}) and --offline forbids fetching it", hint)
    return data


def _read(target: TargetSpec) -> list[fetch.Message]:
    if target.kind is Kind.STDIN:

        return read_stdin(sys.stdin.buffer.read())
    assert target.path is not None
    if target.kind is Kind.PATCHDIR:
        try:
            files = sorted(p for p in target.path.iterdir() if p.suffix in (".patch", ".eml") and p.is_file())
        except OSError as exc:
            raise InputError(f"{target.text}: cannot read this directory: {exc.strerror}", "check the directory's permissions") from exc
        if not files:
            raise InputError(f"{target.text}: no *.patch files in this directory", "point at the output directory of `git format-patch`")
        return [m for f in files for m in _read_file(f)]
    return _read_file(target.path)


def read_stdin(data: bytes) -> list[fetch.Message]:
    """Standard input: an mbox (a whole thread, as `b4 mbox -o -` or `git format-patch --stdout` write it) or one mail."""
    if not data.startswith(b"From "):
        return [fetch.parse_bytes(data, "stdin")] if data.strip() else []
    return [fetch.parse_bytes(mail, f"stdin: message {n}") for n, mail in enumerate(split_mbox(data), start=1)]


def split_mbox(data: bytes) -> list[bytes]:
    """An mbox's mails as Python's mailbox.mbox splits a file (fetch.read_mbox): a mail starts at each line
    that starts with `From ` (dropped), and the blank line before the next one is the separator. In memory:
    a file in $TMPDIR would be one more thing to fail (a full disk) and to leave behind."""
    mails: list[list[bytes]] = []
    for line in io.BytesIO(data):  # lines end at b"\n" only, as mailbox reads them
        if line.startswith(b"From "):
            mails.append([])
        elif mails:
            mails[-1].append(line)
    return [b"".join(m[:-1] if m and m[-1] == b"\n" else m) for m in mails]


def _read_file(path: Path) -> list[fetch.Message]:
    try:
        return fetch.read_mbox(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}", "check the file's permissions") from exc


def _with_base(series: Series, base: str) -> Series:

    return replace(series, base_commit=base)


def range_messages(cwd: Path, spec: str) -> tuple[list[fetch.Message], str]:
    """`git format-patch` the commits of SPEC in the repository at CWD; return them and the base."""
    import git

    try:
        repo = git.Repo(cwd, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise InputError(f"{spec}: not a file, a Message-ID, and {cwd} is not a git repository",
                         "give an mbox or directory, or run in (or -C) the kernel tree") from exc
    start, end = _split_range(spec)
    base = _resolve(repo, start, spec)
    tip = _resolve(repo, end, spec)
    if ".." in spec and "..." in spec:
        base = repo.merge_base(base, tip)[0].hexsha
    out = tree_git.git(Path(repo.working_dir), "format-patch", "--stdout", "-M", "--no-signature", f"{base}..{tip}", timeout=300)
    if not out.strip():
        raise InputError(f"{spec}: the range holds no commits", f"check the range: `git log --oneline {spec}` shows nothing")
    return _split_stdout_mbox(out), base


def _split_range(spec: str) -> tuple[str, str]:
    sep = "..." if "..." in spec else ".."
    if sep not in spec:
        return spec, "HEAD"  # like format-patch: commits since REV
    start, end = spec.split(sep, 1)
    return start or "HEAD", end or "HEAD"


def _resolve(repo: git.Repo, rev: str, spec: str) -> str:
    import git

    try:
        return repo.commit(rev).hexsha
    except (git.BadName, ValueError) as exc:
        raise InputError(f"{spec}: unknown revision {rev!r} in {repo.working_dir}",
                         "check the range with `git log --oneline RANGE`") from exc


def _split_stdout_mbox(text: str) -> list[fetch.Message]:
    chunks: list[str] = []
    cur: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("From ") and line.rstrip().endswith("Mon Sep 17 00:00:00 2001") and cur:
            chunks.append("".join(cur))
            cur = []
        cur.append(line)
    chunks.append("".join(cur))
    # The `From <sha>` line is git's, not a header: the mail starts after it.
    return [fetch.parse_bytes(c.partition("\n")[2].encode(), f"commit {n} of the range")
            for n, c in enumerate((c for c in chunks if c.strip()), start=1)]
