"""Where would long-n training separate the causal variants from SA+SWA? The readout's reachable share, untrained.

``python -m analysis.training.reach_grid --out analysis/training/results/long_n_reach/reach.json`` computes, for causal
retrieval (:func:`analysis.training.tasks.retrieval`: readout ``n - 1``, the answer at ``p + 1`` with ``p`` uniform on
``0..n-3``), for every kind, ``n``, ``w``, ``L`` and seed of the grid:

* ``reachable``: the share of answer positions ``j = 1..n-2`` in the readout's receptive field ``RF_L(n - 1)``
  (:func:`analysis.training.reach.receptive_rows`, the exact field of the model's eval-mode pattern
  :func:`analysis.training.reach.pattern_for` with that seed), i.e. ``|RF_L(n - 1) cap [1, n - 2]| / (n - 2)``.
  This is the
  expectation over the task's uniform ``p`` of what :func:`analysis.training.runner` reports as ``reachable`` for a
  trained
  run (there estimated on ``eval_samples`` draws), and every committed run's accuracy follows it (a model right
  exactly where it can reach scores ``reachable + (1 - reachable) / 16``);
* ``coverage_mean``: receptive's mean coverage ``mean_i |RF_L(i)| / (i + 1)`` over every position ``i``
  (:func:`receptive.coverage_by_layer`, exact at these sizes; ``coverage_method`` says which): what a task read out at
  every position rather than the last one could use;
* ``keys_per_query``: the distinct keys per query of layer 1, self included
  (:func:`receptive.patterns.causal_variants.keys_per_query`), the cost side of the comparison, and
  ``readout_keys``, those of the readout itself (:func:`readout_keys`);
* per ``(kind, n, w, seed)``: ``lstar_readout``, the first layer at which the readout sees every position
  ``0..n-1``, and ``lstar``, the first at which every position sees all its admissible keys (``None`` beyond 64
  layers; receptive's coverage, as :func:`analysis.training.reach.coverage_summary` computes them).

``separation`` lists, per ``(n, w, L)``, the gap ``mean reachable(sa-ms+swa-eq) - mean reachable(sa+swa)`` over the
seeds, the gap between the variant's worst seed and SA+SWA's best (positive: the variant is ahead on every seed) and
the same mean gap in ``coverage_mean``. ``choice`` is the configuration with the largest mean gap in ``reachable``,
ties broken towards fewer layers, then smaller ``n``. These are properties of the patterns, not training results: a
trained model can only be right where the answer is reachable, so a gap here bounds what training at that
configuration can show (every committed retrieval run is right exactly where it can reach, none beyond).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from graphs.cli_common import output_file, run_command, write_atomic
from receptive import coverage_by_layer
from receptive.cli_parser import OneLineErrorParser, add_seeds_option
from receptive.patterns.causal_variants import keys_per_query

from .models import KINDS
from .reach import MAX_LSTAR_LAYERS, pattern_for, receptive_rows

#: the kinds the grid compares
GRID_KINDS = ("full", "swa", "sa", "sa+swa", "sa-ms-eq", "sa-ms+swa-eq", "kleinberg+swa-eq", "dilated+swa-eq")
#: layers 2-4, and 5-6 to see where the two meet at n = 4096, w = 8
DEFAULT_NS, DEFAULT_WS, DEFAULT_LAYERS, DEFAULT_SEEDS = (1024, 4096), (8, 16), (2, 3, 4, 5, 6), (0, 1, 2)
DEFAULT_OUT = "analysis/training/results/long_n_reach/reach.json"
VARIANT, BASELINE = "sa-ms+swa-eq", "sa+swa"


def readout_reachable(pattern, layers: int) -> float:
    """``|RF_layers(n - 1) cap [1, n - 2]| / (n - 2)``: the share of the causal retrieval task's answer positions
    the readout ``n - 1`` can reach through ``layers`` layers of ``pattern``."""
    n = pattern.n
    if n < 4:
        raise ValueError(f"pattern: expected n >= 4 (retrieval needs 4 tokens), got n = {n}")
    if isinstance(layers, bool) or not isinstance(layers, int) or layers < 1:
        raise ValueError(f"layers: expected a positive integer, got {layers!r}")
    field = receptive_rows(pattern, layers, [n - 1])[0]
    return float(field[1 : n - 1].mean())


def readout_keys(pattern, layers: int) -> float:
    """The distinct keys the readout ``n - 1`` attends (self included), averaged over layers ``1..layers``: where
    causal SA's band is complete, so the ``-eq`` variants, sized to SA's keys averaged over all positions, attend
    fewer there than SA+SWA."""
    if isinstance(layers, bool) or not isinstance(layers, int) or layers < 1:
        raise ValueError(f"layers: expected a positive integer, got {layers!r}")
    n = pattern.n
    return float(np.mean([pattern.adjacency(layer)[[n - 1]].nnz for layer in range(1, layers + 1)]))


def _check(name: str, values, low: int, high: int) -> tuple[int, ...]:
    values = tuple(values)
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high for v in values):
        raise ValueError(f"{name}: expected a non-empty list of integers in [{low}, {high}], got {list(values)!r}")
    return values


def reach_grid(kinds=GRID_KINDS, ns=DEFAULT_NS, ws=DEFAULT_WS, layers=DEFAULT_LAYERS, seeds=DEFAULT_SEEDS) -> dict:
    """The rows, per-configuration aggregates, the separation table and the choice described in the module doc."""
    kinds = tuple(kinds)
    if not kinds or any(k not in KINDS for k in kinds):
        raise ValueError(f"kinds: expected a non-empty list from {', '.join(KINDS)}, got {list(kinds)!r}")
    ns, layers = _check("ns", ns, 8, 1 << 16), _check("layers", layers, 1, 64)
    ws, seeds = _check("ws", ws, 2, 1 << 16), _check("seeds", seeds, 0, 2**31 - 1)
    if any(w > n // 2 for n in ns for w in ws):
        raise ValueError(f"ws: expected windows of at most min(ns) / 2 = {min(ns) // 2}, got {list(ws)!r}")
    rows, readout_lstar = [], []
    for n in ns:
        for w in ws:
            for kind in kinds:
                for seed in seeds:
                    pattern = pattern_for(kind, n, w, True, seed)
                    keys = float(keys_per_query(pattern, 1))
                    through = coverage_by_layer(pattern, max_layers=max(MAX_LSTAR_LAYERS, *layers), progress=False)
                    for layer in layers:
                        mean = through.layers[layer - 1].mean if layer <= len(through.layers) else 1.0
                        rows.append(
                            {
                                "kind": kind,
                                "n": n,
                                "w": w,
                                "layers": layer,
                                "seed": seed,
                                "reachable": readout_reachable(pattern, layer),
                                "coverage_mean": mean,
                                "keys_per_query": keys,
                                "readout_keys": readout_keys(pattern, layer),
                            }
                        )
                    full = np.flatnonzero(through.sizes[:, n - 1] == n)
                    readout_lstar.append(
                        {
                            "kind": kind,
                            "n": n,
                            "w": w,
                            "seed": seed,
                            "lstar_readout": int(full[0]) + 1 if full.size else None,
                            "lstar": through.full_coverage_layer,
                            "coverage_method": through.method,
                        }
                    )
    return {"aggregate": _aggregate(rows), "readout_lstar": readout_lstar, **_separation(rows), "rows": rows}


def _aggregate(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["kind"], r["n"], r["w"], r["layers"]), []).append(r)
    out = []
    for (kind, n, w, layer), members in groups.items():
        reach = np.array([m["reachable"] for m in members])
        out.append(
            {
                "kind": kind,
                "n": n,
                "w": w,
                "layers": layer,
                "seeds": [m["seed"] for m in members],
                "reachable_mean": float(reach.mean()),
                "reachable_min": float(reach.min()),
                "reachable_max": float(reach.max()),
                "coverage_mean": float(np.mean([m["coverage_mean"] for m in members])),
                "readout_keys_mean": float(np.mean([m["readout_keys"] for m in members])),
                "keys_per_query_mean": float(np.mean([m["keys_per_query"] for m in members])),
            }
        )
    return out


def _separation(rows: list[dict]) -> dict:
    by = {}
    for r in rows:
        by.setdefault((r["n"], r["w"], r["layers"]), {}).setdefault(r["kind"], []).append(r)
    table = []
    for (n, w, layer), kinds in by.items():
        if VARIANT not in kinds or BASELINE not in kinds:
            continue
        v, b = (np.array([r["reachable"] for r in kinds[k]]) for k in (VARIANT, BASELINE))
        cv, cb = (np.mean([r["coverage_mean"] for r in kinds[k]]) for k in (VARIANT, BASELINE))
        table.append(
            {
                "n": n,
                "w": w,
                "layers": layer,
                VARIANT: float(v.mean()),
                BASELINE: float(b.mean()),
                "gap_mean": float(v.mean() - b.mean()),
                "gap_worst_vs_best": float(v.min() - b.max()),
                "coverage_gap_mean": float(cv - cb),
            }
        )
    if not table:
        return {"separation": [], "choice": None}
    best = max(table, key=lambda t: (round(t["gap_mean"], 12), -t["layers"], -t["n"]))
    return {"separation": table, "choice": best}


def main(argv=None) -> int:
    p = OneLineErrorParser(
        prog="python -m analysis.training.reach_grid",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--out",
        type=output_file("--out", parents=True, suffixes=(".json",)),
        default=DEFAULT_OUT,
        help=f"JSON file to write (default {DEFAULT_OUT})",
    )
    p.add_argument("--ns", type=int, nargs="+", default=list(DEFAULT_NS))
    p.add_argument("--ws", type=int, nargs="+", default=list(DEFAULT_WS))
    p.add_argument("--layers", type=int, nargs="+", default=list(DEFAULT_LAYERS))
    add_seeds_option(p, len(DEFAULT_SEEDS))
    p.add_argument("--kinds", nargs="+", default=list(GRID_KINDS))
    args = p.parse_args(argv)
    start = time.perf_counter()
    try:  # the grid is checked before anything is computed
        seeds = list(range(args.seed, args.seed + args.seeds))
        result = reach_grid(args.kinds, args.ns, args.ws, args.layers, seeds)
    except ValueError as exc:
        p.error(f"--{exc}")
    doc = {
        "command": "python -m analysis.training.reach_grid " + " ".join(argv if argv is not None else sys.argv[1:]),
        "task": "causal retrieval, readout n - 1, answer position uniform on 1..n-2",
        "seconds": round(time.perf_counter() - start, 1),
        **result,
    }
    path = write_atomic(args.out, json.dumps(doc, indent=1) + "\n", option="--out", mkdir=True)
    c = result["choice"]
    print(f"{'kind':17s} {'n':>5s} {'w':>3s} {'L':>2s} {'reach mean [min, max]':>24s} {'keys/q':>7s}")
    for e in result["aggregate"]:
        print(
            f"{e['kind']:17s} {e['n']:5d} {e['w']:3d} {e['layers']:2d} {e['reachable_mean']:8.3f} "
            f"[{e['reachable_min']:.3f}, {e['reachable_max']:.3f}] {e['keys_per_query_mean']:7.2f}"
        )
    if c is not None:
        print(
            f"largest gap {VARIANT} - {BASELINE}: n = {c['n']}, w = {c['w']}, L = {c['layers']}: "
            f"{c[VARIANT]:.3f} vs {c[BASELINE]:.3f} ({c['gap_mean']:+.3f}); written to {path}"
        )
    return 0


if __name__ == "__main__":
    run_command(main)
