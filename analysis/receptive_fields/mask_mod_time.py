"""``python -m analysis.receptive_fields.mask_mod_time --out FILE``: the time of
:func:`receptive.patterns.flex.from_mask_mod` (which evaluates all n^2 pairs) on a causal 64-key sliding window,
torch on one thread."""

from __future__ import annotations

import json
import os
import time

from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser, comma_ints

WINDOW = 64


def sliding(b, h, q, kv):
    """FlexAttention ``mask_mod`` of a causal sliding window of :data:`WINDOW` keys."""
    return (q - kv < WINDOW) & (kv <= q)


def timings(sizes) -> list[dict]:
    """Seconds of one ``from_mask_mod(sliding, n, causal=True)`` per ``n``, with the pattern's nonzeros."""
    import torch

    from receptive.patterns.flex import from_mask_mod

    torch.set_num_threads(1)
    rows = []
    for n in sizes:
        t = time.perf_counter()
        p = from_mask_mod(sliding, n, causal=True)
        rows.append({"n": n, "seconds": time.perf_counter() - t, "nnz": int(p.adjacency(1).nnz)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m analysis.receptive_fields.mask_mod_time", description=__doc__)
    parser.add_argument(
        "--sizes",
        default="4096,16384",
        help="sequence lengths (default 4096,16384)",
    )
    parser.add_argument(
        "--out", type=output_file("--out", suffixes=(".json",)), required=True, help="JSON file to write"
    )
    args = parser.parse_args(argv)
    try:
        sizes = comma_ints("--sizes", args.sizes, low=WINDOW)
    except ValueError as exc:
        parser.error(str(exc))
    doc = {"command": "python -m analysis.receptive_fields.mask_mod_time", "load_average": os.getloadavg()}
    write_atomic(args.out, json.dumps(doc | {"rows": timings(sizes)}, indent=1) + "\n", option="--out")
    return 0


if __name__ == "__main__":
    run_command(main)
