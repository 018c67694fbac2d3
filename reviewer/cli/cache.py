"""`review cache [--format text|json]` and `review cache prune [--older-than DAYS] [--max-size SIZE] [--dry-run]`: what the
tool keeps under $XDG_CACHE_HOME/reviewer, and pruning it (store/inventory.py, store/prune.py)."""
from __future__ import annotations

import json
import re
import sys
import time
from typing import Annotated, Any

import typer
from typer._types import TyperChoice  # typer's choice type, as cli/options.py uses it

from reviewer.cli.options import HELP_OPTIONS, WideHelp
from reviewer.store import dirs, inventory
from reviewer.store import prune as pruning

cache_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, context_settings=HELP_OPTIONS,
                        help="List what the tool keeps under $XDG_CACHE_HOME/reviewer (`review cache prune`: prune it).")

FormatOpt = Annotated[str | None, typer.Option("--format", "-f", metavar="FORMAT", click_type=TyperChoice(("text", "json")),
                                               help="text (default) or json (one document on stdout).")]
_SIZE = re.compile(r"^(\d+(?:\.\d*)?)\s*(?:([kmgt])(?:i?b)?|b)?$", re.IGNORECASE)
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
_ISO = "%Y-%m-%dT%H:%M:%SZ"


def parse_size(text: str) -> int:
    """Bytes from `500M`, `2G`, `1.5GiB`, `4096` (K, M, G, T: powers of 1024, as du -h counts)."""
    m = _SIZE.match(text.strip())
    if m is None:
        raise typer.BadParameter(f"{text!r} is not a size (bytes, or with K, M, G or T: 500M, 2G)")
    return int(float(m[1]) * 1024 ** (" KMGT".index(m[2].upper()) if m[2] else 0))


def human(n: int) -> str:
    size, unit = float(n), 0
    while size >= 1024 and unit < len(_UNITS) - 1:
        size, unit = size / 1024, unit + 1
    return f"{n} B" if unit == 0 else f"{size:.1f} {_UNITS[unit]}"


def _counted(n: int, unit: str) -> str:
    """N UNIT (a plural), in the singular for one."""
    return f"{n} {unit if n != 1 else unit[:-3] + 'y' if unit.endswith('ies') else unit[:-1]}"


def _when(t: float | None, fmt: str = "%Y-%m-%d %H:%M UTC") -> str | None:
    return None if t is None else time.strftime(fmt, time.gmtime(t))


def _layout() -> inventory.Layout:
    """What only the caches' owners know (store/ cannot import them: they import store/)."""
    from reviewer.apply import worktree
    from reviewer.kernel import images
    from reviewer.selftests import kept

    return inventory.Layout(kept.store(), images.KEEP_IMAGES, worktree.SLOTS)


@cache_app.callback(invoke_without_command=True)
def cache_command(ctx: typer.Context, fmt: FormatOpt = None) -> None:
    ctx.obj = fmt
    if ctx.invoked_subcommand is not None:
        return
    listed = inventory.caches(_layout())
    sys.stdout.write(json.dumps(_listing(listed), indent=2) + "\n" if fmt == "json" else _listing_text(listed))


@cache_app.command("prune", cls=WideHelp,
                   help="Prune each cache to its bound (the results to 200 MB, the kernel images to the 24 last used...), "
                        "tightened by --older-than and --max-size; what is in use stays.")
def prune_command(
    ctx: typer.Context,
    *,
    older_than: Annotated[float | None, typer.Option("--older-than", min=0, metavar="DAYS",
                                                     help="Also remove what was not used for DAYS days.")] = None,
    max_size: Annotated[int | None, typer.Option("--max-size", metavar="SIZE", parser=parse_size,
                                                 help="Also keep each cache within SIZE (500M, 2G: powers of 1024), "
                                                      "the least recently used going first.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would go; remove nothing.")] = False,
    fmt: FormatOpt = None,
) -> None:
    days = None if older_than is None else older_than * inventory.DAY
    done = pruning.prune(_layout(), older_than=days, max_bytes=max_size, dry_run=dry_run)
    if (fmt or ctx.obj) == "json":
        sys.stdout.write(json.dumps(_pruned(done, dry_run=dry_run), indent=2) + "\n")
    else:
        sys.stdout.write(_pruned_text(done, dry_run=dry_run))


def _bound(b: inventory.Bound) -> dict[str, Any]:
    return {"max_bytes": b.max_bytes, "max_age_days": None if b.max_age is None else b.max_age / inventory.DAY, "keep": b.keep}


def _bound_text(c: inventory.Cache) -> str:
    b = c.bound
    said = [*([f"at most {human(b.max_bytes)}"] if b.max_bytes is not None else []),
            *([f"unused for {b.max_age / inventory.DAY:g} days"] if b.max_age is not None else []),
            *([f"the {b.keep} {c.unit} last used, per tree"] if b.keep is not None else [])]
    return ", ".join(said or ["none"]) + (f" ({c.note})" if c.note else "")


def _listing(caches: list[inventory.Cache]) -> dict[str, Any]:
    return {"root": str(dirs.cache_root()), "bytes": sum(c.bytes for c in caches), "caches": [_cache(c) for c in caches]}


def _cache(c: inventory.Cache) -> dict[str, Any]:
    entries = [{"name": i.name, "path": str(i.path), "bytes": i.bytes, "count": i.count, "last_used": _when(i.newest, _ISO)}
               for i in c.items]
    return {"name": c.name, "path": str(c.path), "bytes": c.bytes, "count": c.count, "unit": c.unit, "oldest_use": _when(c.oldest, _ISO),
            "newest_use": _when(c.newest, _ISO), "bound": _bound(c.bound), "note": c.note, "entries": entries}


def _listing_text(caches: list[inventory.Cache]) -> str:
    rows = [(c.name, human(c.bytes), _counted(c.count, c.unit), f"last used {_when(c.newest)}" if c.newest else "never used",
             _bound_text(c), str(c.path)) for c in caches]
    widths = [max(len(r[n]) for r in rows) for n in range(4)]
    lines = [f"{dirs.cache_root()}: {human(sum(c.bytes for c in caches))} in {len(caches)} caches"]
    lines += ["  ".join([r[0].ljust(widths[0]), r[1].rjust(widths[1]), *(r[n].ljust(widths[n]) for n in (2, 3))])
              + f"  {r[5]}\n{'':{widths[0]}}  bound: {r[4]}" for r in rows]
    return "\n".join(lines) + "\n"


def _pruned(done: list[pruning.Pruned], *, dry_run: bool) -> dict[str, Any]:
    out = [{"name": p.cache, "count": len(p.removed), "bytes": p.bytes, "removed": list(p.removed), "kept": list(p.kept)} for p in done]
    return {"dry_run": dry_run, "count": sum(len(p.removed) for p in done), "bytes": sum(p.bytes for p in done), "caches": out}


def _pruned_text(done: list[pruning.Pruned], *, dry_run: bool) -> str:
    verb = "would remove" if dry_run else "removed"
    width = max(len(p.cache) for p in done)
    lines = []
    for p in done:
        lines.append(f"{p.cache:<{width}}  {verb} {len(p.removed)}" + (f" ({human(p.bytes)})" if p.removed else ""))
        lines += [f"{'':<{width}}  kept {why}" for why in p.kept]
    total = sum(p.bytes for p in done)
    lines.append(f"{'in all':<{width}}  {verb} {sum(len(p.removed) for p in done)} ({human(total)})")
    return "\n".join(lines) + "\n"
