"""One tick of the bot, the parts joined (docs/bot.md, "Running it"); the time is passed in, so tests say when.

    feed (public-inbox-fetch, the messages since the cursor) -> store.record -> assemble (the list's settle)
    -> store.save_ready -> per series decided: policy.plan -> jobs (Bot.submit; supersede: cancel the older)
    replies to known series -> commands.parse -> stored stops (and reruns)
    a static job done -> its `report` job, run here: policy.may_mail -> the reply (report/email.py, threaded to the
    cover letter or first patch) + etiquette footer, checked -> outbox.put_with_result, one transaction
    -> outbox.drain (the sender: SMTP as git send-email is configured)

The report runs in the process that holds the policy and the sender's configuration, never in a build or guest
worker; it is a job of the `report` pool all the same, claimed here, so that a result and its mail are written
together (Outbox.put_with_result) and a crash between them leaves the report job to be claimed again.
"""
from __future__ import annotations

import dataclasses
import email.utils
import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from reviewer.bot import assemble, commands, etiquette, feed, lei, patchwork, policy, rounds, stages
from reviewer.bot.assemble import Assembled, Readiness, Seen
from reviewer.bot.config import BotConfig, ListConfig
from reviewer.bot.jobs import Job, Spec, pool_for
from reviewer.bot.mboxes import Mboxes
from reviewer.bot.outbox import Delivery, Item, Mail, Outbox, Row
from reviewer.bot.queue import Bot, worker_name
from reviewer.bot.store import Store
from reviewer.errors import ConfigError, FetchError
from reviewer.model import Level, Series
from reviewer.report import email as reply_mail
from reviewer.report import send
from reviewer.series import mbox
from reviewer.series.fetch import build_series, read_mbox
from reviewer.tree import git

log = logging.getLogger(__name__)
REPORT = rounds.REPORT
NO_BASE = "none (a static review reads no tree)"
INCOMPLETE = "incomplete"  # the config of the jobs of a series decided incomplete
LOOK_BACK = 600.0  # report(): the jobs changed this long before its last look are looked at again (other machines' clocks)


@dataclass
class Loop:
    """The bot's state, jobs and outbox for CFG; FETCH: run public-inbox-fetch on each mirror first."""

    cfg: BotConfig
    fetch: bool = True
    store: Store = field(init=False)
    bot: Bot = field(init=False)
    outbox: Outbox = field(init=False)
    policies: policy.Policies = field(init=False)

    looked: float = field(init=False, default=0.0)  # when report() last looked for ended rounds (0: never)

    def __post_init__(self) -> None:
        self.policies = policy.load(self.cfg.path)
        self.store = Store.in_home(self.cfg.home)
        self.bot = Bot(self.cfg.settings())
        self.outbox = Outbox(self.bot.jobs.db)
        self.bot.jobs.db.create(rounds.INDEXES)
        self.check()

    def close(self) -> None:
        self.bot.close()
        self.store.close()

    def pools(self) -> list[str]:
        """The pools the configured lists' stages run in (those the stage registry has): static, apply, build-ARCH, guest-ARCH."""
        wanted = {"static"}
        for name in self.lists():
            pol = self.policies.get(name)
            for stage in (s for s in pol.stages if s in stages.STAGES):
                wanted |= {pool_for(stage, a) for a in pol.arches} if stage in stages.ARCH_STAGES else {stage}
        return sorted(wanted)

    def check(self) -> None:
        """ConfigError for a list whose stages need a kernel tree it does not name."""
        for name, lc in self.lists().items():
            needs = [s for s in self.policies.get(name).stages if s in stages.TREE_STAGES]
            if needs and lc.tree is None:
                raise ConfigError(f"{self.cfg.path}: [lists.{name}] tree: missing: stage {needs[0]!r} applies series to a kernel tree",
                                  'e.g. tree = "/srv/linux" (a git clone of the tree the list\'s series are made against)')

    def lists(self) -> dict[str, ListConfig]:
        return dict(self.cfg.lists or {})

    def busy(self) -> int:
        """How many jobs (the report's aside) are queued or running: `--once` waits until none is."""
        return sum(c.jobs for c in self.bot.jobs.counts() if c.pool != REPORT and c.state in ("queued", "running"))


def tick(loop: Loop, now: float) -> list[str]:
    """Read every list's feed at NOW and start the work it brings; what was decided, one line each (for the log)."""
    loop.policies = loop.policies.reloaded()
    out: list[str] = []
    for name, lc in loop.lists().items():
        try:
            out += read_lei(loop, name, lc.lei, now) if lc.lei else read_list(loop, name, mirror_path(loop.cfg, lc), now)
        except FetchError as exc:  # a server away for a while, a mirror being repaired: the other lists go on, and the next tick
            log.warning("%s", exc.message)
            out.append(f"{name}: not read: {exc.message}")
    return out


def mirror_path(cfg: BotConfig, lc: ListConfig) -> Path:
    if lc.lei:
        raise ConfigError(f"{cfg.path}: [lists.{lc.name}] follows a lei search, not a mirror", "enqueue the series' mbox instead")
    path = Path(lc.mirror)
    if "://" in lc.mirror or not (path / "git").is_dir():
        raise ConfigError(f"{cfg.path}: [lists.{lc.name}] mirror: {lc.mirror} is no local public-inbox mirror",
                          f"make one with: public-inbox-clone URL {lc.mirror if '://' not in lc.mirror else 'DIR'}")
    return path


Reader = Callable[[int, str], bytes]  # (epoch, commit) of a message the store recorded -> the message, read again


def from_mirror(mirror: Path) -> Reader:
    return lambda epoch, commit: feed.message(mirror, epoch, commit)


def read_list(loop: Loop, name: str, mirror: Path, now: float) -> list[str]:
    if loop.fetch:
        feed.fetch(mirror)
    raw, cursor = feed.new_messages(mirror, loop.store.cursor(name))
    new = loop.store.record(name, assemble.read(name, raw, now), cursor)
    return decide(loop, name, raw, new, from_mirror(mirror), now)


def read_lei(loop: Loop, name: str, query: str, now: float) -> list[str]:
    """A list followed with a lei saved search (lei.py): its maildir in the bot's home, `lei q` the first time and
    `lei up` after; the files not read before, recorded with the names read in the store."""
    maildir = loop.cfg.home / "lei" / name
    if loop.fetch:
        lei.follow(maildir, query)
    cursor = lei.Cursor(loop.store, name)
    raw = lei.new_messages(maildir, cursor.read())
    new = loop.store.record(name, assemble.read(name, raw, now), {})
    cursor.mark(raw)
    return decide(loop, name, raw, new, lambda _epoch, key: lei.message(maildir, key), now)


def decide(loop: Loop, name: str, raw: list[feed.RawMail], new: list[Seen], read: Reader, now: float) -> list[str]:
    """The commands in NEW, and the jobs of the series of list NAME that became ready at NOW."""
    pol = loop.policies.get(name)
    series = assemble.assemble(loop.store.messages(name), now, pol.settle)
    data = {(m.epoch, m.commit): m.data for m in raw}
    out = obey(loop, series, new, data, pol)
    for s in loop.store.save_ready(series, now):
        out.append(start(loop, s, pol, read, now))
    return out


def obey(loop: Loop, series: list[Assembled], new: list[Seen], data: Mapping[tuple[int, str], bytes], pol: policy.Policy) -> list[str]:
    """The commands in the new replies to known series: stops stored, reruns queued; ignored ones logged."""
    out = []
    parts = {m for s in series for m in s.parts}
    for seen in new:
        refs = set(seen.facts.mail.references)
        if seen.msgid in parts or not refs:
            continue
        for s in (s for s in series if refs & {s.root, *s.parts}):
            parsed = commands.parse(data[(seen.epoch, seen.commit)], s, commands.authority(s, pol, ()))
            loop.store.stop(parsed.commands)
            out += [f"{s.key}: {c.verb} by {c.by} ({c.msgid})" for c in parsed.commands]
            out += [f"{s.key}: ignored {i.line!r} by {i.by}: {i.reason}" for i in parsed.ignored]
            for c in parsed.commands:
                if c.verb is commands.Verb.RERUN and c.stage in stages.STAGES:
                    earlier = {j.arch: j for j in loop.bot.jobs.select(series=s.key) if j.stage == c.stage}  # the newest of each arch
                    for arch, j in earlier.items():
                        loop.bot.submit(Spec(list=s.list, series=s.key, stage=c.stage, arch=arch, config=f"rerun {c.msgid}", base=j.base,
                                             payload=j.payload))
    return out


def start(loop: Loop, s: Assembled, pol: policy.Policy, read: Reader, now: float) -> str:
    """The work SERIES (just decided) gets under POL: its jobs submitted (one per stage, and per arch for build and
    guest), the older revision's cancelled."""
    plan = policy.plan(s, pol, now)
    cancelled = loop.bot.jobs.cancel_series(s.supersedes) if s.supersedes else 0
    note = f" (supersedes {s.supersedes}: {cancelled} job(s) cancelled)" if s.supersedes else ""
    if plan.action is not policy.Action.RUN:
        return f"{s.key}: {plan.action}: {plan.reason}{note}"
    path = write_mbox(loop, s, read)
    tree = loop.lists()[s.list].tree
    ran = [st for st in plan.stages if st in stages.STAGES and (tree is not None or st not in stages.TREE_STAGES)]
    base = base_of(tree, path) if tree is not None and set(ran) & set(stages.TREE_STAGES) else ""
    payload = {"mbox": str(path), "mbox_sha256": path.stem, "series": s.key, "stages": list(ran), "arches": list(plan.arches)}
    config = INCOMPLETE if s.state is Readiness.INCOMPLETE else ""  # its own round: the complete series, if it comes, has another
    for stage in ran:
        more: dict[str, object] = {"tree": str(tree)} if stage in stages.TREE_STAGES else {}
        more |= {"bench_runs": pol.bench_runs} if stage == "guest" else {}
        for arch in plan.arches if stage in stages.ARCH_STAGES else ("",):
            loop.bot.submit(Spec(list=s.list, series=s.key, stage=stage, arch=arch, config=config, base=base if more else "",
                                 payload=payload | more))
    skipped = [st for st in plan.stages if st not in ran]
    later = f"; not run: {', '.join(skipped)} (no tree configured for the list)" if skipped else ""
    return f"{s.key}: run {', '.join(ran)}: {plan.reason}{note}{later}"


def base_of(tree: Path, mbox_path: Path) -> str:
    """The base of the series in MBOX_PATH in TREE, for its jobs' keys: its own base-commit when the tree has it, else
    the tree's HEAD now. The review chooses again when it runs (the series' base-commit, else a base guessed from the
    patches' blobs, else HEAD: pipeline.py) and its result says which it used."""
    series = build_series(read_mbox(mbox_path), "bot")
    rev = series.base_commit if series.base_commit and git.has_commit(tree, series.base_commit) else "HEAD"
    return git.read(tree, "rev-parse", f"{rev}^{{commit}}").strip()


def write_mbox(loop: Loop, s: Assembled, read: Reader) -> Path:
    """SERIES' parts, read again from the feed (READ), as an mbox in the bot's home (named by its content), and kept in the
    jobs table's database for workers on other machines (mboxes.py)."""
    where = {m.msgid: m for m in loop.store.messages(s.list)}
    data = mbox.write(read(where[m].epoch, where[m].commit) for m in s.parts)
    Mboxes(loop.bot.jobs.db).put(data)
    path = loop.cfg.home / "mbox" / f"{hashlib.sha256(data).hexdigest()}.mbox"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path


def report(loop: Loop, sender: str, now: float) -> list[str]:
    """The report of every round whose jobs all ended (rounds.due): a `report` job each, claimed and run here (see
    the module's doc)."""
    since, loop.looked = max(0.0, loop.looked - LOOK_BACK), time.time()  # the workers' clocks, not the policy's NOW
    for r in rounds.due(loop.bot.jobs, since):
        loop.bot.jobs.put(Spec(list=r.list, series=r.series, stage=REPORT, config=r.config, payload={"config": r.config}), now)
    out, me = [], worker_name()
    while (rj := loop.bot.jobs.claim(REPORT, me, loop.cfg.settings().lease, now)) is not None:
        try:
            out.append(report_one(loop, rj, me, sender, now))
        except Exception as exc:  # one report's failure is its job's (retried, then failed, in status); the others go on
            loop.bot.jobs.fail(rj.id, me, f"{type(exc).__name__}: {exc}", now, retry_delay=loop.cfg.settings().retry_delay)
            out.append(f"{rj.series}: report failed: {exc}")
    return out


def report_one(loop: Loop, rj: Job, me: str, sender: str, now: float) -> str:
    s = next((x for x in loop.store.series(rj.list) if x.key == rj.series), None)
    jobs = rounds.of_series(loop.bot.jobs, rj.list, rj.series)
    if s is None or not jobs:
        loop.outbox.put_with_result(rj.id, me, {"verdict": "never", "reason": "no jobs or series"}, [], now)
        return f"{rj.series}: nothing to report"
    series = build_series(read_mbox(Path(jobs[0].payload["mbox"])), "bot")
    merged = rounds.merge(jobs, series)
    pol = loop.policies.get(rj.list)
    if rj.config == INCOMPLETE:  # decided before its missing parts came (if they ever do): never mailed, whatever s is now
        s = dataclasses.replace(s, state=Readiness.INCOMPLETE)
    checks = patchwork_checks(pol, rj, merged, series)
    result: dict[str, Any] = {"jobs": [j.id for j in merged.used], "failed": {pool_name(j): j.error for j in merged.failed},
                              "checks": len(checks)}
    if not merged.used:
        loop.outbox.put_with_result(rj.id, me, result | {"verdict": "never", "reason": "no stage ended with a result"}, checks, now)
        return f"{s.key}: no mail: no stage ended with a result"
    sent = [policy.Sent(r.list, str(r.meta.get("author", "")), at) for r, at in loop.outbox.mails_since(now - policy.DAY)]
    decision = policy.may_mail(pol, s, merged.levels, sent, now, stopped=loop.store.stops().stopped(s))
    result |= {"verdict": str(decision.verdict), "reason": decision.reason}
    if decision.verdict is policy.Verdict.NEVER:
        loop.outbox.put_with_result(rj.id, me, result, checks, now)
        return f"{s.key}: no mail: {decision.reason}" + (f"; {len(checks)} check(s) queued" if checks else "")
    msg = reply(s, merged, series, sender, to_list=decision.to_list)
    mail = Mail.of(f"mail {rj.key}", msg, author=s.sender, not_before=decision.not_before or 0.0)
    loop.outbox.put_with_result(rj.id, me, result | {"message_id": str(msg["Message-ID"])}, [mail, *checks], now)
    when = "" if decision.send else f" (not before {decision.not_before:.0f}: {decision.reason})"
    return f"{s.key}: mail queued{when}" + (f"; {len(checks)} check(s) queued" if checks else "")


def pool_name(job: Job) -> str:
    return f"{job.stage}-{job.arch}" if job.arch else job.stage


def patchwork_checks(pol: policy.Policy, rj: Job, merged: rounds.Merged, series: Series) -> list[Item]:
    """One check per patch for each stage job MERGED used (context reviewer-STAGE[-ARCH]), when the list posts checks."""
    pw = pol.patchwork
    if pw is None or not pw.checks:
        return []
    out: list[Item] = []
    for job in merged.used:
        found = rounds.merge([job], series)
        state, what = _check_state(found)
        context = f"reviewer-{pool_name(job)}"
        for c in patchwork.per_message(pw.url, pw.project, [p.msgid for p in series.patches if p.msgid], state, context, what):
            out.append((f"check {rj.key} {context} {c.msgid}", c))
    return out


def _check_state(merged: rounds.Merged) -> tuple[str, str]:
    levels = merged.levels
    errors, warnings = levels.count(Level.ERROR), levels.count(Level.WARNING)
    if errors:
        return "fail", f"{errors} error(s), {warnings} warning(s)"
    if warnings:
        return "warning", f"{warnings} warning(s)"
    return "success", "no errors or warnings"


def reply(s: Assembled, merged: rounds.Merged, series: Series, sender: str, *, to_list: bool) -> EmailMessage:
    """The bot's reply about S (threaded to its cover letter or first patch), footer added and checked."""
    opts = reply_mail.ReplyOptions(sender, policy=reply_mail.ReplyPolicy.LIST if to_list else reply_mail.ReplyPolicy.AUTHOR)
    msg = reply_mail.reply(merged.review, opts)
    first = merged.used[0]
    applied = merged.review.apply
    base = applied.base if applied is not None else next((j.base for j in merged.used if j.base), "") or NO_BASE
    ran, arches = first.payload.get("stages", ["static"]), first.payload.get("arches", [])
    footer = etiquette.Footer(base, etiquette.reproduce(s.root, base, ran, arches))
    msg = etiquette.bot_mail(msg, footer)
    target = series.cover or (series.patches[0] if series.patches else None)
    allowed = [s.sender, *(p.email for p in (series.author,) if p is not None), *(target.to if target and to_list else ())]
    etiquette.check(msg, [a for x in allowed for a in _addresses(x)])
    return msg


def _addresses(text: str) -> list[str]:
    return [a for _, a in email.utils.getaddresses([text]) if a]


def drain(loop: Loop, delivery: Delivery, now: float) -> list[Row]:
    return loop.outbox.drain(delivery, now)


def delivery(cfg: BotConfig, policies: policy.Policies | None = None) -> tuple[Delivery, str]:
    """The sender, configured as git send-email is (sendemail.*, read in the configuration file's directory), with the
    Patchwork token of each list that posts checks (POLICIES'), and the From: address."""
    where = cfg.path.parent
    tokens: dict[str, str] = {}
    for name in (cfg.lists or {}) if policies is not None else ():
        pw = policies.get(name).patchwork if policies is not None else None
        if pw is not None and pw.checks and pw.token_file:
            tokens[pw.url] = _token(cfg, name, where / pw.token_file)
    return Delivery(send.transport(where), where, tokens), send.sender(where)


def _token(cfg: BotConfig, name: str, path: Path) -> str:
    try:
        token = path.read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"{cfg.path}: [lists.{name}] patchwork.token_file: {path}: cannot be read: {why}") from None
    if not token or any(c.isspace() for c in token):
        raise ConfigError(f"{cfg.path}: [lists.{name}] patchwork.token_file: {path}: not one token", "the file holds the API token alone")
    return token


def wait_idle(loop: Loop, seconds: float, poll: float = 0.2) -> bool:
    """Wait until no job (the report's aside) is queued or running; whether that happened within SECONDS."""
    deadline = time.monotonic() + seconds
    while loop.busy():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
    return True
