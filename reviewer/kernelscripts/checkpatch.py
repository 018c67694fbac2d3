"""scripts/checkpatch.pl on one patch mail -> findings `checkpatch/<TYPE>`.

Run as `checkpatch.pl --terse --no-summary --show-types --emacs -` with the mail on stdin: one
line per report, `-:LINE: LEVEL:TYPE: message`, LINE being the mail's line (a whole-patch report
names the line past the end). Exit 1 means it reported something; anything else but 0 is a
failure of the script. Not `--mailback`: on a patch that is otherwise clean it makes checkpatch
exit before its end-of-patch checks, so MISSING_SIGN_OFF, NO_AUTHOR_SIGN_OFF,
FROM_SIGN_OFF_MISMATCH and MISSING_FIXES_TAG would vanish exactly when they are the only
reports (6.12's checkpatch.pl: `if ($mailback && ($clean == 1 || !$is_patch)) { exit(0); }`
comes before them). `--terse` already keeps a clean patch's output empty.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from reviewer.kernelscripts.mails import Mail
from reviewer.model import Finding, Level

SCRIPT = "scripts/checkpatch.pl"
REPORT = re.compile(r"^(?P<file>.*?):(?P<line>\d+): (?P<level>ERROR|WARNING|CHECK):(?P<type>[A-Z0-9_]+): (?P<msg>.*)$")
LEVELS = {"ERROR": Level.ERROR, "WARNING": Level.WARNING, "CHECK": Level.INFO}


@dataclass(frozen=True)
class Options:
    strict: bool = False
    codespell_file: Path | None = None  # None: no --codespell
    ignore: frozenset[str] = frozenset()  # checkpatch types
    signoff: bool = True  # False: --no-signoff (a pull request's diff, whose commits were signed off in the sender's tree)


def argv(tree: Path, options: Options) -> list[str]:
    args = ["perl", str(tree / SCRIPT), f"--root={tree}", "--terse", "--no-summary", "--show-types", "--emacs",
            "--color=never"]
    if options.strict:
        args.append("--strict")
    if options.codespell_file is not None:
        args += ["--codespell", f"--codespellfile={options.codespell_file}"]
    if options.ignore:
        args.append(f"--ignore={','.join(sorted(options.ignore))}")
    if not options.signoff:
        args.append("--no-signoff")
    return [*args, "-"]


def parse(output: str, mail: Mail, ignore: Sequence[str] = ()) -> Iterator[Finding]:
    """Every report in OUTPUT as a finding on MAIL's patch, at the file and line it names."""
    for text in output.splitlines():
        m = REPORT.match(text)
        if m is None or m["type"] in ignore:
            continue
        where = mail.where(int(m["line"]))
        quote = (f"+{where.added}",) if where.added is not None else ()
        yield Finding(f"checkpatch/{m['type']}", LEVELS[m["level"]], m["msg"].strip(), mail.patch.index,
                      where.path, where.line, quote=quote)
