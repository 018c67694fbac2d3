"""Issue 14 item 5: what our rules and checks say about real, accepted code (the precision corpus).

tests/realkernel/precision.py takes each of its features out of Debian's 6.12 tree (a base commit)
and makes a series that puts it back, so that base + series is 6.12 byte for byte. Each series is
reviewed with `review --format json --tree <6.12 repo> --reply FILE` (the check stage with the base
tree: no --run-tests). Upstream accepted all of this code, so every error or warning from one of
OUR rules or checks is a false positive, unless EXPLAINED below names it and says why it is true.
checkpatch.pl's own findings (`checkpatch/...`) and get_maintainer.pl's (`get-maintainer/...`)
pass through as theirs and are not judged here. A finding that merges ours with checkpatch's
(`sources`) is ours.

The LoongArch series is also reviewed three times with one block left out (the Kconfig select,
the linker-script export, the selftest branch): each must get exactly one finding of ours, the
vdso-getrandom-new-arch requirement that block meets.

The 17 series are built in ~16 s and reviewed two at a time in ~135-165 s on 2 cores (10-35 s a
review; checkpatch.pl on the bigger series is most of it): the module takes under three minutes.
The per-rule table is printed (pytest -s, or in the failure report).
"""
from __future__ import annotations

import email
import email.policy
import re
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import review
from tests.realkernel.kernel import git
from tests.realkernel.precision import FEATURES, LOONGARCH_VDSO, Built, build, tree_of

# The three LoongArch blocks of the Done-when: each Cut's key is the vdso-getrandom-new-arch requirement it meets.
NEGATIVES = ("kconfig-select", "lds-export", "selftest-enable")
RULE = "vdso-getrandom-new-arch"
LICENSE_STYLE = ("Documentation/process/license-rules.rst (2. Style) gives C headers and assembly files the "
                 "/* */ comment style; this file's first line is `// SPDX-License-Identifier: ...` (checkpatch's "
                 "SPDX_LICENSE_TAG says the same)")
LICENSE_MISSING = ("license-rules.rst: \"The Linux kernel requires the precise SPDX identifier in all source files\"; "
                   "this file has no SPDX line at all, where most of its kind in 6.12 start with one "
                   "({})")
SUBJECT = ("submitting-patches.rst's canonical subject is `subsystem: summary phrase`; this subject (the mseal "
           "series' own wording) has no `subsystem:` prefix such as `selftests/mm:`")
NEVER_RUN = ("true of 6.12: the mm selftests run only run_vmtests.sh (TEST_PROGS), which never runs {}, so "
             "`make run_tests` builds the program and never runs it")


@dataclass(frozen=True)
class Explained:
    """A finding of ours on the corpus that is TRUE of the upstream code, and why."""

    feature: str
    rule: str
    patch: int
    path: str | None
    why: str


EXPLAINED = (
    Explained("loongarch-vdso-getrandom", "spdx-header/style", 1, "arch/loongarch/include/asm/vdso/getrandom.h", LICENSE_STYLE),
    Explained("loongarch-vdso-getrandom", "spdx-header/style", 1, "arch/loongarch/vdso/vgetrandom-chacha.S", LICENSE_STYLE),
    # selftests-dt's .gitignore and Makefile have no SPDX line either: build files, which checkpatch does
    # not check and upstream accepts without one, so only an info (spdx-header/missing-build).
    Explained("mm-dmapool-test", "spdx-header/missing", 1, "mm/dmapool_test.c",
              LICENSE_MISSING.format("151 of the 161 mm/*.c files; checkpatch's SPDX_LICENSE_TAG says the same")),
    Explained("misc-ntsync", "maintainers-coverage", 1, "include/uapi/linux/ntsync.h",
              "no MAINTAINERS section of 6.12 covers include/uapi/linux/ntsync.h: get_maintainer.pl -f names only the "
              "open list linux-kernel@vger.kernel.org (drivers/misc/ntsync.c is covered by CHAR and MISC DRIVERS)"),
    Explained("selftests-mm-mseal", "subject-format/prefix", 1, None, SUBJECT),
    Explained("selftests-mm-mseal", "subject-format/prefix", 2, None, SUBJECT),
    Explained("selftests-mm-mseal", "selftest-registered/helper", 1, "tools/testing/selftests/mm/Makefile",
              NEVER_RUN.format("mseal_test")),
    Explained("selftests-mm-mseal", "selftest-registered/helper", 2, "tools/testing/selftests/mm/Makefile",
              NEVER_RUN.format("seal_elf")),
)


@dataclass(frozen=True)
class Reviewed:
    built: Built
    doc: dict[str, Any]
    mail: str  # the reply mail's body, decoded ("" when the tool wrote none)
    seconds: float


def ours(rule: str) -> bool:
    return not rule.startswith(("checkpatch/", "get-maintainer"))


def our_rule(finding: dict[str, Any]) -> str | None:
    """The id of ours that states FINDING (its rule, or a merged source), None if only checkpatch's or get_maintainer's."""
    return next((r for r in [finding["rule"], *finding.get("sources", [])] if ours(r)), None)


def judged(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The errors and warnings of ours in a review."""
    return [f for f in doc["findings"] if f["level"] in ("error", "warning") and our_rule(f) is not None]


def explanation(feature: str, finding: dict[str, Any]) -> Explained | None:
    rule = our_rule(finding)
    key = (feature, rule, finding["patch"], finding["path"])
    return next((e for e in EXPLAINED if (e.feature, e.rule, e.patch, e.path) == key), None)


def _home(root: Path) -> dict[str, str]:
    """A private HOME and XDG dirs with a reviewer identity (the reply needs a sender), as tests/conftest.py makes."""
    env = {"HOME": str(root), "XDG_CONFIG_HOME": str(root / ".config"), "XDG_CACHE_HOME": str(root / ".cache"),
           "XDG_STATE_HOME": str(root / ".local/state"), "XDG_DATA_HOME": str(root / ".local/share"), "GIT_CONFIG_NOSYSTEM": "1"}
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitconfig").write_text("[user]\n\tname = Precision Reviewer\n\temail = precision@example.org\n"
                                     "[commit]\n\tgpgsign = false\n")
    return env


def _mail_body(path: Path) -> str:
    if not path.is_file():
        return ""
    msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    part = msg.get_body(preferencelist=("plain",)) if msg.is_multipart() else msg
    assert part is not None
    return str(part.get_content())


def _review(linux: Path, built: Built, work: Path) -> Reviewed:
    work.mkdir(parents=True)
    reply = work / "reply.eml"
    start = time.perf_counter()
    result = review(built.mbox, "--format", "json", "--tree", linux, "--reply", reply, tmp=work / "tmp")
    seconds = time.perf_counter() - start
    assert result.rc in (0, 1), (built.feature.name, result.rc, result.stderr[-2000:])
    return Reviewed(built, result.json(), _mail_body(reply), seconds)


@pytest.fixture(scope="module")
def reviewed(linux: Path, linux_head: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Reviewed]]:
    """Every corpus series and the three LoongArch negatives, built and reviewed (two reviews at a time)."""
    root = tmp_path_factory.mktemp("precision")
    start = time.perf_counter()
    series = [build(linux, linux_head, f, root / f"{f.name}.mbox") for f in FEATURES]
    series += [build(linux, linux_head, LOONGARCH_VDSO, root / f"loongarch-without-{key}.mbox", omit=[key]) for key in NEGATIVES]
    built_in = time.perf_counter() - start
    names = [b.feature.name for b in series[: len(FEATURES)]] + [f"without-{key}" for key in NEGATIVES]
    with pytest.MonkeyPatch.context() as mp:
        for var, value in _home(root / "home").items():
            mp.setenv(var, value)
        with ThreadPoolExecutor(max_workers=2) as pool:
            done = list(pool.map(lambda nb: _review(linux, nb[1], root / nb[0]), zip(names, series, strict=True)))
    slowest = max(zip(done, names, strict=True), key=lambda rn: rn[0].seconds)
    print(f"\nprecision corpus: built {len(series)} series in {built_in:.1f} s, reviewed in {time.perf_counter() - start - built_in:.1f} s "
          f"(slowest: {slowest[1]}, {slowest[0].seconds:.1f} s)")
    yield dict(zip(names, done, strict=True))


def _corpus(reviewed: dict[str, Reviewed]) -> dict[str, Reviewed]:
    return {f.name: reviewed[f.name] for f in FEATURES}


def test_the_corpus_is_12_or_more_kinds_of_real_code_and_rebuilds_612_byte_for_byte(linux: Path, linux_head: str,
                                                                                 reviewed: dict[str, Reviewed]) -> None:
    corpus = _corpus(reviewed)
    assert len(corpus) >= 12 and len({f.kind for f in FEATURES}) == len(FEATURES)
    head_tree = tree_of(linux, linux_head)
    for name, r in corpus.items():
        b = r.built
        assert tree_of(linux, b.tip) == head_tree, name  # base + series is 6.12's tree, byte for byte
        assert tree_of(linux, b.base) != head_tree, name
        parents = (b.base, *b.commits[:-1])
        assert all(tree_of(linux, c) != tree_of(linux, p) for c, p in zip(b.commits, parents, strict=True)), name
        # the review saw the series as made: every patch, applied on its own base commit
        assert len(r.doc["patches"]) == len(b.commits), name
        assert [p["status"] for p in r.doc["apply"]["patches"]] == ["applied"] * len(b.commits), name
        assert r.doc["apply"]["base"] == b.base, name


def test_a_negative_case_differs_from_612_only_by_the_block_it_leaves_out(linux: Path, linux_head: str,
                                                                         reviewed: dict[str, Reviewed]) -> None:
    paths = {c.key: c.path for p in LOONGARCH_VDSO.patches for c in p.cuts if c.key}
    for key in NEGATIVES:
        b = reviewed[f"without-{key}"].built
        assert not b.identical
        changed = git(linux, "diff", "--name-only", b.tip, linux_head).split()
        assert changed == [paths[key]], (key, changed)
        assert git(linux, "diff", "--name-only", b.base, reviewed[LOONGARCH_VDSO.name].built.base).split() == []


def _table(corpus: dict[str, Reviewed]) -> tuple[list[str], str]:
    """The unexplained findings of ours, one line each, and the per-rule count table."""
    unexplained, counts, explained = [], Counter[str](), Counter[str]()
    for name, r in corpus.items():
        for f in judged(r.doc):
            rule = our_rule(f) or ""
            if explanation(name, f):
                explained[rule] += 1
                continue
            counts[rule] += 1
            unexplained.append(f"{name}: [{f['level']}] {rule} (patch {f['patch']}, {f['path']}): {f['message']}")
    rows = [f"{'rule':50} {'unexplained':>11} {'explained':>9}"]
    rows += [f"{rule:50} {counts[rule]:>11} {explained[rule]:>9}" for rule in sorted({*counts, *explained})]
    return unexplained, "\n".join(rows)


def test_no_unexplained_error_or_warning_of_ours_on_accepted_code(reviewed: dict[str, Reviewed]) -> None:
    corpus = _corpus(reviewed)
    unexplained, table = _table(corpus)
    print("\nfindings of ours on the precision corpus, per rule:\n" + table)
    stale = [e for e in EXPLAINED if not any(explanation(e.feature, f) == e for f in judged(corpus[e.feature].doc))]
    assert stale == [], f"EXPLAINED entries that no review reports any more: {stale}"
    assert unexplained == [], f"{len(unexplained)} false positives:\n" + "\n".join(unexplained) + "\n\n" + table


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _in_mail(finding: dict[str, Any], mail: str) -> int:
    """How often the reply mail states FINDING's message (wrapped, capitalized and with a period as the mail writes it)."""
    return _flat(mail).count(_flat(finding["message"]).rstrip("."))


def test_the_loongarch_reply_mail_has_no_finding_of_ours_but_true_ones(reviewed: dict[str, Reviewed]) -> None:
    r = reviewed[LOONGARCH_VDSO.name]
    # the tool writes no reply when nothing is worth one; here at least the true SPDX findings are
    assert r.mail or not [f for f in r.doc["findings"] if f["level"] != "info"], "no reply mail was written"
    mine = [f for f in r.doc["findings"] if our_rule(f) and f["level"] != "info"]
    false_in_mail = [f["message"] for f in mine if explanation(LOONGARCH_VDSO.name, f) is None and _in_mail(f, r.mail)]
    assert false_in_mail == [], r.mail
    assert [(our_rule(f), f["path"]) for f in mine if explanation(LOONGARCH_VDSO.name, f) is None] == []
    assert all(_in_mail(f, r.mail) for f in mine), r.mail  # the true ones are said


@pytest.mark.parametrize("key", list(NEGATIVES))
def test_the_loongarch_series_without_one_block_gets_exactly_that_one_finding(key: str, reviewed: dict[str, Reviewed]) -> None:
    r = reviewed[f"without-{key}"]
    found = [f for f in judged(r.doc) if explanation(LOONGARCH_VDSO.name, f) is None]
    assert [our_rule(f) for f in found] == [f"{RULE}/{key}"], [(our_rule(f), f["message"]) for f in found]
    assert found[0]["level"] == "error" and found[0]["patch"] == 1
    # the reply says it once under its quote, and its first line (the conclusion, issue 30) names it
    assert _in_mail(found[0], r.mail) == 2 and _in_mail(found[0], r.mail.split("\n\n")[1]) == 1, r.mail


def test_each_review_stays_cheap(reviewed: dict[str, Reviewed]) -> None:
    slow = {name: round(r.seconds, 1) for name, r in reviewed.items() if r.seconds > 120}  # ~10-35 s each, two at a time
    assert slow == {}, slow
    assert all("checkpatch.pl" in next(s["detail"] for s in r.doc["stages"] if s["name"] == "check") for r in reviewed.values())

