"""bench/ stands on its own: no module there imports tests/, and every script answers --help (and an
unknown argument) at once, before any benchmark work starts."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))


def _imported(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_no_bench_module_imports_the_tests() -> None:
    wrong = [f"{p.name}: import {name}" for p in sorted(BENCH.glob("*.py")) for name in _imported(p)
             if name == "tests" or name.startswith("tests.")]
    assert SCRIPTS and wrong == []


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_script_answers_help_and_refuses_an_unknown_argument_before_any_work(script: Path) -> None:
    doc = ast.get_docstring(ast.parse(script.read_text()))
    assert doc, f"{script.name} has no docstring for --help to print"
    helped = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith(f"usage: {script.name} ") and " ".join(doc.split()[:6]) in " ".join(helped.stdout.split())
    refused = subprocess.run([sys.executable, script, "--no-such-option"], capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout
    assert refused.stderr.rstrip().endswith("error: unrecognized arguments: --no-such-option"), refused.stderr
