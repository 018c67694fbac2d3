"""Building and running the chosen kselftests in a worktree, inside the sandbox."""
from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import ktap
from reviewer.model import Finding, Level, TestRun
from reviewer.proc import Sandboxed
from reviewer.run.sandbox import MAX_TEST_SECONDS, Sandbox, available, read_untrusted
from reviewer.selftests.choose import SELFTESTS, TestRef

DEFAULT_TIMEOUT = 45.0  # the kselftest runner's default; a dir's `settings` file may change it
SANDBOX = "sandbox"  # warnings: what the sandbox (or a guest's init) saw a test do: processes left, files written outside its tree, the cap
def timeout_for(wt: Path, test_dir: str) -> float:
    """The directory's `settings` timeout (kselftest's runner: timeout=0 is none at all: inf), else 45 s.
    The file is the series': read without following a symlink or blocking on a FIFO."""
    try:
        text = read_untrusted(wt / SELFTESTS / test_dir / "settings").decode(errors="replace")
    except OSError:
        return DEFAULT_TIMEOUT
    for line in text.splitlines():
        if m := re.match(r"^\s*timeout\s*=\s*(\d+)", line):
            return float(m[1]) or math.inf
    return DEFAULT_TIMEOUT


def build(wt: Path, dirs: Sequence[str], sandbox: Sandbox, timeout: float = 900, variables: Sequence[str] = ()) -> tuple[bool, str]:
    """`make -C tools/testing/selftests TARGETS=...` in the sandbox, after `make headers`
    when a directory builds against the tree's uapi headers (KHDR_INCLUDES); (ok, log). VARIABLES:
    make's, for both (ARCH= and CROSS_COMPILE= for another architecture's guest)."""
    jobs = f"-j{os.cpu_count() or 1}"
    log = ""
    if needs_headers(wt, dirs):
        done = sandbox.run(["make", *variables, "headers", jobs], cwd=wt, timeout=timeout, tree=wt)
        log = done.output
        if done.timed_out or done.returncode != 0:
            return False, log + "\n(make headers failed)"
    done = sandbox.run(["make", "-C", SELFTESTS, *variables, f"TARGETS={' '.join(dirs)}", jobs], cwd=wt, timeout=timeout, tree=wt)
    if done.timed_out:
        return False, log + done.output + f"\n(build killed after {timeout:g}s)"
    return done.returncode == 0, log + done.output


def needs_headers(wt: Path, dirs: Sequence[str]) -> bool:
    """A kernel tree (it has a `headers` make target) without installed headers, and a test dir using them."""
    if (wt / "usr/include/linux").is_dir() or b"headers_install" not in _read(wt / "Makefile"):
        return False
    return any(b"KHDR_INCLUDES" in _read(wt / SELFTESTS / d / "Makefile") for d in dirs)


def _read(path: Path, limit: int = 16 << 20) -> bytes:
    """A file of the tree (the series': perhaps a symlink or a FIFO), or nothing."""
    try:
        return read_untrusted(path, limit)
    except OSError:
        return b""


# lib.mk's run_tests runs $(TEST_GEN_PROGS) $(TEST_CUSTOM_PROGS) $(TEST_PROGS), in this order (its
# emit_tests lists the same); the other lists are built or installed for the tests to use, never run.
RUN_VARS = ("TEST_GEN_PROGS", "TEST_CUSTOM_PROGS", "TEST_PROGS")
OTHER_VARS = ("TEST_GEN_PROGS_EXTENDED", "TEST_PROGS_EXTENDED", "TEST_FILES", "TEST_GEN_FILES")
RUNLIST_TIMEOUT = 120.0  # reading a Makefile is quick (bpf, the slowest in 6.12: ~8 s), but it runs the series' $(shell ...)
_TAG = "reviewer-runlist:"
# Read after the directory's Makefile (`make -f Makefile -f this`), so that every variable is printed
# as make and lib.mk leave it: +=, conditionals, $(shell ...), arch filters, $(OUTPUT)/ prefixes.
# $(info) prints without a shell, so no quoting of the values is needed. Works on any lib.mk.
_PRINT_MK = (
    "# Written by reviewer: print the kselftest lists of the directory's Makefile.\n"
    ".PHONY: reviewer-runlist\n"
    "reviewer-runlist:\n"
    + "".join(f"\t$(info {_TAG} {v} $({v}))\n" for v in (*RUN_VARS, *OTHER_VARS))
    + "\t@:\n"
)


@dataclass(frozen=True)
class RunList:
    """What `make run_tests` runs in a directory, as paths relative to it (kselftest's order), and the
    files of its other lists; ERROR (with make's LOG) when the Makefile could not be read."""

    tests: tuple[str, ...] = ()
    others: tuple[tuple[str, str], ...] = ()  # (path, the variable that lists it)
    error: str = ""
    log: str = ""

    def role(self, name: str) -> str | None:
        """The variable that lists NAME without running it (TEST_GEN_PROGS_EXTENDED...), if one does."""
        return next((var for path, var in self.others if path == name), None)


def run_list(wt: Path, test_dir: str, sandbox: Sandbox, timeout: float = RUNLIST_TIMEOUT, variables: Sequence[str] = ()) -> RunList:
    """Ask make for TEST_DIR's run list, the way lib.mk's run_tests and emit_tests expand it.

    The Makefile is the series' code ($(shell ...) runs), so make runs in the sandbox, like the build,
    and only where the tests are being built anyway. OUTPUT is the directory, as
    tools/testing/selftests/Makefile passes it to an in-tree build. A directory this tree does not
    have lists nothing."""
    folder = wt / SELFTESTS / test_dir
    if not folder.is_dir():
        return RunList()
    if not (folder / "Makefile").is_file():
        return RunList(error=f"{SELFTESTS}/{test_dir} has no Makefile")
    out = folder.resolve()
    sandbox.scratch.mkdir(parents=True, exist_ok=True)
    # A fresh directory: the build ran the series' code with this scratch as its HOME, and a file
    # of a fixed name there could be its symlink to anywhere.
    with tempfile.TemporaryDirectory(prefix="runlist-", dir=sandbox.scratch) as private:
        printer = Path(private) / "print.mk"
        printer.write_text(_PRINT_MK)
        done = sandbox.run(["make", "-s", "--no-print-directory", "-C", out, "-f", "Makefile", "-f", printer, f"OUTPUT={out}", *variables,
                            "reviewer-runlist"],
                           cwd=wt, timeout=timeout, tree=wt)
    values = _printed(done.output)
    if done.timed_out:
        return RunList(error=f"make was killed after {timeout:g}s reading {SELFTESTS}/{test_dir}/Makefile", log=done.output)
    if done.returncode != 0 or set(values) != {*RUN_VARS, *OTHER_VARS}:
        last = (done.output.strip().splitlines() or ["no output"])[-1][:200]
        return RunList(error=f"make could not read {SELFTESTS}/{test_dir}/Makefile (exit {done.returncode}): {last}", log=done.output)
    tests = [_relative(out, w) for v in RUN_VARS for w in values[v]]
    others = [(_relative(out, w), v) for v in OTHER_VARS for w in values[v]]
    return RunList(tuple(dict.fromkeys(tests)), tuple(dict.fromkeys(others)))


def _printed(output: str) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for line in output.splitlines():
        if line.startswith(_TAG):
            var, _, value = line.removeprefix(_TAG).strip().partition(" ")
            values[var] = value.split()
    return values


def _relative(folder: Path, word: str) -> str:
    """A listed path (absolute with $(OUTPUT)/, or relative to the directory) relative to the directory."""
    return os.path.relpath(os.path.join(folder, word), folder)


@dataclass(frozen=True)
class Observed:
    run: TestRun
    notes: tuple[str, ...] = ()  # what the sandbox saw the test do besides its result: each one a warning


def run_test(
    wt: Path, ref: TestRef, *, tree: str, env: str, sandbox: Sandbox, args: Sequence[str] = (), timeout: float | None = None,
    cap: float = MAX_TEST_SECONDS,
) -> TestRun:
    """Run one test program (REF.name may be a path below its directory) from the directory it is in,
    as kselftest's runner does; never raises for the test's own failures."""
    return run_observed(wt, ref, tree=tree, env=env, sandbox=sandbox, args=args, timeout=timeout, cap=cap).run


def run_observed(
    wt: Path, ref: TestRef, *, tree: str, env: str, sandbox: Sandbox, args: Sequence[str] = (), timeout: float | None = None,
    cap: float = MAX_TEST_SECONDS,
) -> Observed:
    """run_test, and what the sandbox saw. TIMEOUT (the tool's own, for a benchmark) or else the
    directory's `settings` timeout, which CAP (--test-timeout) bounds: the series wrote that file."""
    if (why := available(env)) is not None:
        return Observed(TestRun(_name(ref, args), tree, env, ktap.Result.SKIP, 0.0, f"environment {env} unavailable: {why}"))
    start = prepare(wt, ref, tree=tree, env=env, args=args, timeout=timeout, cap=cap)
    if isinstance(start, TestRun):
        return Observed(start)
    done = sandbox.run(start.argv, cwd=start.cwd, timeout=start.limit, env_name=env, tree=wt)
    seen = _seen(done, f"was cut short at {start.limit:g}s by --test-timeout (its settings file asks for {_asked(start.asked)})"
                 if done.timed_out and start.cut else "")
    got = outcome(start, done.output, done.returncode, done.seconds, timed_out=done.timed_out)
    if seen and got.result is not ktap.Result.TIMEOUT:  # never a plain pass: the table says what the sandbox saw
        got = replace(got, reason="; ".join(x for x in (got.reason, "sandbox: " + ", ".join(short for short, _ in seen)) if x))
    return Observed(got, tuple(long for _, long in seen))


@dataclass(frozen=True)
class Start:
    """How one test is started: its name in the report, the command from its directory, and its time limit."""

    name: str
    tree: str
    env: str
    argv: tuple[str, ...]
    cwd: Path
    limit: float  # the seconds it may run
    asked: float  # what its settings file asks for (or the tool's own timeout)

    @property
    def cut(self) -> bool:
        """--test-timeout is shorter than what the settings file asks for."""
        return self.limit < self.asked


def prepare(wt: Path, ref: TestRef, *, tree: str, env: str, args: Sequence[str] = (), timeout: float | None = None,
            cap: float = MAX_TEST_SECONDS) -> Start | TestRun:
    """The command and limit of REF on the tree WT, or the run that says why it cannot start."""
    assert ref.name is not None
    name = _name(ref, args)
    program = wt / SELFTESTS / ref.dir / ref.name
    if not program.is_file():
        return TestRun(name, tree, env, ktap.Result.SKIP, 0.0, "not built here (another architecture or a missing config?)")
    if not program.resolve().is_relative_to(wt.resolve()):
        return TestRun(name, tree, env, ktap.Result.ERROR, 0.0, "a symlink out of the tree: not run")
    argv = command(program, wt / SELFTESTS / ref.dir)
    if argv is None:
        return TestRun(name, tree, env, ktap.Result.FAIL, 0.0, "not executable and no #! line: kselftest's runner cannot start it either")
    asked = timeout or timeout_for(wt, ref.dir)
    return Start(name, tree, env, (*argv, *args), program.parent, asked if timeout else min(asked, cap), asked)


def outcome(start: Start, output: str, returncode: int | None, seconds: float, *, timed_out: bool) -> TestRun:
    """The run of START from what it printed and how it ended, as kselftest's runner reads it (0 pass, 4 skip)."""
    log = ktap.parse(output)
    if timed_out:
        note = f" (--test-timeout; its settings file asks for {_asked(start.asked)})" if start.cut else ""
        why = f"killed after {start.limit:g}s{note}"
        return TestRun(start.name, start.tree, start.env, ktap.Result.TIMEOUT, seconds, why, output, log.tests)
    result = {0: ktap.Result.PASS, 4: ktap.Result.SKIP}.get(returncode or 0, ktap.Result.FAIL)
    reason = "" if result is ktap.Result.PASS else _reason(returncode, log, output)
    return TestRun(start.name, start.tree, start.env, result, seconds, reason, output, log.tests)


def _name(ref: TestRef, args: Sequence[str]) -> str:
    return f"{ref}" + (f" {' '.join(args)}" if args else "")


def _asked(seconds: float) -> str:
    return "no timeout (timeout=0)" if math.isinf(seconds) else f"{seconds:g}s"


def _seen(done: Sandboxed, cut: str) -> list[tuple[str, str]]:
    """(short, long) for each thing the sandbox saw: the cap cut the test short (CUT), processes
    left, files written outside the tree, the guard killed."""
    seen = [("cut short by --test-timeout", cut)] if cut else []
    if done.left:
        seen.append(left_note(done.left, len(done.left), "the sandbox"))
    if done.wrote:
        seen.append(("wrote outside its tree", "wrote outside its tree (into the sandbox's throw-away file systems; "
                     f"the host's were not touched): {_some(done.wrote)}"))
    if done.lost:
        seen.append(("killed its guard", "killed the sandbox's guard: what it left running or wrote is unknown"))
    return seen


def left_note(left: Sequence[str], total: int, killer: str) -> tuple[str, str]:
    """(short, long) for a test that left TOTAL processes running when it exited (LEFT: some of them, "pid N: its
    command line", as the test made them: the report's media escape them), which KILLER killed."""
    return ("left processes running", f"left {total} process{'es' if total > 1 else ''} running when it exited "
            f"({killer} killed them): {_some(left, total)}")


def on_test(test: str, tree: str, env: str, path: str, note: str) -> Finding:
    """A warning about what TEST (the program at PATH in the tree) did on TREE in ENV besides its result: what the
    sandbox or the guest's init saw (NOTE: processes it left running, files it wrote outside its tree, the cap)."""
    return Finding(SANDBOX, Level.WARNING, f"{test} on the {tree} tree ({env}) {note}", path=path)


def _some(items: Sequence[str], total: int | None = None, shown: int = 8) -> str:
    total = len(items) if total is None else total
    more = f" and {total - min(shown, len(items))} more" if total > min(shown, len(items)) else ""
    return ", ".join(items[:shown]) + more


def command(program: Path, test_dir: Path) -> list[str] | None:
    """How kselftest's runner.sh (6.12, run_one) starts PROGRAM from its own directory: `./name` if it
    is executable; else through TEST_DIR's executable ksft_runner.sh; else with the interpreter
    its #! line names (word-split, as the runner's unquoted $cmd is); None: it cannot be started
    (the runner reports it `not ok`). A script whose patch carries no mode (a plain diff, not git's
    `new file mode 100755`) is checked out without its x bit: it still runs, through its #! line."""
    if os.access(program, os.X_OK):
        return [f"./{program.name}"]
    if os.access(test_dir / "ksft_runner.sh", os.X_OK):
        return ["./ksft_runner.sh", f"./{program.name}"]
    first = _read(program, 4096).split(b"\n", 1)[0].decode(errors="replace")
    if first.startswith("#!") and (interpreter := first[2:].split()):
        return [*interpreter, f"./{program.name}"]
    return None


def _reason(rc: int | None, log: ktap.KtapLog, output: str = "") -> str:
    """exit=RC, the program's own "Bail out!" line (its reason for stopping), and its first bad results."""
    bail = next((ln.strip() for ln in output.splitlines() if ln.lstrip().startswith("Bail out!")), "")
    bad = [t for t in log.tests if t.result not in (ktap.Result.PASS, ktap.Result.XFAIL)]
    detail = "; ".join([*([bail[:200]] if bail else []),
                        *(f"{t.result} {t.number} {t.name}" + (f" ({t.reason})" if t.reason else "") for t in bad[:3])])
    return f"exit={rc}" + (f": {detail}" if detail else "")
