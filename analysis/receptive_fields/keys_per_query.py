"""``python -m analysis.receptive_fields.keys_per_query --out FILE``: distinct keys per query of the training
study's patterns (SWA, SA, SA+SWA at its sizes), over 5 seeds and 4 layers each."""

from __future__ import annotations

import json

import numpy as np

from graphs.cli_common import output_file, run_command, write_atomic
from receptive import make_pattern
from receptive.cli_parser import OneLineErrorParser
from receptive.patterns.causal_variants import keys_per_query

SIZES = ((64, 8, True), (128, 8, True), (256, 16, True), (128, 8, False))  # (n, w, causal) of analysis.training
SEEDS = 5
LAYERS = (1, 2, 3, 4)


def rows(sizes=SIZES, seeds: int = SEEDS) -> list[dict]:
    """Mean, min and max keys per query of each pattern and size over ``seeds`` seeds times :data:`LAYERS`."""
    out = []
    for n, w, causal in sizes:
        for kind in ("swa", "sa", "sa+swa"):
            v = [
                keys_per_query(make_pattern(kind, n, w, causal, seed=s), layer)
                for s in range(seeds)
                for layer in LAYERS
            ]
            out.append(
                {"kind": kind, "n": n, "w": w, "causal": causal, "keys_per_query_mean": float(np.mean(v))}
                | {"min": float(np.min(v)), "max": float(np.max(v)), "draws": len(v)}
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m analysis.receptive_fields.keys_per_query", description=__doc__)
    parser.add_argument(
        "--out", type=output_file("--out", suffixes=(".json",)), required=True, help="JSON file to write"
    )
    args = parser.parse_args(argv)
    doc = {"command": "python -m analysis.receptive_fields.keys_per_query", "rows": rows()}
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n", option="--out")
    return 0


if __name__ == "__main__":
    run_command(main)
