"""The benchmarks' command line: --help prints the script's docstring; they take no other argument
(their knobs are environment variables, e.g. RUNS), so anything else is an error before any work."""
from __future__ import annotations

import argparse


def usage(doc: str | None) -> None:
    argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
