"""The command line of ``python -m receptive.bound.pooled`` (:mod:`receptive.bound.pooled` pools and evaluates;
this module parses the arguments and writes the table, the CSV and the JSON)."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

from graphs._atomic import write_text_atomic

from .. import PATTERNS
from ..cli_parser import OneLineErrorParser, comma_names
from . import pooled
from .cli import _show

CAUSAL_CHOICES = {"yes": (True,), "no": (False,), "both": (True, False)}


CSV_COLUMNS = [
    "pattern",
    "causal",
    "circular",
    "n",
    "w",
    "method",
    "targets",
    "seeds",
    "full_layers",
    "typical",
    "predicted",
    "exact",
    "within_one",
    "direction",
    "exact_probability",
    "checks",
    "min_p_value",
]


def to_csv(result: pooled.PooledResult) -> str:
    """One row per point (seeds and full_layers ``;``-separated; ``checks``: binomial checks at the point)."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(CSV_COLUMNS)
    for p in result.points:
        d = p.to_dict()
        d["seeds"] = ";".join(map(str, p.seeds))
        d["full_layers"] = ";".join("-" if f is None else str(f) for f in p.full_layers)
        d["checks"] = len(p.probability_checks)
        d["min_p_value"] = min((c["p_value"] for c in p.probability_checks), default=None)
        out.writerow([d[c] for c in CSV_COLUMNS])
    return buf.getvalue()


def format_table(result: pooled.PooledResult) -> str:
    """Per point: regime, n, w, method, seeds, typical and predicted L*, direction and the calibrated exact
    probability ``q``; then one summary line per regime."""
    lines = [f"{'regime':<26} {'n':>8} {'w':>4} {'method':<8} {'seeds':>5} {'typ':>4} {'pred':>4}  {'':<11} q"]
    for p in result.points:
        lines.append(
            f"{p.regime:<26} {p.n:>8} {p.w:>4} {p.method:<8} {len(p.seeds):>5} {_show(p.typical):>4} "
            f"{_show(p.predicted):>4}  {_show(p.direction):<11} "
            + ("-" if p.exact_probability is None else f"{p.exact_probability:.2f}")
        )
    lines.append("")
    for regime, s in result.summary.items():
        lines.append(f"{regime}: {pooled.summary_line(s)}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog="python -m receptive.bound.pooled",
        description=pooled.__doc__.split("\n\n", 1)[1].replace("``", "").replace(":func:", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  python -m receptive.bound.pooled --out results/causal/pooled.json\n"
        "  python -m receptive.bound.pooled results/causal --patterns sa+swa --causal yes --csv\n",
    )
    p.add_argument(
        "dirs",
        nargs="*",
        default=list(pooled.DEFAULT_DIRS),
        help="directories searched (recursively) for tasks.jsonl (default: results/bound results/causal)",
    )
    p.add_argument("--patterns", help="comma-separated patterns to keep (default: all found)")
    p.add_argument("--causal", choices=sorted(CAUSAL_CHOICES), default="both", help="modes to keep (default both)")
    p.add_argument(
        "--model",
        choices=pooled.MODELS,
        default="interval",
        help="causal SA+SWA's model: the interval Monte Carlo (default; its committed file, results/causal/"
        "interval_model.json) or the analytic run-branching/profile model (receptive.theory)",
    )
    p.add_argument(
        "--interval-file",
        help="the interval model's result file (default results/causal/interval_model.json; points it lacks are "
        "computed live)",
    )
    p.add_argument("--out", help="write the JSON here and the CSV next to it (same name, .csv)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    fmt.add_argument("--csv", action="store_true", help="print the CSV instead of the table")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.out and Path(args.out).suffix != ".json":
            raise ValueError(f"--out: expected a path ending in .json, got {args.out!r}")
        patterns = None
        if args.patterns is not None:
            patterns = comma_names("--patterns", args.patterns, tuple(PATTERNS))
        result = pooled.pooled_evaluation(
            args.dirs, patterns, CAUSAL_CHOICES[args.causal], args.model, args.interval_file
        )
        if args.out:
            out = Path(args.out)
            write_text_atomic(out, json.dumps(result.to_dict(), indent=1) + "\n", "--out")
            write_text_atomic(out.with_suffix(".csv"), to_csv(result), "--out")
    except ValueError as exc:
        parser.error(str(exc))
    if args.json:
        json.dump(result.to_dict(), sys.stdout)
        sys.stdout.write("\n")
    elif args.csv:
        sys.stdout.write(to_csv(result))
    else:
        print(format_table(result))
        if args.out:
            print(f"\nwrote {out}, {out.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
