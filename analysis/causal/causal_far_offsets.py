"""Where causal SA+SWA's last failures sit: the missed keys of every failing target, seed by seed.

For ``--targets K`` stratified targets per seed (the engine's sampled method, :func:`receptive.coverage_by_layer`),
every target with a missed key after ``--layer L`` gets its exact backward set (the keys that reach it in ``L`` layers),
computed here from the pattern's explicit edges, layer ``L`` down to 1: the causal window of ``w`` keys and the SA
band in permuted order, keys after the target's own position masked. Its size is checked against the engine's count
for that target. Per failing target the file holds the offsets ``target - key`` of its missed keys; the summary, the
number of failing targets, missed keys per failing target, the span of their offsets and the nearest and farthest
offset. This is what decides whether the interval model's cut (``receptive.theory.interval``) holds the
failures or leaves them to the profile model beyond it.

    python -m analysis.causal.causal_far_offsets --n 1048576 --w 256 --layer 3 --targets 8192 --seeds 10 \
        --out analysis/causal/results/causal_far_offsets.json
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from graphs.cli_common import output_file, run_command, write_atomic
from receptive import coverage_by_layer, make_pattern
from receptive.cli_parser import OneLineErrorParser, add_seeds_option

#: failing targets whose backward sets are computed per seed, at most (each costs one pass over the sequence per layer)
MAX_FAILING = 50


def backward_set(pattern, target: int, layers: int) -> np.ndarray:
    """Boolean mask of the keys that reach ``target`` within ``layers`` layers of causal SA+SWA ``pattern``."""
    n, w = pattern.n, pattern.swa.w
    reached = np.zeros(n, dtype=bool)
    reached[target] = True
    band = np.arange(-pattern.left, pattern.right + 1)
    for layer in range(layers, 0, -1):
        perm = pattern.permutation(layer)
        rank = np.empty(n, dtype=np.int64)
        rank[perm] = np.arange(n)
        members = np.flatnonzero(reached)
        after = np.concatenate([np.cumsum(reached[::-1])[::-1], [0]])  # after[j] = members in [j, n)
        keys = np.arange(n)
        grown = after[keys] - after[np.minimum(keys + w, n)] > 0  # a member within the w - 1 positions after j
        for chunk in np.array_split(members, max(1, members.size // 16384)):
            slots = rank[chunk][:, None] + band[None, :]
            inside = (slots >= 0) & (slots < n)
            sources = perm[np.clip(slots, 0, n - 1)]
            grown[sources[inside & (sources <= chunk[:, None])]] = True
        reached = grown
    return reached


def seed_rows(n: int, w: int, layer: int, targets: int, seed: int) -> dict:
    pattern = make_pattern("sa+swa", n, w, True, seed=seed)
    result = coverage_by_layer(pattern, layer, method="sampled", targets=targets, seed=seed)
    missed = result.positions + 1 - result.sizes[layer - 1]
    failing = np.flatnonzero(missed > 0)
    rows = []
    for index in failing[:MAX_FAILING]:
        target = int(result.positions[index])
        keys = np.flatnonzero(~backward_set(pattern, target, layer)[: target + 1])
        if keys.size != missed[index]:
            raise AssertionError(f"seed {seed}, target {target}: {keys.size} missed keys here, engine {missed[index]}")
        rows.append({"target": target, "offsets": (target - keys[::-1]).tolist()})
    return {"seed": seed, "failing_targets": int(failing.size), "traced": rows}


def summarise(per_seed: list[dict]) -> dict:
    traced = [t for s in per_seed for t in s["traced"]]
    if not traced:
        return {"failing_targets": sum(s["failing_targets"] for s in per_seed), "traced": 0}
    sizes = np.array([len(t["offsets"]) for t in traced])
    spans = np.array([t["offsets"][-1] - t["offsets"][0] + 1 for t in traced])
    nearest = np.array([t["offsets"][0] for t in traced])
    farthest = np.array([t["offsets"][-1] for t in traced])
    return {
        "failing_targets": sum(s["failing_targets"] for s in per_seed),
        "traced": len(traced),
        "missed_keys_per_failing_target_mean": float(sizes.mean()),
        "missed_keys_per_failing_target_max": int(sizes.max()),
        "span_median": float(np.median(spans)),
        "span_max": int(spans.max()),
        "nearest_offsets_sorted": np.sort(nearest).tolist(),
        "farthest_offset_max": int(farthest.max()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = OneLineErrorParser(
        prog="python -m analysis.causal.causal_far_offsets", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--n", type=int, default=1048576, help="sequence length (default 2^20)")
    parser.add_argument("--w", type=int, default=256, help="window (default 256)")
    parser.add_argument("--layer", type=int, default=3, help="layers (default 3)")
    parser.add_argument("--targets", type=int, default=8192, help="stratified targets per seed (default 8192)")
    add_seeds_option(parser, 10)
    parser.add_argument("--out", type=output_file("--out", suffixes=(".json",)), help="write the JSON here")
    args = parser.parse_args(argv)
    if not 2 <= args.n <= 2**22:
        parser.error(f"--n: expected an integer in [2, 2^22], got {args.n}")
    for name, low, high in (("w", 2, args.n), ("layer", 1, 64), ("targets", 1, args.n), ("seeds", 1, 1000)):
        if not low <= getattr(args, name) <= high:
            parser.error(f"--{name}: expected an integer in [{low}, {high}], got {getattr(args, name)}")
    per_seed = []
    for seed in range(args.seed, args.seed + args.seeds):
        start = time.perf_counter()
        per_seed.append(seed_rows(args.n, args.w, args.layer, args.targets, seed))
        spans = [(t["offsets"][0], t["offsets"][-1], len(t["offsets"])) for t in per_seed[-1]["traced"]]
        print(
            f"seed {seed}: {per_seed[-1]['failing_targets']} failing targets (nearest, farthest, missed keys): "
            f"{spans} ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
    summary = summarise(per_seed)
    print(json.dumps(summary))
    if args.out:
        command = " ".join(argv if argv is not None else sys.argv[1:])
        doc = {"command": f"python -m analysis.causal.causal_far_offsets {command}"}
        doc |= {"n": args.n, "w": args.w, "layer": args.layer, "targets": args.targets, "summary": summary}
        doc["seeds"] = per_seed
        write_atomic(args.out, json.dumps(doc, indent=1) + "\n", option="--out")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    run_command(main)
