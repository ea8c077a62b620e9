"""``python -m analysis.causal.interval_model``: the interval Monte Carlo model of causal SA+SWA
(:func:`receptive.theory.interval_point_model`) at every committed causal SA+SWA point, written to
a result file that the pooled evaluation (``python -m analysis.causal.pooled --sharp-model interval``) reads.

The Monte Carlo costs seconds to two minutes per point, so its probabilities are computed once, with a fixed seed,
and committed; the file records the command, the seed, the number of events and each point's cut (``cut``, and
``cut_wanted`` where ``--max-cost`` kept it shorter), and every point can be recomputed bit for bit
(``tests/analysis/test_pooled_causal.py`` does so at the cheap points). Where the simulation would cost more than
``--max-cost`` word operations even at the shortest cut (large w, where the near interval spans most of the sequence)
the point keeps the analytic model (:func:`receptive.theory.causal_failure_clumps`), marked ``"method": "analytic"``.

    python -m analysis.causal.interval_model --out analysis/causal/results/interval_model.json

With ``--points`` it predicts at those points instead, before any run exists (exact points while
``n * ceil(n/64) <= --exact-limit`` words, else ``--targets`` sampled targets, as ``python -m receptive.bound``
chooses), and records per point the predicted L* (the first layer with ``P(full) >= 1/2``) and the probability that
the typical L* of ``--seeds`` seeds equals it if the model is right: a prediction committed before its runs is a
hold-out test (``docs/theory.md`` Sec. 5, *The hold-out*).

    python -m analysis.causal.interval_model --points 2048:6,2048:12,2^19:96 --seeds 15 --out predictions.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from graphs.cli_common import run_command, write_atomic
from receptive import __version__, theory
from receptive.bound.analysis import calibrated_exact_probability
from receptive.bound.cli import parse_sizes
from receptive.cli_parser import OneLineErrorParser, output_file
from receptive.theory import interval_point_model
from receptive.theory.interval import EVALUATION_EVENTS, EVALUATION_MAX_COST, EVALUATION_SEED

from . import pooled

DEFAULT_OUT = pooled.DEFAULT_INTERVAL_FILE
EVENTS = EVALUATION_EVENTS
SEED = EVALUATION_SEED
MAX_COST = EVALUATION_MAX_COST


def parse_points(text: str, targets: int, exact_limit: int, max_layers: int) -> list[tuple[int, int, int | None, int]]:
    """``"2048:6,2^19:96"`` -> ``(n, w, targets, max_layers)`` per point, exact (``targets`` None) or sampled as
    ``python -m receptive.bound`` chooses."""
    points = []
    for part in text.split(","):
        n_text, sep, w_text = part.strip().partition(":")
        if not sep:
            raise ValueError(f"--points: expected comma-separated N:W pairs, got {part.strip()!r}")
        n, w = parse_sizes(n_text, "--points (n)")[0], parse_sizes(w_text, "--points (w)")[0]
        if not 2 <= w < n:
            raise ValueError(f"--points: expected 2 <= w < n, got n {n}, w {w}")
        points.append((n, w, None if n * math.ceil(n / 64) <= exact_limit else min(targets, n), max_layers))
    return sorted(set(points), key=lambda p: (p[0], p[1]))


def prediction(row: dict, seeds: int) -> dict:
    """The predicted L* of one point's row (``None``: ``P(full)`` stays below 1/2) and the calibrated probability
    that ``seeds`` seeds' typical L* equals it (:func:`receptive.bound.analysis.calibrated_exact_probability`)."""
    probs = row["full_probability"]
    return {
        "predicted": theory.median_layer(probs),
        "seeds": seeds,
        "exact_probability": calibrated_exact_probability(probs, seeds),
    }


def committed_points(dirs=pooled.DEFAULT_DIRS) -> list[tuple[int, int, int | None, int]]:
    """``(n, w, targets, max_layers)`` of every pooled causal SA+SWA point under ``dirs``."""
    seeds = pooled.pool_seeds(pooled.find_task_files(dirs))
    out = set()
    for (pattern, causal, circular, n, w, _method, targets), entry in seeds.items():
        if pattern == "sa+swa" and causal and not circular and entry["seeds"]:
            out.add((n, w, targets, min(v[1] for v in entry["seeds"].values())))
    return sorted(out, key=lambda p: (p[0], p[1], p[2] or 0))


def main(argv: list[str] | None = None) -> int:
    parser = OneLineErrorParser(
        prog="python -m analysis.causal.interval_model",
        description="\n\n".join(__doc__.split("\n\n")[:2]).replace("``", "").replace(":func:", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        options={"files": "dirs"},
    )
    default_dirs = " ".join(pooled.DEFAULT_DIRS)
    parser.add_argument("dirs", nargs="*", help=f"the committed runs (default: {default_dirs}; not with --points)")
    parser.add_argument(
        "--out",
        type=output_file("--out", suffixes=(".json",)),
        default=None,
        help=f"the JSON written (default {DEFAULT_OUT})",
    )
    parser.add_argument("--events", type=int, default=EVENTS, help=f"events sampled where N_L = 1 (default {EVENTS})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"the Monte Carlo's seed (default {SEED})")
    parser.add_argument("--max-cost", type=float, default=MAX_COST, help="word operations per point, at most")
    grid = parser.add_argument_group("predictions at new points (instead of the committed ones)")
    grid.add_argument("--points", help="N:W pairs, comma-separated, e.g. 2048:6,2^19:96")
    grid.add_argument("--targets", type=int, help="sampled targets beyond --exact-limit (default 1024)")
    grid.add_argument("--exact-limit", help="exact while n * ceil(n/64) <= this (default 2^26)")
    grid.add_argument("--max-layers", type=int, help="layers per prediction (default 64)")
    grid.add_argument("--seeds", type=int, help="seeds per point, for the exact probability (default 15)")
    args = parser.parse_args(argv)
    point_options = {"--targets": args.targets, "--exact-limit": args.exact_limit, "--max-layers": args.max_layers}
    point_options["--seeds"] = args.seeds
    if args.points is None:
        given = [name for name, value in point_options.items() if value is not None]
        if given:
            parser.error(f"{', '.join(given)}: only with --points (the committed points have their own)")
        args.dirs = args.dirs or list(pooled.DEFAULT_DIRS)
    elif args.dirs:
        parser.error("dirs: the committed runs are not read with --points; give one or the other")
    targets_given = args.targets is not None
    args.targets = 1024 if args.targets is None else args.targets
    args.exact_limit = "2^26" if args.exact_limit is None else args.exact_limit
    args.max_layers = 64 if args.max_layers is None else args.max_layers
    args.seeds = 15 if args.seeds is None else args.seeds
    if args.events < 1:
        parser.error(f"--events: expected an integer >= 1, got {args.events}")
    if args.seed < 0:
        parser.error(f"--seed: expected an integer >= 0, got {args.seed}")
    if not args.max_cost > 0:
        parser.error(f"--max-cost: expected a positive number of word operations, got {args.max_cost}")
    for name, value in (("--targets", args.targets), ("--max-layers", args.max_layers), ("--seeds", args.seeds)):
        if value < 1:
            parser.error(f"{name}: expected an integer >= 1, got {value}")
    try:
        if args.points is None:
            points = committed_points(args.dirs)
        else:
            exact_limit = parse_sizes(args.exact_limit, "--exact-limit")[0]
            points = parse_points(args.points, args.targets, exact_limit, args.max_layers)
            small = [n for n, _, targets, _ in points if targets is not None and n < args.targets]
            if targets_given and small:  # the default is clipped to n, as receptive.bound does; a value given is not
                raise ValueError(f"--targets: expected at most n = {min(small)} (a sampled point), got {args.targets}")
    except ValueError as exc:
        parser.error(str(exc))
    if args.out is None:  # the default is checked only when it is used
        try:
            args.out = output_file("--out", suffixes=(".json",))(str(DEFAULT_OUT))
        except argparse.ArgumentTypeError as exc:
            parser.error(f"--out: {exc}")
    rows = []
    for n, w, targets, layers in tqdm(points, desc="interval model", unit="point", disable=not sys.stderr.isatty()):
        rows.append(interval_point_model(n, w, layers, targets, args.events, args.seed, args.max_cost))
        r = rows[-1]
        if args.points is not None:
            r.update(prediction(r, args.seeds))
        shown = f" predicted L* {r['predicted']} (q {r['exact_probability']:.2f})" if args.points is not None else ""
        print(f"n={n:>8} w={w:>4} targets={targets} {r['method']:<8} {r['seconds']:>6.1f} s{shown}", flush=True)
    doc = {
        "command": "python -m analysis.causal.interval_model " + " ".join(argv if argv is not None else sys.argv[1:]),
        "version": __version__,
        "events": args.events,
        "seed": args.seed,
        "max_cost": args.max_cost,
        "points": rows,
    }
    if args.points is not None:
        q = np.array([r["exact_probability"] for r in rows])
        doc["expected_exact"] = {"mean": float(q.sum()), "sd": float(np.sqrt((q * (1 - q)).sum()))}
    write_atomic(Path(args.out), json.dumps(doc, indent=1) + "\n", option="--out")
    print(f"wrote {args.out}: {len(rows)} points")
    if args.points is not None:
        e = doc["expected_exact"]
        print(f"a calibrated model is exact at {e['mean']:.1f} of {len(rows)} points (sd {e['sd']:.1f})")
    return 0


if __name__ == "__main__":
    run_command(main)
