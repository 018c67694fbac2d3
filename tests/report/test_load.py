"""report/load.py reads the JSON report back: document(load(document(r))) == document(r), on a real review of the
demo with its tree and on one made to hold every part the document has (tests, benchmarks judged on a busy and a
quiet machine, builds with vDSO symbols, a boot), and the reply made from the loaded review is the reply made
from the review itself (the bot mails what its jobs stored)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from reviewer.hostload import HostLoad
from reviewer.ktap import Result
from reviewer.ktap import TestCase as Case
from reviewer.model import BenchResult, BootResult, BuiltStep, BuiltTarget, ChosenTest, Review, StageResult, StageStatus, TestRun
from reviewer.pipeline import review
from reviewer.report import email as reply_mail
from reviewer.report import json as json_report
from reviewer.report.load import DocumentError, load
from reviewer.request import ReviewRequest, SelftestOptions, SourceOptions

DEMO = Path(__file__).resolve().parents[2] / "fixtures/series/loongarch-vdso-getrandom-v4.mbox"
QUIET = HostLoad(12.0, 2, 0.1, 0.0, 0.9, 0.02, (0.3, 0.4))
BUSY = HostLoad(12.0, 2, 1.6, 0.1, 0.0, 0.97, (1.9, 2.4))


def _demo(tree: Path) -> Review:
    request = ReviewRequest(SourceOptions(target=str(DEMO), cwd=DEMO.parent, tree=tree), selftests=SelftestOptions(no_tests=True))
    result, error = review(request)
    assert error is None, error
    return result


def _everything(base: Review) -> Review:
    runs = (TestRun("vDSO:vdso_test_getrandom", "base", "plain", Result.PASS, 0.41, where="booted 1234abcd x86_64 tcg"),
            TestRun("vDSO:vdso_test_getrandom", "patched", "timens", Result.FAIL, 0.5, "exit=1", "/logs/p.log",
                    (Case(1, "getrandom", Result.FAIL, "# exit=1"), Case(2, "chacha", Result.PASS)), "host 6.1.0 x86_64"))
    benches = (BenchResult.of("bench-single", "plain", "vdso", "s", [0.101, 0.102, 0.103, 0.101, 0.104], [0.2, 0.21, 0.22, 0.2, 0.21],
                              5, note="2 stalled", limit=1.25, load=QUIET),
               BenchResult.of("bench-multi", "timens", "vdso", "s", [1.0, 1.1], [1.5, 1.6], 2, limit=1.25, load=BUSY),
               BenchResult.of("boot", "plain", "boot", "s", [3.0], [], 1))
    builds = (BuiltTarget("x86_64", "ARCH=x86_64", (BuiltStep(0, "built", 61.2, ("vmlinux",), warnings=2,
                                                              vdso=(("arch/x86/entry/vdso/vdso64.so", ("__vdso_getrandom@@LINUX_2.6",)),)),
                                                    BuiltStep(1, "failed", 3.5, ("vmlinux",), "error: x undeclared"))),
              BuiltTarget("s390x", "ARCH=s390 CROSS_COMPILE=s390x-linux-gnu-", config=("CONFIG_X=y",), problem="no compiler"))
    boot = BootResult("tcg", (("plain", ("CONFIG_VDSO=y",)), ("debug", ("CONFIG_KASAN=y",))), (("base/plain", "/logs/base.log"),), "/logs")
    return replace(base, selftests=runs, benchmarks=benches, builds=builds, boot=boot,
                   chosen=(ChosenTest("vDSO", ("touches arch/loongarch/vdso",)),),
                   stages=(*base.stages, StageResult("boot", StageStatus.FAILED, 12.25, "panic")))


@pytest.mark.parametrize("rich", [False, True], ids=["demo", "everything"])
def test_a_document_reads_back_as_the_review_it_was(kernel_repo: Path, rich: bool) -> None:  # noqa: FBT001 (a parameter)
    made = _demo(kernel_repo)
    made = _everything(made) if rich else made
    doc = json.loads(json_report.dumps(made))  # through JSON text, as the bot stores it
    again = load(doc, made.series)
    assert json_report.document(again) == json_report.document(made)
    assert again.findings == made.findings
    if rich:
        assert [b.verdict.outcome for b in again.benchmarks if b.verdict] == [b.verdict.outcome for b in made.benchmarks if b.verdict]
        assert [b.slower for b in again.benchmarks] == [True, False, False]  # the busy machine's row stays unjudged
        assert again.benchmarks[1].verdict is not None and again.benchmarks[1].verdict.load == BUSY


def test_the_reply_from_a_loaded_review_is_the_same(kernel_repo: Path) -> None:
    made = _everything(_demo(kernel_repo))
    again = load(json.loads(json_report.dumps(made)), made.series)
    opts = reply_mail.ReplyOptions("Bot <bot@example.org>")
    assert reply_mail.reply(again, opts).get_content() == reply_mail.reply(made, opts).get_content()


def test_another_schema_is_refused() -> None:
    with pytest.raises(DocumentError, match="schema 2"):
        load({"schema": 2}, None)
