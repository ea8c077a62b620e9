"""``python -m analysis.receptive_fields.hops --out FILE``: the hop distribution through depth of SA and SA+SWA.

What ``figures/hops.py`` draws, written to JSON at the study's size (bidirectional and causal; causal stacks are
cut at 12 layers, where causal SA has not yet connected every pair).
"""

from __future__ import annotations

import json

from graphs.cli_common import output_file, run_command, write_atomic
from receptive import make_pattern
from receptive.cli_parser import OneLineErrorParser
from receptive.hops import hop_distribution

CAUSAL_LAYERS = 12


def hops(n: int, w: int, seed: int = 0) -> dict:
    """Mean hops, unreached share and the hop histogram of SA and SA+SWA, bidirectional and causal."""
    rows = []
    for name, causal in (("sa", False), ("sa+swa", False), ("sa", True), ("sa+swa", True)):
        h = hop_distribution(make_pattern(name, n, w, causal, seed=seed), CAUSAL_LAYERS if causal else None)
        rows.append(
            {
                "pattern": name,
                "causal": causal,
                "mean": h.mean,
                "unreached": h.unreached_fraction,
                "method": h.method,
                "pairs": [int(x) for x in h.pairs],
            }
        )
    return {
        "n": n,
        "w": w,
        "seed": seed,
        "command": f"python -m analysis.receptive_fields.hops --n {n} --w {w}",
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m analysis.receptive_fields.hops", description=__doc__)
    parser.add_argument("--n", type=int, default=32768, help="sequence length (default 32768)")
    parser.add_argument("--w", type=int, default=64, help="window (default 64)")
    parser.add_argument(
        "--out", type=output_file("--out", suffixes=(".json",)), required=True, help="JSON file to write"
    )
    args = parser.parse_args(argv)
    if args.n < 3:
        parser.error(f"--n: expected an integer >= 3, got {args.n}")
    if not 2 <= args.w < args.n:
        parser.error(f"--w: must be in 2..{args.n - 1} for --n {args.n}, got {args.w}")
    try:
        doc = hops(args.n, args.w)
    except MemoryError as exc:  # the engine's estimate, made before it allocates
        parser.error(f"--n: too large for the engine's memory bound ({exc})")
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n", option="--out")
    return 0


if __name__ == "__main__":
    run_command(main)
