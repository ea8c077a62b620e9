"""``python -m gpu.approx``: relative error ||O - O_hat||_F / ||O||_F of every method against exact float64 attention
at matched budgets (keys per query), mean +- std over seeds, on synthetic matrices.

Kinds: ``random`` (q, k, v standard normal: near-uniform attention, the hardest case for sparse methods), ``lowrank``
(q and k of rank 4: a numerically low-rank score matrix) and ``spiky`` (a few attention-sink keys aligned with the
queries plus a local bias, the structure the survey finds in Llama's attention)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

from receptive.cli_parser import OneLineErrorParser, comma_ints, comma_names

from . import METHODS, approximate, exact_attention, relative_error

KINDS = ("random", "lowrank", "spiky")


def synthetic(kind: str, n: int, d: int, seed: int, heads: int = 4):
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    v = randn(1, heads, n, d)
    if kind == "random":
        return randn(1, heads, n, d), randn(1, heads, n, d), v
    if kind == "lowrank":
        basis = randn(1, heads, 4, d)
        return randn(1, heads, n, 4) @ basis, randn(1, heads, n, 4) @ basis, v
    q, k = randn(1, heads, n, d), randn(1, heads, n, d)
    direction = q.mean(dim=2, keepdim=True)
    k[:, :, : max(1, n // 64)] += 4 * direction / direction.norm(dim=-1, keepdim=True) * math.sqrt(d)  # sinks
    pos = torch.arange(n, dtype=torch.float64)
    k = k + 0.5 * torch.sin(pos[:, None] / 8 + torch.arange(d) / d)  # a smooth local component shared with q
    q = q + 0.5 * torch.sin(pos[:, None] / 8 + torch.arange(d) / d)
    return q, k, v


def study(kinds, n, d, budgets, seeds) -> list[dict]:
    rows = []
    for kind in kinds:
        for budget in budgets:
            for name in METHODS:
                errors = []
                for seed in range(seeds):
                    q, k, v = synthetic(kind, n, d, seed)
                    errors.append(
                        relative_error(approximate(name, q, k, v, budget, seed=seed), exact_attention(q, k, v))
                    )
                mean = sum(errors) / len(errors)
                std = math.sqrt(sum((e - mean) ** 2 for e in errors) / max(1, len(errors) - 1))
                rows.append({"kind": kind, "budget": budget, "method": name, "mean": mean, "std": std})
    return rows


def main(argv=None) -> int:
    p = OneLineErrorParser(prog="python -m gpu.approx", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated from {', '.join(KINDS)}")
    p.add_argument("--n", type=int, default=512, help="sequence length (default 512, MiniLM's)")
    p.add_argument("--d", type=int, default=32, help="head dimension (default 32, MiniLM's)")
    p.add_argument("--budgets", default="16,32,64,128", help="keys per query")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--json", help="also write the rows to this file")
    args = p.parse_args(argv)
    try:
        kinds = comma_names("--kinds", args.kinds, KINDS)
        budgets = comma_ints("--budgets", args.budgets)
    except ValueError as exc:
        p.error(str(exc))
    if args.n < 2 or args.d < 1 or args.seeds < 1:
        p.error("--n, --d, --seeds: expected positive integers (n >= 2)")
    rows = study(kinds, args.n, args.d, budgets, args.seeds)
    for kind in kinds:
        print(f"\n{kind}: relative error (mean +- std over {args.seeds} seeds), n = {args.n}, d = {args.d}")
        print(f"{'method':<14}" + "".join(f"{'m = ' + str(b):>18}" for b in budgets))
        for name in METHODS:
            cells = [r for r in rows if r["kind"] == kind and r["method"] == name]
            print(f"{name:<14}" + "".join(f"{r['mean']:>11.4f} +-{r['std']:.3f}" for r in cells))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"parameters": vars(args), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
