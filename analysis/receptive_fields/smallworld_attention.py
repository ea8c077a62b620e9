"""``python -m analysis.receptive_fields.smallworld_attention --out FILE``: the small-world measures of one layer of
SWA, SA and SA+SWA, each as ``python -m receptive.smallworld --graph MODEL ... --json`` reports it, in one file
(``rows``: model -> report).
"""

from __future__ import annotations

import contextlib
import io
import json

from graphs.cli_common import output_file, run_command, write_atomic
from receptive.attention_graphs import check_union_memory
from receptive.cli_parser import OneLineErrorParser
from receptive.smallworld import main as smallworld_main

MODELS = ("swa", "sa", "sa+swa")


def measure(n: int, w: int, sources: int) -> dict:
    """The report of ``python -m receptive.smallworld`` for each of :data:`MODELS` (undirected, seed 0)."""
    rows = {}
    for model in MODELS:
        argv = ["--graph", model, "--n", str(n), "--w", str(w), "--sources", str(sources), "--undirected"]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            smallworld_main([*argv, "--json", "--no-progress"])
        rows[model] = json.loads(out.getvalue())
    command = (
        f"python -m receptive.smallworld --graph MODEL --n {n} --w {w} --sources {sources} --undirected --json "
        f"--no-progress (MODEL = {', '.join(MODELS)}; seed 0)"
    )
    return {"command": command, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = OneLineErrorParser(
        prog="python -m analysis.receptive_fields.smallworld_attention", description=__doc__, options={"n": "--n"}
    )
    parser.add_argument("--n", type=int, default=32768, help="sequence length (default 32768)")
    parser.add_argument("--w", type=int, default=64, help="window (default 64)")
    parser.add_argument("--sources", type=int, default=512, help="sampled path-length sources (default 512)")
    parser.add_argument(
        "--out", type=output_file("--out", suffixes=(".json",)), required=True, help="JSON file to write"
    )
    args = parser.parse_args(argv)
    if args.n < 3:
        parser.error(f"--n: expected an integer >= 3, got {args.n}")
    if not 2 <= args.w < args.n:
        parser.error(f"--w: must be in 2..{args.n - 1} for --n {args.n}, got {args.w}")
    if not 1 <= args.sources <= args.n:
        parser.error(f"--sources: must be in 1..{args.n} for --n {args.n}, got {args.sources}")
    try:  # every model's union graph, before any is built
        for model in MODELS:
            check_union_memory(model, args.n, args.w, 1)
    except MemoryError as exc:
        parser.error(str(exc))
    write_atomic(args.out, json.dumps(measure(args.n, args.w, args.sources), indent=1) + "\n", option="--out")
    return 0


if __name__ == "__main__":
    run_command(main)
