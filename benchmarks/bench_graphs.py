"""Time path lengths and clustering on the calibrated 128k-neuron connectome model, and compare in the same run
with networkx, scipy.sparse.csgraph (and igraph / NetworKit when they are installed) on a graph size where those
finish, extrapolating their time to the full graph.

    python benchmarks/bench_graphs.py [--quick] [--json PATH]

Floors: one BFS round over all sources touches ``(m + n) * n / 64`` words; the exact directed average path length
of the 128k model needs about 13 rounds of ``2.7e6 * 2000`` words each (about 7e10 words, 560 GB of reads).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np
from scipy.sparse.csgraph import shortest_path

import receptive
from graphs.clustering import average_clustering
from graphs.paths import giant_component, path_lengths
from graphs.smallworld import connectome_model


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a 20k-node model instead of FlyWire's size")
    ap.add_argument("--json", default="benchmarks/results/graphs.json", help="where to write the results")
    args = ap.parse_args(argv)
    n_full = 20_000 if args.quick else 127_978
    n_small = 2_000 if args.quick else 4_000
    rows = []

    def row(name, seconds, note=""):
        rows.append({"benchmark": name, "seconds": seconds, "note": note})
        print(f"{name:<64} {seconds:>9.2f} s  {note}", flush=True)

    print(f"{'benchmark':<64} {'time':>11}  note")
    t_build, full = timed(lambda: connectome_model(n_full, seed=0))
    row(f"build the connectome model (n={n_full}, {full.edges} edges)", t_build)
    average_clustering(connectome_model(2000, seed=0))  # numba compilation outside the timings
    path_lengths(connectome_model(2000, seed=0), sources=8)
    t_c, c = timed(lambda: average_clustering(full.undirected()))
    row("exact average clustering (undirected), ours", t_c, f"C = {c:.4f}; target < 10 s")
    t_s, sampled = timed(lambda: path_lengths(full, sources=2500, seed=0))
    half = (sampled.ci[1] - sampled.ci[0]) / 2
    row("sampled directed L, 2500 sources, ours", t_s, f"L = {sampled.mean:.4f} +- {half:.4f}; target < 10 s, < 0.01")
    t_e, exact = timed(lambda: path_lengths(full))
    row("exact directed L (giant SCC, all sources), ours", t_e, f"L = {exact.mean:.4f}; target < 180 s")

    small = connectome_model(n_small, seed=0)
    scale_paths = (full.n * (full.indices.size + full.n)) / (small.n * (small.indices.size + small.n))
    scale_edges = full.indices.size / small.indices.size
    t_ours, ours = timed(lambda: path_lengths(small))
    row(f"exact directed L, n={n_small}, ours", t_ours, f"L = {ours.mean:.4f}")
    g_nx = small.to_networkx()
    giant = g_nx.subgraph(giant_component(small).tolist())
    t_nx, l_nx = timed(lambda: nx.average_shortest_path_length(giant))
    row(
        f"exact directed L, n={n_small}, networkx",
        t_nx,
        f"{t_nx / t_ours:.0f}x ours; extrapolated to n={n_full}: {t_nx * scale_paths / 3600:.1f} h",
    )
    assert math.isclose(l_nx, ours.mean), (l_nx, ours.mean)
    t_sp, dist = timed(lambda: shortest_path(small.to_scipy(), method="D", unweighted=True))
    reached = dist[np.ix_(giant_component(small), giant_component(small))]
    assert math.isclose(reached.sum() / (reached.size - reached.shape[0]), ours.mean)
    row(
        f"exact directed distances, n={n_small}, scipy.sparse.csgraph",
        t_sp,
        f"{t_sp / t_ours:.0f}x ours; extrapolated: {t_sp * scale_paths / 3600:.1f} h (and n^2 memory)",
    )
    t_cnx, c_nx = timed(lambda: nx.average_clustering(g_nx.to_undirected()))
    t_cours, c_ours = timed(lambda: average_clustering(small.undirected()))
    assert math.isclose(c_nx, c_ours), (c_nx, c_ours)
    row(
        f"average clustering, n={n_small}, networkx",
        t_cnx,
        f"{t_cnx / max(t_cours, 1e-9):.0f}x ours; extrapolated: {t_cnx * scale_edges:.0f} s",
    )
    try:
        import igraph as ig

        g_ig = ig.Graph(
            n=small.n,
            edges=np.column_stack([np.repeat(np.arange(small.n), small.out_degree), small.indices]).tolist(),
            directed=True,
        )
        t_ig, _ = timed(lambda: g_ig.average_path_length(directed=True))
        row(
            f"average path length, n={n_small}, igraph",
            t_ig,
            f"{t_ig / t_ours:.1f}x ours; extrapolated: {t_ig * scale_paths / 60:.0f} min (over all reachable pairs)",
        )
    except ImportError:
        row("igraph", 0.0, "not installed")
    try:
        import networkit as nk

        g_nk = nk.graph.Graph(small.n, directed=True)
        for u, v in zip(np.repeat(np.arange(small.n), small.out_degree).tolist(), small.indices.tolist(), strict=True):
            g_nk.addEdge(u, v)
        t_nk, _ = timed(lambda: nk.distance.APSP(g_nk).run())
        row(
            f"APSP, n={n_small}, NetworKit",
            t_nk,
            f"{t_nk / t_ours:.1f}x ours; extrapolated: {t_nk * scale_paths / 60:.0f} min, needs n^2 memory",
        )
    except ImportError:
        row("NetworKit", 0.0, "not installed")
    out = {
        "version": receptive.__version__,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "n": n_full,
        "edges": full.edges,
        "rows": rows,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
