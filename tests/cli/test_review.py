"""The main job on every local input form: the documented JSON document and exit codes."""
from __future__ import annotations

import shutil
from pathlib import Path

from reviewer.errors import ExitStatus
from tests.conftest import FIXTURES, SERIES, git
from tests.helpers import review

DEMO = SERIES / "loongarch-vdso-getrandom-v4.mbox"
DEMO_DIR = FIXTURES / "format-patch" / "loongarch-vdso-getrandom-v4"
SUBJECTS = [
    "LoongArch: vDSO: Wire up getrandom() vDSO implementation",
    "selftests/vDSO: Skip getrandom test when the vDSO lacks the symbol",
    "selftests/vDSO: Build vdso_test_chacha with the arch assembly through tools/arch",
    "selftests/vDSO: Enable vdso getrandom tests for LoongArch",
]


def _shape(doc: dict) -> None:  # type: ignore[type-arg]
    assert doc["schema"] == 1
    assert set(doc) >= {"schema", "series", "patches", "findings", "stages"}
    assert set(doc["series"]) >= {"subject", "version", "msgid", "author", "base_commit", "total", "missing"}
    for p in doc["patches"]:
        assert set(p) >= {"index", "subject", "msgid", "author", "trailers", "files", "added", "removed"}
        for f in p["files"]:
            assert set(f) >= {"path", "old_path", "change", "added", "removed", "binary"}
    for st in doc["stages"]:
        assert st["status"] in ("ok", "failed", "skipped")


def test_mbox_json(tmp_path: Path) -> None:
    result = review(DEMO, "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    _shape(doc)
    s = doc["series"]
    assert (s["version"], s["total"], s["missing"]) == (4, 4, [])
    assert s["msgid"] == "20240816110717.10249-1-xry111@example.org"
    assert s["author"] == {"name": "Xi Ruo", "email": "xry111@example.org"}
    assert [p["subject"] for p in doc["patches"]] == SUBJECTS
    files = {f["path"]: f for f in doc["patches"][0]["files"]}
    assert files["tools/arch/loongarch/vdso"]["new_mode"] == "120000" and files["tools/arch/loongarch/vdso"]["symlink"]
    assert files["arch/loongarch/vdso/vgetrandom.c"]["change"] == "added"


def test_followup_trailers_attach_to_their_patch(tmp_path: Path) -> None:
    doc = review(DEMO, "--format", "json", tmp=tmp_path / "tmp").json()
    followups = {p["index"]: [(t["name"], t["value"]) for t in p["trailers"] if t["source"] == "followup"] for p in doc["patches"]}
    assert followups[1] == [("Reviewed-by", "Reviewer One <rev1@example.org>")]
    assert followups[2] == followups[3] == followups[4] == []
    cover = [(t["name"], t["value"]) for t in doc["series"]["cover"]["trailers"]]
    assert cover == [("Tested-by", "Tester Two <test2@example.org>")]


def test_format_patch_directory_gives_the_same_series(tmp_path: Path) -> None:
    from_dir = review(DEMO_DIR, "--format", "json", tmp=tmp_path / "t1").json()
    from_mbox = review(DEMO, "--format", "json", tmp=tmp_path / "t2").json()
    _shape(from_dir)
    assert from_dir["series"]["base_commit"] == from_mbox["series"]["base_commit"]
    strip = lambda doc: [(p["subject"], p["files"], p["added"], p["removed"]) for p in doc["patches"]]
    assert strip(from_dir) == strip(from_mbox)


def test_git_range_of_applied_series(kernel_repo: Path, tmp_path: Path) -> None:
    base = git(kernel_repo, "rev-parse", "HEAD").strip()
    patches = sorted(p for p in DEMO_DIR.glob("*.patch") if "-0000-" not in p.name)
    git(kernel_repo, "am", "-q", *map(str, patches))
    result = review("-C", kernel_repo, "HEAD~4..HEAD", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    _shape(doc)
    assert doc["series"]["base_commit"] == base
    assert [p["subject"] for p in doc["patches"]] == SUBJECTS
    from_mbox = review(DEMO, "--format", "json", tmp=tmp_path / "t2").json()
    assert [p["files"] for p in doc["patches"]] == [p["files"] for p in from_mbox["patches"]]


def test_newest_revision_by_default_and_older_on_request(tmp_path: Path) -> None:
    both = SERIES / "loongarch-vdso-getrandom-v3-v4.mbox"
    v4 = review(both, "--format", "json", tmp=tmp_path / "t1").json()
    v3 = review(both, "--format", "json", "--revision", "3", tmp=tmp_path / "t2").json()
    assert (v4["series"]["version"], v4["series"]["total"], v4["series"]["revisions"]) == (4, 4, [3, 4])
    assert (v3["series"]["version"], v3["series"]["total"]) == (3, 3)
    assert v3["series"]["msgid"].startswith("20240815133357.35829-1-")


def test_v1_v2_in_separate_threads(tmp_path: Path) -> None:
    both = SERIES / "dmapool-v1-v2.mbox"
    v2 = review(both, "--format", "json", tmp=tmp_path / "t1").json()
    v1 = review(both, "--format", "json", "--revision", "1", tmp=tmp_path / "t2").json()
    assert v2["series"]["version"] == 2 and v1["series"]["version"] == 1
    assert [p["subject"] for p in v1["patches"]] != [] and v1["series"]["msgid"] != v2["series"]["msgid"]


def test_missing_patch_is_a_finding_and_exit_1(tmp_path: Path) -> None:
    result = review(SERIES / "missing-2of3.mbox", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.FINDINGS, result.stderr
    doc = result.json()
    assert doc["series"]["missing"] == [2] and [p["index"] for p in doc["patches"]] == [1, 3]
    (finding,) = [f for f in doc["findings"] if f["rule"] == "series-complete"]
    assert (finding["level"], finding["patch"], finding["message"]) == ("error", 2, "patch 2/3 is missing from the thread")


def test_terminal_report(tmp_path: Path) -> None:
    result = review(SERIES / "missing-2of3.mbox", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.FINDINGS
    assert "0002/0003: [error] patch 2/3 is missing from the thread (series-complete)" in result.stdout
    assert "(missing from the thread)" in result.stdout
    for stage in ("load", "parse", "check", "apply", "selftests"):
        assert stage in result.stdout


def test_stdin(tmp_path: Path) -> None:
    result = review("-", "--format", "json", stdin=(SERIES / "single-patch.mbox").read_bytes(), tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    assert len(result.json()["patches"]) == 1


def test_apply_on_the_tree_leaves_it_untouched(kernel_repo: Path, tmp_path: Path) -> None:
    (kernel_repo / "untracked.txt").write_text("mine\n")
    git(kernel_repo, "stash", "list")
    before = [git(kernel_repo, *a) for a in (("status", "--porcelain"), ("branch", "-a"), ("stash", "list"), ("worktree", "list"))]
    result = review(DEMO, "--tree", kernel_repo, "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    assert doc["apply"]["base_source"] == "trailer"
    assert [p["status"] for p in doc["apply"]["patches"]] == ["applied"] * 4
    after = [git(kernel_repo, *a) for a in (("status", "--porcelain"), ("branch", "-a"), ("stash", "list"), ("worktree", "list"))]
    assert after == before
    result.assert_nothing_left()


def test_series_that_does_not_apply_exits_5(kernel_repo: Path, tmp_path: Path) -> None:
    lds = kernel_repo / "arch/loongarch/vdso/vdso.lds.S"
    lds.write_text("/* SPDX-License-Identifier: GPL-2.0 */\n/* rewritten: nothing the series expects is left */\n")
    git(kernel_repo, "commit", "-qam", "conflicting change")
    result = review(DEMO, "--tree", kernel_repo, "--base", "HEAD", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.APPLY, result.stderr
    assert "patch 1/4 does not apply" in result.stderr.splitlines()[0]
    assert "arch/loongarch/vdso/vdso.lds.S: hunk @@ -41,6 +41,7 @@ VERSION does not apply" in result.stderr.splitlines()[0]
    doc = result.json()
    assert doc["apply"]["patches"][0]["status"] == "failed" and "arch/loongarch/vdso/vdso.lds.S" in doc["apply"]["patches"][0]["detail"]
    assert git(kernel_repo, "worktree", "list").count("\n") == 1
    result.assert_nothing_left()


def test_demo_command(tmp_path: Path) -> None:
    result = review("demo", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    assert doc["series"]["version"] == 4 and doc["apply"]["base_source"] == "trailer"
    assert [st["name"] for st in doc["stages"] if st["status"] == "ok"] == ["load", "parse", "check", "apply", "selftests"]
    assert [c["test"] for c in doc["selftests_chosen"]] == ["vDSO"]
    runs = {(r["name"], r["tree"], r["env"]): r["result"] for r in doc["selftests"]}
    for test in ("vdso_test_getrandom", "vdso_test_chacha", "vdso_test_gettimeofday"):
        for tree in ("base", "patched"):
            for env in ("plain", "timens"):
                assert runs[(f"vDSO:{test}", tree, env)] == "pass"
    single = {(b["env"], b["metric"]): b for b in doc["benchmarks"] if b["name"] == "vdso_test_getrandom bench-single"}
    assert set(single) == {(e, m) for e in ("plain", "timens") for m in ("vdso", "libc", "syscall")}
    assert all(b["base"] > 0 and b["patched"] > 0 and b["ratio"] > 0 and b["runs"] == 5 for b in single.values())
    # The same program on the same kernel on both sides (an A/A review): never a verdict (verdict.py, issue 30).
    assert not [b["verdict_text"] for b in single.values() if b["verdict"] in ("slower", "faster")]
    result.assert_nothing_left()


def test_maildir(tmp_path: Path) -> None:
    import mailbox

    md = mailbox.Maildir(tmp_path / "md", create=True)
    for msg in mailbox.mbox(DEMO):
        md.add(msg)
    result = review(tmp_path / "md", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    assert len(result.json()["patches"]) == 4
    shutil.rmtree(tmp_path / "md")


def test_base_guessed_from_preimage_blobs(kernel_repo: Path, tmp_path: Path) -> None:
    base = git(kernel_repo, "rev-parse", "HEAD").strip()
    kconfig = kernel_repo / "arch/loongarch/Kconfig"
    kconfig.write_text(kconfig.read_text() + "\n# a later change to a file the series touches\n")
    git(kernel_repo, "commit", "-qam", "LoongArch: later change")
    mbox = tmp_path / "nobase.mbox"
    mbox.write_text("".join(ln for ln in DEMO.read_text().splitlines(keepends=True) if not ln.startswith("base-commit:")))
    result = review(mbox, "--tree", kernel_repo, "--no-tests", "--format", "json", tmp=tmp_path / "tmp")
    assert result.rc == ExitStatus.OK, result.stderr
    doc = result.json()
    assert doc["series"]["base_commit"] is None
    assert (doc["apply"]["base"], doc["apply"]["base_source"]) == (base, "guess")
    (note,) = [f for f in doc["findings"] if f["rule"] == "apply-base"]
    assert note["level"] == "info" and f"pre-image blobs: {base[:12]}" in note["message"]


def test_partial_reroll_trailers_are_not_doubled(tmp_path: Path) -> None:
    doc = review(FIXTURES / "lore" / "partial-reroll.mbox", "--format", "json", tmp=tmp_path / "tmp").json()
    assert doc["series"]["version"] == 2 and doc["series"]["missing"] == []
    assert [t["name"] for t in doc["patches"][1]["trailers"] if t["source"] == "followup"] == ["Reviewed-by"]
    assert [t["name"] for t in doc["series"]["cover"]["trailers"]] == ["Tested-by"]


def test_changelog_of_a_single_v2_patch_below_the_cut(tmp_path: Path) -> None:
    text = (SERIES / "single-patch.mbox").read_text().replace("Subject: [PATCH]", "Subject: [PATCH v2]", 1)
    without = tmp_path / "v2.mbox"
    without.write_text(text)
    rules = [f["rule"] for f in review(without, "--format", "json", tmp=tmp_path / "t1").json()["findings"]]
    assert "changelog" in rules
    with_notes = tmp_path / "v2-notes.mbox"
    with_notes.write_text(text.replace("\n---\n", "\n---\nv2: reworded the comment, as asked\n\n", 1))
    rules = [f["rule"] for f in review(with_notes, "--format", "json", tmp=tmp_path / "t2").json()["findings"]]
    assert "changelog" not in rules
