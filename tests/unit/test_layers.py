"""The layering rule of the style guide, read from every module's imports (with `ast`, imports inside
functions included): the stages import the kernel layer and never each other; reviewer/kernel/ imports
no stage, no report/ and no cli/; nothing outside cli/ imports cli/ (reviewer/__main__.py starts it), and
nothing outside cli/ imports typer: the application (reviewer/app.py) is called by a bot as by the CLI.
The bot (reviewer/bot/) sits on top: it may import the application and the stages' public names (none
starting with `_`), and nothing but cli/ imports it."""
from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "reviewer"
STAGES = ("compile", "boot", "selftests", "apply", "checks")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str) -> list[str]:
    """Every module PATH (named MODULE) imports, absolute, wherever the import statement is."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            out.extend(f"{base}.{a.name}" for a in node.names)  # "from reviewer import boot" imports reviewer.boot
    return out


def _top(name: str) -> str:
    """The package of reviewer.X.Y (X), or "" for a name outside reviewer."""
    parts = name.split(".")
    return parts[1] if parts[0] == "reviewer" and len(parts) > 1 else ""


def violations(path: Path, module: str) -> list[str]:
    mine = _top(module)
    found = []
    for name in _imports(path, module):
        theirs = _top(name)
        if name.split(".")[0] == "typer" and mine != "cli":
            found.append(f"{module} imports {name}: only cli/ imports typer")
        if not theirs or theirs == mine:
            continue
        if theirs == "cli" and module == "reviewer.app":
            found.append(f"{module} imports {name}: the application imports no cli/")
        elif theirs == "cli" and module != "reviewer.__main__":
            found.append(f"{module} imports {name}: nothing imports cli/")
        elif mine == "kernel" and theirs in (*STAGES, "report", "cli", "pipeline"):
            found.append(f"{module} imports {name}: kernel/ imports no stage, no report/, no cli/")
        elif mine in STAGES and theirs in STAGES:
            found.append(f"{module} imports {name}: a stage never imports another stage")
        elif theirs == "bot" and mine != "cli":
            found.append(f"{module} imports {name}: nothing but cli/ imports bot/")
        elif mine == "bot" and any(p.startswith("_") and p != "__init__" for p in name.split(".")):
            found.append(f"{module} imports {name}: bot/ uses only the public names of the layers below it")
    return found


MODULES = sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[_module(p) for p in MODULES])
def test_module_keeps_the_layers(path: Path) -> None:
    assert violations(path, _module(path)) == []


def test_the_rule_catches_a_violation(tmp_path: Path) -> None:
    # The check itself, on a module read as kernel/ would hold it: imports inside a function, one relative.
    probe = tmp_path / "probe.py"
    probe.write_text("def f() -> None:\n    from reviewer.boot import runner\n    from ..cli import review\n")
    assert violations(probe, "reviewer.kernel.probe") == [
        "reviewer.kernel.probe imports reviewer.boot.runner: kernel/ imports no stage, no report/, no cli/",
        "reviewer.kernel.probe imports reviewer.cli.review: nothing imports cli/",
    ]



def test_the_rule_keeps_the_bot_on_top(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from reviewer.bot import feed\nfrom reviewer.series.fetch import _record, mail_facts\nfrom reviewer import app\n")
    assert violations(probe, "reviewer.app") == ["reviewer.app imports reviewer.bot.feed: nothing but cli/ imports bot/"]
    assert violations(probe, "reviewer.cli.bot") == []
    assert violations(probe, "reviewer.bot.assemble") == [
        "reviewer.bot.assemble imports reviewer.series.fetch._record: bot/ uses only the public names of the layers below it",
    ]


def _graph(unit: Callable[[str], str]) -> dict[str, set[str]]:
    """Who imports whom among reviewer's modules (or UNIT: what each module name is counted as)."""
    modules = {_module(p): p for p in MODULES}
    graph: dict[str, set[str]] = {unit(m): set() for m in modules}
    for m, path in modules.items():
        for name in _imports(path, m):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and unit(name) != unit(m):
                graph[unit(m)].add(unit(name))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(n: str) -> None:
        index[n] = low[n] = len(index)
        stack.append(n)
        for w in graph.get(n, ()):
            if w not in index:
                visit(w)
                low[n] = min(low[n], low[w])
            elif w in stack:
                low[n] = min(low[n], index[w])
        if low[n] == index[n]:
            comp = []
            while (w := stack.pop()) != n:
                comp.append(w)
            if comp:
                out.append(sorted([n, *comp]))

    for n in sorted(graph):
        if n not in index:
            visit(n)
    return sorted(out)


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_no_import_cycle_between_files_or_packages() -> None:
    found = cycles(_graph(lambda m: m)) + [c for c in cycles(_graph(_package)) if c not in cycles(_graph(lambda m: m))]
    assert sorted(found) == []


def test_the_cycle_check_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_rule_keeps_typer_in_cli(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import typer\n\ndef f() -> None:\n    from reviewer.cli.options import exit_for\n")
    assert violations(probe, "reviewer.app") == [
        "reviewer.app imports typer: only cli/ imports typer",
        "reviewer.app imports reviewer.cli.options.exit_for: the application imports no cli/",
    ]
    assert violations(probe, "reviewer.cli.review") == []


def test_the_rule_keeps_bot_on_top(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from reviewer.bot import jobs\nfrom reviewer import app\n")
    assert violations(probe, "reviewer.app") == ["reviewer.app imports reviewer.bot.jobs: nothing but cli/ imports bot/"]
    assert violations(probe, "reviewer.report.email") == ["reviewer.report.email imports reviewer.bot.jobs: nothing but cli/ imports bot/"]
    assert violations(probe, "reviewer.cli.bot") == []
    assert violations(probe, "reviewer.bot.queue") == []


# docs/design.md, "Imports kept lazy": what may be imported inside a function, because a run that does not need it
# would measurably pay for it at start-up. Everything else is imported at the top of the module.
LAZY = ("scipy", "numpy", "git", "reviewer.tree.repo", "rich", "typer.rich_utils", "reviewer.report.terminal", "reviewer.report.pager",
        "reviewer.report.html", "jinja2",
        "reviewer.selftests", "reviewer.boot", "reviewer.compile", "reviewer.kernelscripts", "reviewer.kernel",
        "reviewer.apply.cache", "reviewer.apply.worktree", "reviewer.store.results", "reviewer.bot", "psycopg")


def imported_in_functions(path: Path) -> list[str]:
    """What PATH imports inside a function (`from X import Y` as X.Y: a module or a name in one)."""
    out = []
    for fn in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    out += [f"{node.lineno}: {a.name}" for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    out += [f"{node.lineno}: {'.' * node.level}{node.module}.{a.name}" for a in node.names]
    return out


def _lazy(name: str) -> bool:
    return any(name == k or name.startswith(f"{k}.") for k in LAZY)


def test_only_what_costs_start_up_is_imported_inside_a_function() -> None:
    found = {_module(p): bad for p in MODULES if (bad := [i for i in imported_in_functions(p) if not _lazy(i.split(": ", 1)[1])])}
    assert found == {}


def test_the_lazy_import_check_finds_one(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n\ndef f() -> None:\n    import json\n    from reviewer import config\n"
                     "    from reviewer.boot import runner\n    from rich.text import Text\n")
    assert [i for i in imported_in_functions(probe) if not _lazy(i.split(": ", 1)[1])] == ["4: json", "5: reviewer.config"]
