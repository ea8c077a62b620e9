"""Failure clumps of causal SA+SWA in the engine, seed by seed, against the causal model's clump count.

The causal model (:func:`receptive.theory.causal_failure_clumps`) predicts ``P(full after L) = exp(-N_L)`` with
``N_L`` the expected number of clumps of missed (key, query) pairs: the Poisson clumping heuristic (Aldous 1989,
*Probability Approximations via the Poisson Clumping Heuristic*, ch. A), which needs the clumps to be nearly
independent. This script counts, for every seed and requested layer, the missed pairs ``(j, i)``, ``j <= i``, their
8-connected clumps (``scipy.ndimage.label``) and the queries with a missed key, every pair exact (bitsets through
the engine's operators), and writes per seed and per layer: the counts, their mean and variance over seeds, the
share of seeds that are full, ``exp(-mean clumps)`` (what independent clumps would give) and the model's ``N_L``.
A variance above the mean (over-dispersion) with a full share above ``exp(-mean)`` says the clumps come in groups.

``--sampled-point n:w:L0-L1`` (any ``n``): ``--targets K`` stratified target queries per seed (the engine's sampled
method, each exact), the number of targets with a missed key after each layer, against the model's count for ``K``
targets (``causal_failure_clumps(..., targets=K)``, the expected number of key runs at the targets), and the missed
(key, target) pairs against the model's expected missed pairs for ``K`` targets (``K/n`` of
``analysis.causal.causal_model_attempts.missed_pairs``): missed pairs per failing target far above the model's pairs per
clump say the failures come grouped by target (a target with a thin backward set misses keys at scattered offsets).

    python -m analysis.causal.causal_clumps --point 8192:16:6 --point 4096:16:5 --seeds 45 \
        --sampled-point 262144:16:15-18 --targets 8192 --sampled-seeds 3 \
        --out analysis/causal/results/causal_clumps.json
    python -m analysis.causal.causal_clumps --sampled-point 1048576:256:2-3 --targets 8192 --sampled-seeds 10 \
        --out analysis/causal/results/causal_clumps_far.json
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from scipy import ndimage

from graphs.cli_common import OneLineErrorParser, output_file, run_command, write_atomic
from graphs.cli_options import add_seeds_option
from graphs.ops import apply_layer
from receptive import coverage_by_layer, make_pattern, theory

#: every pair is held as a boolean n x n matrix per layer: 256 MiB at this size
MAX_N = 16384
#: the sampled method's n (one bitset of K = 8192 targets holds n K / 8 bytes: 16 GiB at 2^24)
MAX_SAMPLED_N = 2**24


def parse_point(text: str, max_n: int = MAX_N) -> tuple[int, int, list[int]]:
    """``n:w:L`` or ``n:w:L0-L1`` -> ``(n, w, [layers])``, ``2 <= n <= max_n``."""
    try:
        n, w, layers = text.split(":")
        lo, _, hi = layers.partition("-")
        n, w, lo, hi = int(n), int(w), int(lo), int(hi or lo)
    except ValueError:
        raise ValueError(f"point: expected n:w:L or n:w:L0-L1 with integers, got {text!r}") from None
    if not 2 <= n <= max_n:
        raise ValueError(f"point: n must lie in [2, {max_n}], got {n}")
    if not 2 <= w <= n:
        raise ValueError(f"point: w must lie in [2, n = {n}], got {w}")
    if not 1 <= lo <= hi <= 64:
        raise ValueError(f"point: layers must satisfy 1 <= L0 <= L1 <= 64, got {lo}-{hi}")
    return n, w, list(range(lo, hi + 1))


def seed_counts(n: int, w: int, seed: int, layers: list[int]) -> dict[int, dict[str, int]]:
    """Missed pairs, their 8-connected clumps and the queries with a missed key after each layer in ``layers``."""
    pattern = make_pattern("sa+swa", n, w, True, seed=seed)
    idx = np.arange(n)
    bits = np.zeros((n, -(-n // 64)), dtype=np.uint64)
    bits[idx, idx // 64] = np.uint64(1) << (idx % 64).astype(np.uint64)
    out = np.empty_like(bits)
    lower = idx[None, :] <= idx[:, None]  # row: query i, column: key j <= i
    counts = {}
    for layer in range(1, max(layers) + 1):
        apply_layer(pattern.layer_ops(layer), bits, out)
        bits, out = out, bits
        if layer not in layers:
            continue
        reach = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :n].astype(bool)
        missed = lower & ~reach
        counts[layer] = {
            "pairs": int(missed.sum()),
            "clumps": int(ndimage.label(missed, structure=np.ones((3, 3)))[1]),
            "queries": int(missed.any(axis=1).sum()),
        }
    return counts


def summarise(n: int, w: int, layers: list[int], seeds: list[int]) -> list[dict]:
    per_seed = [seed_counts(n, w, s, layers) for s in seeds]
    model = theory.causal_failure_clumps(n, w, max(layers))
    rows = []
    for layer in layers:
        clumps = np.array([c[layer]["clumps"] for c in per_seed])
        rows.append(
            {
                "n": n,
                "w": w,
                "layer": layer,
                "seeds": seeds,
                "pairs": [c[layer]["pairs"] for c in per_seed],
                "clumps": clumps.tolist(),
                "queries_with_miss": [c[layer]["queries"] for c in per_seed],
                "mean_clumps": float(clumps.mean()),
                "var_clumps": float(clumps.var(ddof=1)) if clumps.size > 1 else None,
                "full_share": float(np.mean([c[layer]["pairs"] == 0 for c in per_seed])),
                "exp_minus_mean_clumps": float(np.exp(-clumps.mean())),
                "model_clumps": float(model[layer - 1]),
                "model_full_probability": float(np.exp(-model[layer - 1])),
            }
        )
    return rows


def sampled_rows(n: int, w: int, layers: list[int], seeds: list[int], targets: int) -> list[dict]:
    """Targets (of ``targets`` stratified ones, drawn with the seed) with a missed key after each layer, per seed."""
    from .causal_model_attempts import missed_pairs  # the model's expected missed pairs (tested there)

    failing, pairs = [], []
    for s in seeds:
        result = coverage_by_layer(
            make_pattern("sa+swa", n, w, True, seed=s), max(layers), method="sampled", targets=targets, seed=s
        )
        missed = (result.positions + 1)[None, :] - result.sizes  # missed keys per target after each layer
        failing.append((missed > 0).sum(axis=1))
        pairs.append(missed.sum(axis=1))
    model = theory.causal_failure_clumps(n, w, max(layers), targets=targets)
    model_pairs = missed_pairs(n, w, max(layers), capped=False) * targets / n
    return [
        {
            "n": n,
            "w": w,
            "layer": layer,
            "targets": targets,
            "seeds": seeds,
            "failing_targets": [int(f[layer - 1]) for f in failing],
            "mean_failing_targets": float(np.mean([f[layer - 1] for f in failing])),
            "model_failing_targets": float(model[layer - 1]),
            "missed_pairs": [int(p[layer - 1]) for p in pairs],
            "mean_missed_pairs": float(np.mean([p[layer - 1] for p in pairs])),
            "model_missed_pairs": float(model_pairs[layer - 1]),
        }
        for layer in layers
    ]


def main(argv: list[str] | None = None) -> int:
    parser = OneLineErrorParser(prog="python -m analysis.causal.causal_clumps", description=__doc__.split("\n\n")[0])
    parser.add_argument("--point", action="append", default=[], help="n:w:L or n:w:L0-L1, every pair (repeatable)")
    parser.add_argument("--sampled-point", action="append", default=[], help="n:w:L0-L1, sampled targets (repeatable)")
    parser.add_argument("--targets", type=int, default=8192, help="targets per seed of a sampled point (default 8192)")
    parser.add_argument("--sampled-seeds", type=int, default=3, help="seeds of a sampled point (default 3)")
    add_seeds_option(parser, 15)
    parser.add_argument(
        "--out", type=output_file("--out", parents=True, suffixes=(".json",)), required=True, help="JSON file to write"
    )
    args = parser.parse_args(argv)
    for name in ("seeds", "sampled_seeds", "targets"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}: expected >= 1, got {getattr(args, name)}")
    points, sampled = [], []
    for flag, texts, found, max_n in (
        ("--point", args.point, points, MAX_N),
        ("--sampled-point", args.sampled_point, sampled, MAX_SAMPLED_N),
    ):
        try:
            found += [parse_point(p, max_n) for p in texts]
        except ValueError as error:
            parser.error(flag + str(error).removeprefix("point"))
    if not points and not sampled:
        parser.error("--point: expected at least one --point or --sampled-point")
    if any(args.targets > n for n, _, _ in sampled):
        parser.error(f"--targets: expected at most the smallest sampled n, got {args.targets}")
    seeds = list(range(args.seed, args.seed + args.seeds))
    rows = []
    for n, w, layers in points:
        start = time.perf_counter()
        rows += summarise(n, w, layers, seeds)
        for row in rows[-len(layers) :]:
            print(
                f"n={n} w={w} L={row['layer']}: clumps mean {row['mean_clumps']:.2f} var {row['var_clumps']:.2f}, "
                f"full {row['full_share']:.2f} vs exp(-mean) {row['exp_minus_mean_clumps']:.2f}; "
                f"model N {row['model_clumps']:.2f} ({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    sampled_out = []
    for n, w, layers in sampled:
        start = time.perf_counter()
        sampled_out += sampled_rows(n, w, layers, list(range(args.sampled_seeds)), args.targets)
        for row in sampled_out[-len(layers) :]:
            print(
                f"sampled n={n} w={w} L={row['layer']}: failing targets of {args.targets} "
                f"{row['mean_failing_targets']:.2f} (model {row['model_failing_targets']:.2f}), missed pairs "
                f"{row['mean_missed_pairs']:.2f} (model {row['model_missed_pairs']:.2f}; "
                f"{time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    doc = {
        "command": "python -m analysis.causal.causal_clumps " + " ".join(argv if argv is not None else sys.argv[1:]),
        "rows": rows,
        "sampled_rows": sampled_out,
    }
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n", option="--out", mkdir=True)
    return 0


if __name__ == "__main__":
    run_command(main)
