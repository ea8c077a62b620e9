"""Time the coverage engine and compare it, in the same run, with what a researcher would write instead.

    python benchmarks/bench_coverage.py [--quick] [--json PATH]

Rows: the default CLI run end to end (a fresh process, warm numba cache), exact SA coverage per layer at
n = 65536, 1024 sampled targets at n = 2^20, and exact SA coverage to full coverage next to scipy.sparse boolean
matrix products (RF_L = A_L RF_{L-1}) and networkx ancestors on the layered graph, at sizes where those still fit;
then one exact layer of each zoo pattern (window + global, dilated window, chunked, BigBird, random keys, sinks)
as a ratio to an exact SA layer timed in the same run.
Each row also states the floor: the 64-bit words one layer must at least read (n * ceil(S/64) per slab pass).
Times are the best of a few repeats; ratios compare timings taken in this same run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import networkx as nx
import numpy as np
import scipy.sparse as sp

import receptive
from graphs.cli_common import OneLineErrorParser, output_file, run_command, write_atomic
from receptive import coverage_by_layer, make_pattern
from receptive.patterns.registry import pattern_from_spec, stack_from_spec

DEFAULT_JSON, DEFAULT_ZOO_JSON = "benchmarks/results/coverage.json", "benchmarks/results/coverage_zoo.json"


def best_of(fn, repeats: int, warm: bool = True) -> float:
    if warm:
        fn()  # numba cache load, page faults of the first allocation
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def cli_seconds(repeats: int) -> float:
    cmd = [sys.executable, "-m", "receptive.coverage", "--n", "32768", "--w", "64", "--no-progress"]
    subprocess.run(cmd, check=True, capture_output=True)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def scipy_sizes(pattern, layers: int) -> np.ndarray:
    """The obvious alternative: boolean sparse products R_L = A_L R_{L-1}, R_0 = I, row sums = |RF_L(i)|."""
    r = sp.eye_array(pattern.n, dtype=bool, format="csr")
    sizes = []
    for layer in range(1, layers + 1):
        r = (pattern.adjacency(layer) @ r).astype(bool)
        sizes.append(np.asarray(r.sum(axis=1)).ravel())
    return np.array(sizes)


def networkx_sizes(pattern, layers: int) -> np.ndarray:
    """The other obvious alternative: a layered DiGraph and nx.ancestors of every (L, i)."""
    n = pattern.n
    g = nx.DiGraph()
    sizes = []
    for layer in range(1, layers + 1):
        q, k = pattern.adjacency(layer).nonzero()
        g.add_edges_from(zip(((layer - 1) * n + k).tolist(), (layer * n + q).tolist(), strict=True))
        sizes.append([sum(1 for a in nx.ancestors(g, layer * n + i) if a < n) for i in range(n)])
    return np.array(sizes)


#: one exact layer of each zoo pattern (all n sources) against an exact SA layer timed in the same run
ZOO = ["global:{w}:8", "dilated-window:{w}:4", "chunk:8192", "bigbird:64:3:3:2", "random:{w}", "sink:{w}:4"]


def zoo_rows(n: int, w: int, repeats: int, row) -> None:
    """Per-layer time of exact coverage (every source) for the zoo's patterns, as a ratio to SA's per-layer time
    measured here; a full layer inside a stack (``swa,full``) completes every field at once."""
    sa = make_pattern("sa", n, w, seed=0)
    t_sa = best_of(lambda: coverage_by_layer(sa, 2, method="exact"), repeats) / 2
    row(f"zoo: exact SA layer (n={n}, w={w}), the reference", t_sa, "", n * (n // 64))
    for spec in ZOO:
        spec = spec.format(w=w)
        pattern = pattern_from_spec(spec, n, seed=0)
        per_layer = best_of(lambda pattern=pattern: coverage_by_layer(pattern, 2, method="exact"), repeats) / 2
        row(f"zoo: exact {spec} layer (n={n})", per_layer, f"{per_layer / t_sa:.2f}x SA's layer", n * (n // 64))
    stack = stack_from_spec("swa:64,full", n, 2, causal=True)
    both = best_of(lambda: coverage_by_layer(stack, 2, method="exact"), repeats)
    full_at = coverage_by_layer(stack, 2, method="exact").full_coverage_layer
    row(f"zoo: exact swa:64 + full stack, 2 layers (n={n})", both, f"L*={full_at}; {both / t_sa:.2f}x SA's layer")


def main(argv=None) -> int:
    ap = OneLineErrorParser(
        prog="python benchmarks/bench_coverage.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help="smaller sizes, one repeat (a smoke run)")
    ap.add_argument(
        "--json",
        type=output_file("--json", parents=True),
        default=None,
        help=f"where to write the results (default {DEFAULT_JSON}; --zoo-only: {DEFAULT_ZOO_JSON})",
    )
    ap.add_argument("--zoo-only", action="store_true", help="only the zoo rows (default JSON coverage_zoo.json)")
    args = ap.parse_args(argv)
    if args.json is None:
        try:
            args.json = output_file("--json", parents=True)(DEFAULT_ZOO_JSON if args.zoo_only else DEFAULT_JSON)
        except argparse.ArgumentTypeError as exc:
            ap.error(f"--json: {exc}")
    repeats = 1 if args.quick else 3
    big_n = 2**14 if args.quick else 2**16
    huge_n = 2**16 if args.quick else 2**20
    cmp_n = 1024 if args.quick else 4096
    nx_n = 256 if args.quick else 512
    w = 64
    rows = []

    def row(name, seconds, note="", floor_words=None):
        rows.append({"benchmark": name, "seconds": seconds, "note": note, "floor_words": floor_words})
        floor = f"{floor_words:.2e} words" if floor_words else ""
        print(f"{name:<52} {seconds:>9.3f} s  {floor:>16}  {note}", flush=True)

    print(f"{'benchmark':<52} {'time':>11}  {'floor/layer':>16}  note")
    if args.zoo_only:
        zoo_rows(big_n, w, repeats, row)
        return write(args, rows)
    if not args.quick:
        row("CLI default run (n=32768, w=64, fresh process)", cli_seconds(repeats), "target < 2 s")

    sa = make_pattern("sa", big_n, w, seed=0)
    per_layer = best_of(lambda: coverage_by_layer(sa, 4, method="exact"), repeats) / 4
    row(f"exact SA coverage per layer (n={big_n}, w={w})", per_layer, "target < 1 s at n=65536", big_n * (big_n // 64))

    for name in ("sa", "sa+swa"):
        pat = make_pattern(name, huge_n, w, seed=0)
        secs = best_of(lambda pat=pat: coverage_by_layer(pat, method="sampled", targets=1024), repeats)
        res = coverage_by_layer(pat, method="sampled", targets=1024)
        row(
            f"{name} 1024 sampled targets to full (n={huge_n})",
            secs,
            f"L*={res.full_coverage_layer}; target < 10 s at n=2^20",
            huge_n * 16,
        )

    cmp = make_pattern("sa", cmp_n, w, seed=0)
    engine = coverage_by_layer(cmp, method="exact")
    layers = engine.full_coverage_layer
    t_engine = best_of(lambda: coverage_by_layer(cmp, layers, method="exact"), repeats)
    t_scipy = best_of(lambda: scipy_sizes(cmp, layers), 1, warm=False)
    assert np.array_equal(scipy_sizes(cmp, layers), engine.sizes), "scipy and the engine disagree"
    row(f"exact SA to full, engine (n={cmp_n}, {layers} layers)", t_engine)
    row(f"exact SA to full, scipy.sparse bool products (n={cmp_n})", t_scipy, f"{t_scipy / t_engine:.0f}x slower")
    small = make_pattern("sa", nx_n, w, seed=0)
    small_layers = coverage_by_layer(small, method="exact").full_coverage_layer
    t_small = best_of(lambda: coverage_by_layer(small, small_layers, method="exact"), repeats)
    t_nx = best_of(lambda: networkx_sizes(small, small_layers), 1, warm=False)
    row(f"exact SA to full, engine (n={nx_n}, {small_layers} layers)", t_small)
    row(f"exact SA to full, networkx ancestors (n={nx_n})", t_nx, f"{t_nx / t_small:.0f}x slower")

    zoo_rows(big_n, w, repeats, row)
    return write(args, rows)


def write(args, rows) -> int:
    out = {
        "version": receptive.__version__,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "processor": platform.processor()},
        "quick": args.quick,
        "command": "python benchmarks/bench_coverage.py" + (" --zoo-only" if args.zoo_only else ""),
        "rows": rows,
    }
    write_atomic(args.json, json.dumps(out, indent=1) + "\n", option="--json", mkdir=True)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    run_command(main)
