"""``python -m receptive.coverage``: receptive-field coverage of SWA, SA and SA+SWA through depth."""

from __future__ import annotations

import argparse
import csv
import json
import sys

from graphs import DEFAULT_MAX_MEMORY, parse_bytes

from .. import __version__, theory
from ..cli_parser import OneLineErrorParser
from ..patterns import PATTERNS, make_pattern
from ..plotting import save_png_pdf
from ..windows import max_window
from .compute import DEFAULT_MAX_LAYERS, DEFAULT_TARGETS, coverage, exact_fits, extend
from .results import CoverageResult

DESCRIPTION = """\
After L layers of a sparse attention pattern, which tokens can each token see?

Attention through depth is a layered graph: layer l has an edge key j -> query i when i attends to j (every
pattern includes the query itself, the residual path). RF_L(i) is the set of positions with a path to i through
layers 1..L, and coverage of i is |RF_L(i)| / |A(i)|, A(i) = all positions (or j <= i when causal). For each layer
this prints the mean and minimum coverage and the share of fully covered positions, and L*, the first layer at
which every position sees all of A(i).

Patterns: swa (sliding window of w keys, self included), sa (Stochastic Attention: a fresh random permutation per
layer, the same window in permuted order; causal = that band AND original key position <= query position),
sa+swa (the union of both, as in gated SA+SWA), full. SWA and full are computed in closed form; SA and SA+SWA
exactly (every receptive field, bit-parallel) when n * n/64 <= 2^26 words (n <= 65536), otherwise for 1024 random
target positions, each exact (the mean gets a 95% confidence interval).
"""

EPILOG = """\
examples:
  python -m receptive.coverage --n 32768 --w 64
  python -m receptive.coverage --n 4096 --w 16 --causal --json
  python -m receptive.coverage --n 1048576 --w 64 --targets 1024 --csv cov.csv --plot cov.png
"""


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog="python -m receptive.coverage",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--n", type=int, default=32768, help="sequence length (>= 2; default 32768)")
    p.add_argument("--w", type=int, default=64, help="window: keys per query, itself included (default 64)")
    p.add_argument("--patterns", default="swa,sa,sa+swa", help=f"comma-separated, from {', '.join(PATTERNS)}")
    p.add_argument("--causal", action="store_true", help="causal attention (A(i) = positions j <= i)")
    p.add_argument("--circular", action="store_true", help="windows wrap around (the SA paper's theory)")
    p.add_argument("--layers", type=int, help="compute layers 1..LAYERS (default: until SA and SA+SWA are full)")
    p.add_argument(
        "--max-layers",
        type=int,
        default=DEFAULT_MAX_LAYERS,
        help=f"cap on layers when --layers is not given (default {DEFAULT_MAX_LAYERS})",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the permutations and of sampled targets")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--exact", action="store_true", help="every receptive field, whatever it costs")
    how.add_argument(
        "--targets",
        type=int,
        metavar="K",
        help=f"K random target positions, each exact (default when n is large: {DEFAULT_TARGETS})",
    )
    p.add_argument(
        "--max-memory",
        default="3GiB",
        help=f"memory budget of the engine, e.g. 512MiB (default {DEFAULT_MAX_MEMORY // 2**30}GiB)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--csv", metavar="PATH", help="also write one row per (pattern, layer) to PATH")
    p.add_argument("--plot", metavar="PATH", help="also plot coverage vs layer to PATH (.png and .pdf)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it shows only on a terminal)")
    return p


def run(args: argparse.Namespace) -> dict:
    """Validate, compute every pattern, return the JSON document (also used by tests and notebooks)."""
    if args.n < 2:
        raise ValueError(f"--n: expected an integer >= 2, got {args.n}")
    names = [s.strip() for s in args.patterns.split(",") if s.strip()]
    if not names or len(set(names)) != len(names):
        raise ValueError(f"--patterns: expected distinct names from {', '.join(PATTERNS)}, got {args.patterns!r}")
    if args.layers is not None and args.layers < 1:
        raise ValueError(f"--layers: expected an integer >= 1, got {args.layers}")
    if args.max_layers < 1:
        raise ValueError(f"--max-layers: expected an integer >= 1, got {args.max_layers}")
    if args.targets is not None and not 1 <= args.targets <= args.n:
        raise ValueError(f"--targets: expected an integer in [1, {args.n}], got {args.targets}")
    max_memory = parse_bytes(args.max_memory)
    patterns = {name: make_pattern(name, args.n, args.w, args.causal, args.circular, args.seed) for name in names}

    method = "exact" if args.exact else "sampled" if args.targets else "auto"
    progress = False if args.no_progress else None
    common = dict(max_layers=args.max_layers, max_memory=max_memory, seed=args.seed, progress=progress)
    simulated = [name for name, pat in patterns.items() if not pat.has_closed_form or args.exact]
    results: dict[str, CoverageResult] = {}
    for name in simulated:
        results[name] = coverage(patterns[name], args.layers, method=method, targets=args.targets, **common)
    if args.layers is not None:
        shown = args.layers
    elif simulated:
        shown = max(len(r.layers) for r in results.values())
    else:
        shown = min(args.max_layers, max(p.closed_form_full_layer() or args.max_layers for p in patterns.values()))
    for name, pat in patterns.items():
        if name not in results:
            results[name] = coverage(pat, shown, method="closed-form", **common)
        results[name] = extend(results[name], shown)

    sim_methods = {results[name].method for name in simulated}
    return {
        "version": __version__,
        "n": args.n,
        "w": args.w,
        "causal": args.causal,
        "circular": args.circular,
        "seed": args.seed,
        "method": sim_methods.pop() if len(sim_methods) == 1 else ("closed-form" if not simulated else "mixed"),
        "exact_by_default": exact_fits(args.n),
        "patterns": {name: results[name].to_dict() for name in names},
        "theory": theory_summary(args.n, args.w, args.causal, args.circular),
    }


def theory_summary(n: int, w: int, causal: bool, circular: bool) -> dict:
    """The predictions printed next to the measurements (see receptive.theory and docs/theory.md)."""
    sharp = {name: theory.predict_full_layer(name, n, w, causal, circular, 64)[0] for name in ("sa", "sa+swa")}
    summary = {
        "log_w_n": theory.log_w_n(n, w),
        "n_over_w": theory.swa_layers_estimate(n, w),
        "swa_full_coverage_layer": theory.swa_full_layer(n, min(w, max_window(n, causal, circular)), causal, circular),
        "sa_full_coverage_layer_prediction": theory.sa_full_layer_estimate(n, w),
        "sa_prediction_formula": theory.SA_FORMULA + (" (bidirectional; causal needs more)" if causal else ""),
        "sharp_full_coverage_layer": sharp,
    }
    if causal:
        summary["causal_sa_median_full_coverage_layer"] = theory.causal_sa_full_layer_estimate(n, w, circular)
    return summary


def format_table(doc: dict) -> str:
    names = list(doc["patterns"])
    head = f"{'layer':>5} " + " ".join(f"{name + ' mean/min/full':>28}" for name in names)
    lines = [
        f"coverage of n={doc['n']} w={doc['w']} {'causal' if doc['causal'] else 'bidirectional'}"
        f"{' circular' if doc['circular'] else ''} seed={doc['seed']}",
        head,
    ]
    count = max(len(p["layers"]) for p in doc["patterns"].values())
    for k in range(count):
        cells = []
        for name in names:
            lc = doc["patterns"][name]["layers"][k]
            cells.append(f"{lc['mean']:>9.4f} {lc['min']:>9.4f} {lc['full_fraction']:>8.4f}")
        lines.append(f"{k + 1:>5} " + " ".join(cells))
    th = doc["theory"]
    lines.append("")
    lines.append("L* = first layer at which every position is fully covered:")
    for name in names:
        p = doc["patterns"][name]
        star = p["full_coverage_layer"]
        extra = f"  [{p['note']}]" if p.get("note") else ""
        lines.append(f"  {name:<8} L* = {star if star is not None else 'not reached':<12} ({p['method']}){extra}")
    lines.append(
        f"  log_w n = {th['log_w_n']:.2f};  SWA n/w = {th['n_over_w']:.1f} "
        f"(closed form {th['swa_full_coverage_layer']})"
    )
    lines.append(f"  SA prediction {th['sa_full_coverage_layer_prediction']}: {th['sa_prediction_formula']}")
    sharp = ", ".join(f"{k} {'> 64' if v is None else v}" for k, v in th["sharp_full_coverage_layer"].items())
    lines.append(f"  sharp model (receptive.theory.predict_full_layer): {sharp}")
    if "causal_sa_median_full_coverage_layer" in th:
        lines.append(
            f"  pure causal SA needs every edge i-1 -> i: median L* ~ {th['causal_sa_median_full_coverage_layer']:.0f}"
        )
    return "\n".join(lines)


def write_csv(doc: dict, path: str) -> None:
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["pattern", "method", "layer", "mean", "min", "full_fraction", "mean_ci_low", "mean_ci_high"])
        for name, p in doc["patterns"].items():
            for lc in p["layers"]:
                ci = lc.get("mean_ci") or ["", ""]
                out.writerow([name, p["method"], lc["layer"], lc["mean"], lc["min"], lc["full_fraction"], *ci])


def plot(doc: dict, path: str) -> list[str]:
    """Mean (solid) and minimum (dashed) coverage vs layer; saved as PNG and PDF next to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2), constrained_layout=True)
    for name, p in doc["patterns"].items():
        x = [lc["layer"] for lc in p["layers"]]
        (line,) = ax.plot(x, [lc["mean"] for lc in p["layers"]], marker="o", ms=3, label=f"{name} mean")
        ax.plot(x, [lc["min"] for lc in p["layers"]], ls="--", color=line.get_color(), label=f"{name} min")
    ax.set_xlabel("layer L")
    ax.set_ylabel("coverage |RF_L(i)| / |A(i)|")
    ax.set_ylim(-0.02, 1.02)
    mode = "causal" if doc["causal"] else "bidirectional"
    ax.set_title(f"n = {doc['n']}, w = {doc['w']}, {mode}", fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="center right")
    return save_png_pdf(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        doc = run(args)
    except (ValueError, MemoryError) as exc:
        parser.error(str(exc))
    if args.json:
        json.dump(doc, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_table(doc))
    if args.csv:
        write_csv(doc, args.csv)
    if args.plot:
        written = plot(doc, args.plot)
        if not args.json:
            print("plot: " + ", ".join(written))
    return 0
