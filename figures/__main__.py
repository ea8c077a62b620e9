"""``python -m figures all --out DIR`` or ``python -m figures NAME [NAME ...] --out DIR``: PNG and PDF of each figure.

Run from the checkout root: the figures built from committed results read them from ``analysis/*/results`` and
``benchmarks/results``; the others compute from the toolkit's public API.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from receptive.cli_parser import OneLineErrorParser

from . import FIGURES

EPILOG = """\
examples:
  python -m figures coverage_vs_layer --quick --out /tmp/figures
  python -m figures all --out /tmp/figures
"""


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m figures``: figure names, ``--out`` (required) and ``--quick``."""
    p = OneLineErrorParser(
        prog="python -m figures",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("names", nargs="+", help=f"all, or from {', '.join(FIGURES)}")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing; required)")
    p.add_argument("--quick", action="store_true", help="smaller sizes, seconds instead of minutes (default: off)")
    return p


def output_dir(text: str) -> Path:
    """``--out`` as a folder that exists and is writable (created if missing), else a ``ValueError`` naming it."""
    path = Path(text)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--out: cannot create the folder {text!r} ({exc.strerror or exc})") from None
    if not path.is_dir() or not os.access(path, os.W_OK):
        raise ValueError(f"--out: {text!r} is not a writable folder")
    return path


def main(argv=None) -> int:
    """Draw the named figures into ``--out``; returns 0, or exits 2 with a one-line error naming the argument."""
    p = build_parser()
    args = p.parse_args(argv)
    names = list(FIGURES) if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        p.error(f"names: unknown figure(s) {', '.join(unknown)}; choose all or from {', '.join(FIGURES)}")
    try:
        out = output_dir(args.out)
    except ValueError as exc:
        p.error(str(exc))
    for name in names:
        start = time.perf_counter()
        try:
            paths = FIGURES[name](out, quick=args.quick)
        except FileNotFoundError as exc:
            p.error(str(exc))
        print(f"{name}: {', '.join(map(str, paths))} ({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
