"""``python -m figures all`` or ``python -m figures NAME [NAME ...]``: PNG and PDF of each figure in --out."""

from __future__ import annotations

import argparse
import sys
import time

from receptive.cli_parser import OneLineErrorParser

from . import FIGURES


def main(argv=None) -> int:
    p = OneLineErrorParser(prog="python -m figures", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("names", nargs="+", help=f"all, or from {', '.join(FIGURES)}")
    p.add_argument("--out", default="figures/out", help="output directory (default figures/out, not committed)")
    p.add_argument("--quick", action="store_true", help="smaller sizes (seconds instead of minutes)")
    args = p.parse_args(argv)
    names = list(FIGURES) if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        p.error(f"names: unknown figure(s) {', '.join(unknown)}; choose all or from {', '.join(FIGURES)}")
    for name in names:
        start = time.perf_counter()
        try:
            paths = FIGURES[name](args.out, quick=args.quick)
        except FileNotFoundError as exc:
            p.error(str(exc))
        print(f"{name}: {', '.join(map(str, paths))} ({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
