"""The interval Monte Carlo model of causal SA+SWA against the engine's own failure counts, beside the analytic model.

Reads the engine's measurements in ``analysis/causal/results/causal_clumps.json``
(``python -m analysis.causal.causal_clumps``: every pair exact, 45 seeds per exact point; 3 seeds x 8192 stratified
targets at n = 2^18, w = 16) and ``analysis/causal/results/causal_clumps_far.json`` (10 seeds x 8192 targets at
n = 2^20, w = 256), and writes per row:

- exact points: the share of seeds full after the layer against ``P(full after L)`` of the interval model
  (:func:`receptive.theory.causal_interval_clumps` with the pooled evaluation's 64 layers and cost
  limit: with the default events and seed, the committed ``analysis/causal/results/interval_model.json``) and of the
  analytic model (:func:`receptive.theory.causal_full_probability`);
- sampled points: the mean number of failing targets (a missed key) per seed against each model's expected number of
  failing events for the same ``K`` targets (the interval model with ``events x 1024 / K`` events and 64 layers: the
  strips, and so the cut that ``max_cost`` allows, of the committed 1024-target runs), with the interval model's cut
  and the part of its count that the profile model adds beyond the cut;
- the gap rule of exact runs: the interval model's event count at the deciding layers of three exact points with the
  declumping gap ``g`` = 8, 32 (the model's) and 96 keys.

    python -m analysis.causal.causal_interval_check --out analysis/causal/results/causal_interval_check.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from graphs.cli_common import OneLineErrorParser, output_file, run_command, write_atomic
from receptive import theory
from receptive.theory import causal_interval_clumps
from receptive.theory.interval import EVALUATION_MAX_COST as MAX_COST

ROOT = Path(__file__).resolve().parents[2]
GAPS = (8, 32, 96)
#: targets and layers of the committed runs (``analysis/causal/results``)
POOLED_TARGETS, POOLED_LAYERS = 1024, 64
SOURCES = ("analysis/causal/results/causal_clumps.json", "analysis/causal/results/causal_clumps_far.json")


#: the entries of a file of ``python -m analysis.causal.causal_clumps`` this check reads, each a number
ENTRY_KEYS = {
    "rows": ("n", "w", "layer", "full_share"),
    "sampled_rows": ("n", "w", "layer", "targets", "mean_failing_targets"),
}


def read_source(source: str) -> dict:
    """The document of ``python -m analysis.causal.causal_clumps`` at ``source`` (relative to the checkout root, or
    absolute), every entry this check reads present and in range; else a ``ValueError`` naming ``sources``."""
    try:
        doc = json.loads((ROOT / source).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not JSON"
        raise ValueError(f"sources: cannot read {source!r} ({reason})") from None
    if not isinstance(doc, dict) or not any(key in doc for key in ENTRY_KEYS):
        raise ValueError(f"sources: {source!r} is no file of python -m analysis.causal.causal_clumps (no rows)")
    for key, needed in ENTRY_KEYS.items():
        entries = doc.get(key, [])
        for i, r in enumerate(entries if isinstance(entries, list) else [None]):
            numbers = isinstance(r, dict) and all(
                isinstance(r.get(k), int | float) and not isinstance(r.get(k), bool) for k in needed
            )
            ints = numbers and all(isinstance(r[k], int) for k in ("n", "w", "layer"))
            if (
                not ints
                or not (2 <= r["w"] <= r["n"] and 1 <= r["layer"] <= POOLED_LAYERS)
                or (key == "sampled_rows" and not (isinstance(r["targets"], int) and 1 <= r["targets"] <= r["n"]))
            ):
                raise ValueError(
                    f"sources: {source!r}: {key}[{i}] is not a row of causal_clumps "
                    f"(integers n, w, layer with 2 <= w <= n, 1 <= layer <= {POOLED_LAYERS}, and "
                    f"{', '.join(needed[3:])})"
                )
    return doc


def rows(events: int, seed: int, sources=SOURCES) -> list[dict]:
    """Per row of the engine's measurements in ``sources`` (paths relative to the checkout root, or absolute): the
    engine's count next to the interval and analytic models' (see the module docstring)."""
    out = []
    for source in sources:
        doc = read_source(source)
        for r in doc.get("rows", []):
            n, w, layer = r["n"], r["w"], r["layer"]
            interval = causal_interval_clumps(n, w, POOLED_LAYERS, events=events, seed=seed, max_cost=MAX_COST)[
                "full_probability"
            ]
            analytic = theory.causal_full_probability(n, w, layer)
            out.append(
                {"source": source, "kind": "exact", "n": n, "w": w, "layer": layer, "seeds": len(r.get("seeds", []))}
                | {"engine_full_share": r["full_share"], "interval_full_probability": float(interval[layer - 1])}
                | {"analytic_full_probability": float(analytic[layer - 1])}
            )
        for r in doc.get("sampled_rows", []):
            n, w, layer, k = r["n"], r["w"], r["layer"], r["targets"]
            # the strips and layers of the committed runs (POOLED_TARGETS targets, POOLED_LAYERS layers), so that the
            # model is the pooled evaluation's, scaled to K targets
            scaled = max(1, round(events * POOLED_TARGETS / k))
            res = causal_interval_clumps(n, w, POOLED_LAYERS, targets=k, events=scaled, seed=seed, max_cost=MAX_COST)
            analytic = theory.causal_failure_clumps(n, w, layer, targets=k)
            out.append(
                {"source": source, "kind": "sampled", "n": n, "w": w, "layer": layer, "targets": k}
                | {"engine_failing_targets": r["mean_failing_targets"]}
                | {"interval_failing_targets": float(res["clumps"][layer - 1])}
                | {"interval_far_part": float(res["far"][layer - 1]), "interval_cut": res["cut"]}
                | {"analytic_clumps": float(analytic[layer - 1])}
            )
    return out


GAP_POINTS = ((8192, 4, 26), (8192, 16, 6), (32768, 4, 43))


def gap_rows(events: int, seed: int, points=GAP_POINTS) -> list[dict]:
    """The interval model's event count at ``points`` ``(n, w, layer)`` with each declumping gap of ``GAPS``."""
    out = []
    for n, w, layer in points:
        counts = {g: causal_interval_clumps(n, w, layer + 2, events=events, gap=g, seed=seed)["clumps"] for g in GAPS}
        out.append({"n": n, "w": w, "layer": layer} | {f"events_gap_{g}": float(counts[g][layer - 1]) for g in GAPS})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = OneLineErrorParser(
        prog="python -m analysis.causal.causal_interval_check",
        description=__doc__,
        options={"events": "--events", "seed": "--seed"},
    )
    parser.add_argument("--events", type=int, default=300, help="the interval model's events (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="the interval model's seed (default 0)")
    parser.add_argument("--out", type=output_file("--out", suffixes=(".json",)), help="write the JSON here")
    parser.add_argument(
        "--sources",
        default=",".join(SOURCES),
        help="comma-separated files of python -m analysis.causal.causal_clumps (default: %(default)s)",
    )
    parser.add_argument(
        "--gap-points",
        default=",".join(f"{n}:{w}:{layer}" for n, w, layer in GAP_POINTS),
        help="comma-separated n:w:L where the gap rule is checked (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    if args.events < 1:
        parser.error(f"--events: expected an integer >= 1, got {args.events}")
    if args.seed < 0:
        parser.error(f"--seed: expected an integer >= 0, got {args.seed}")
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    missing = [s for s in sources if not (ROOT / s).is_file()]
    if missing or not sources:
        parser.error(f"--sources: expected existing files, got {args.sources!r}")
    try:
        for source in sources:
            read_source(source)
    except ValueError as exc:
        parser.error(f"--{exc}")
    try:
        gap_points = [tuple(int(x) for x in p.split(":")) for p in args.gap_points.split(",") if p.strip()]
    except ValueError:
        gap_points = [()]
    if any(len(p) != 3 or not (2 <= p[1] < p[0] and p[2] >= 1) for p in gap_points):
        parser.error(f"--gap-points: expected n:w:L, comma-separated, 2 <= w < n, L >= 1, got {args.gap_points!r}")
    try:
        table = rows(args.events, args.seed, sources)
    except ValueError as exc:  # the models' own checks of events and seed
        parser.error(str(exc))
    print(f"{'kind':<8} {'n':>8} {'w':>4} {'L':>3}  {'engine':>8} {'interval':>9} {'analytic':>9}")
    for r in table:
        if r["kind"] == "exact":
            vals = r["engine_full_share"], r["interval_full_probability"], r["analytic_full_probability"]
        else:
            vals = r["engine_failing_targets"], r["interval_failing_targets"], r["analytic_clumps"]
        print(f"{r['kind']:<8} {r['n']:>8} {r['w']:>4} {r['layer']:>3}  " + " ".join(f"{v:>9.3f}" for v in vals))
    try:
        gaps = gap_rows(args.events, args.seed, gap_points)
    except ValueError as exc:
        parser.error(str(exc))
    for r in gaps:
        print(
            f"gap      {r['n']:>8} {r['w']:>4} {r['layer']:>3}  "
            + " ".join(f"g={g}: {r[f'events_gap_{g}']:.3f}" for g in GAPS)
        )
    if args.out:
        doc = {
            "command": "python -m analysis.causal.causal_interval_check "
            + " ".join(argv if argv is not None else sys.argv[1:])
        }
        doc |= {"events": args.events, "seed": args.seed, "sources": sources, "rows": table, "gaps": gaps}
        write_atomic(args.out, json.dumps(doc, indent=1) + "\n", option="--out")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    run_command(main)
