"""Time the graph measures on the 128k-neuron connectome model and loading a FlyWire-size edge list, next to the
best peers installed, measured in the same run (igraph, NetworKit, networkx, scipy, pandas, pyarrow: the ``bench``
extra installs igraph, pandas and pyarrow).

    python benchmarks/bench_graphs.py [--quick] [--repeats R] [--rows R] [--no-exact] [--json PATH] [--only-load]

Each row prints ours, the best peer, and ``ours / peer`` (below 1: we are faster). Ours and the peer run
alternately, ``--repeats`` times each, and the fastest run of each is kept (this machine is shared: the load
average is recorded next to the numbers). Peers that do not finish at full size are timed on part of the work
and extrapolated, which the row says.

The edge-list rows (``--only-load`` measures them alone and puts them in the ``--json`` file in place of the old
ones) time ``load_edge_list`` (read, sum ``syn_count`` per ordered pair, threshold 5, CSR) against the
usual peer, pandas' ``read_csv`` of the whole table (a parse, no graph), against pandas doing the same work, and against
a floor: map the file and count its line ends (one numba thread, every byte read once); then ours on one numba
thread. By default the loader runs its parallel twins only when a core is idle (``graphs.csv_reader.idle_cores``:
1-minute load average + 1 <= cores); the JSON records whether that held at the end of the run.

Floors: one BFS round over all sources touches ``(m + n) * n / 64`` words; the exact directed average path length
of the 128k model needs about 13 rounds of ``2.7e6 * 2000`` words each (about 7e10 words, 560 GB of reads).
Triangle counting by the forward algorithm tests ``sum_{u -> v} d+(v)`` (3.1e7 on the 128k model) candidates.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import networkx as nx
import numba
import numpy as np
from scipy.sparse.csgraph import shortest_path

import receptive
from graphs.cli_common import OneLineErrorParser, output_file, run_command, write_atomic
from graphs.clustering_measures import average_clustering
from graphs.io import load_edge_list
from graphs.paths import giant_component, path_lengths
from graphs.smallworld import connectome_model


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def best_of(repeats: int, *fns):
    """Run the functions alternately ``repeats`` times; the fastest time of each and its last value."""
    times = [math.inf] * len(fns)
    values = [None] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            seconds, values[i] = timed(fn)
            times[i] = min(times[i], seconds)
    return times, values


def igraph_of(graph, directed: bool):
    import igraph as ig

    rows = np.repeat(np.arange(graph.n), graph.out_degree)
    keep = slice(None) if directed else rows < graph.indices
    return ig.Graph(n=graph.n, edges=np.column_stack([rows[keep], graph.indices[keep]]), directed=directed)


def flywire_like_csv(path: Path, rows: int, seed: int = 0) -> None:
    """A table shaped like FlyWire's connections: 64-bit root ids, a neuropil, syn_count, nt_type; about 15% of
    the rows repeat a pair in another neuropil (so rows must be summed before the threshold)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    neurons = max(rows // 21, 10)
    ids = 720575940600000000 + rng.choice(10**9, neurons, replace=False).astype(np.int64)
    pre = rng.integers(0, neurons, rows)
    post = (pre + rng.integers(1, neurons, rows)) % neurons
    repeat = rng.random(rows) < 0.15
    pre[1:][repeat[1:]], post[1:][repeat[1:]] = pre[:-1][repeat[1:]], post[:-1][repeat[1:]]
    frame = pd.DataFrame(
        {
            "pre_root_id": ids[pre],
            "post_root_id": ids[post],
            "neuropil": np.array(["AL_L", "AL_R", "MB_CA_L", "LO_R", "ME_L", "FB", "EB"])[rng.integers(0, 7, rows)],
            "syn_count": np.minimum(rng.geometric(0.15, rows), 999),
            "nt_type": np.array(["ACH", "GABA", "GLUT", "DA", "SER", "OCT"])[rng.integers(0, 6, rows)],
        }
    )
    frame.to_csv(path, index=False)


def timings(repeats: int, *fns):
    """Run the functions alternately ``repeats`` times; every time of each and the last value of each."""
    times = [[] for _ in fns]
    values = [None] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            seconds, values[i] = timed(fn)
            times[i].append(seconds)
    return times, values


def pandas_graph(path: Path, threshold: float):
    """The same work in pandas, as a pandas user writes it: read the three columns, sum ``syn_count`` per ordered
    pair, keep sums ``>= threshold`` and pairs that are not self-loops, number the neurons. Returns ``(neurons,
    edges)``."""
    import pandas as pd

    frame = pd.read_csv(path, usecols=["pre_root_id", "post_root_id", "syn_count"])
    sums = frame.groupby(["pre_root_id", "post_root_id"], sort=False)["syn_count"].sum()
    sums = sums[sums >= threshold]
    pre = sums.index.get_level_values(0).to_numpy()
    post = sums.index.get_level_values(1).to_numpy()
    keep = pre != post
    _, neurons = pd.factorize(np.column_stack([pre[keep], post[keep]]).ravel())
    return neurons.size, int(keep.sum())


def load_rows(repeats: int, table_rows: int, row) -> None:
    """The edge-list rows: ``load_edge_list`` (summed per pair, threshold 5) against pandas' and pyarrow's parse
    of the whole table (the usual peer), pandas doing the same work, and a floor (every byte read once); then
    ours on one numba thread against pandas' parse (one thread too). All run alternately; each row keeps the
    fastest run of each and records every time and the ratio of the medians."""
    if not has("pandas"):
        print("pandas not installed: no edge-list row (pip install receptive[bench])")
        return
    import pandas as pd

    from graphs.csv_reader import count_line_ends as floor

    def one_thread(path):
        threads = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            return load_edge_list(path, weight="syn_count", threshold=5)
        finally:
            numba.set_num_threads(threads)

    work = "load a FlyWire-size edge list (threshold 5)"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "connections.csv"
        flywire_like_csv(path, table_rows)
        size = path.stat().st_size
        load_edge_list(path, weight="syn_count", threshold=5)  # compilation and the page cache
        one_thread(path)
        peers = [("pandas read_csv (parse only)", lambda: pd.read_csv(path))]
        if has("pyarrow"):
            import pyarrow.csv as pacsv

            peers.append(("pyarrow read_csv (parse only)", lambda: pacsv.read_csv(path)))
        peers.append(("pandas: read, groupby sum, >= 5, factorize", lambda: pandas_graph(path, 5)))
        peers.append(("floor: map the file, count its line ends", lambda: floor(path)))
        fns = [
            lambda: load_edge_list(path, weight="syn_count", threshold=5),
            lambda: one_thread(path),
            *[fn for _, fn in peers],
        ]
        times, values = timings(repeats, *fns)
        graph = values[0][0]
        assert values[-2] == (graph.n, graph.edges), (values[-2], graph.n, graph.edges)  # pandas: the same graph
        assert np.array_equal(values[1][0].indices, graph.indices)
        what = f"{table_rows} rows ({size / 1e6:.0f} MB) -> {graph.n} neurons, {graph.edges} edges >= 5 synapses"
        pairs = [(work, times[0], peer, t) for (peer, _), t in zip(peers, times[2:], strict=True)]
        pairs.append((f"{work}, 1 numba thread", times[1], peers[0][0], times[2]))
        for name, ours, peer, peer_times in pairs:
            medians = {
                "ours_median_s": float(np.median(ours)),
                "peer_median_s": float(np.median(peer_times)),
                "ratio_of_medians": float(np.median(ours) / np.median(peer_times)),
                "ours_times_s": ours,
                "peer_times_s": peer_times,
            }
            note = f"median ratio {medians['ratio_of_medians']:.2f}"
            first = peer.startswith("pandas read") and "1 numba" not in name
            row(name, min(ours), peer, min(peer_times), f"{note}; {what}" if first else note, **medians)


def row_recorder(rows: list):
    """``row(work, ours, peer, peer_s, note, **extra)``: appends a result row (``ours_over_peer = ours / peer_s``) to
    ``rows`` and prints it as a table line."""

    def row(work, ours, peer="", peer_s=None, note="", **extra):
        ratio = ours / peer_s if peer_s else None
        rows.append(
            {"work": work, "ours_s": ours, "peer": peer, "peer_s": peer_s, "ours_over_peer": ratio, "note": note}
            | extra
        )
        shown = f"{peer_s:9.3f} s  {ratio:6.2f}" if peer_s else f"{'':>11}  {'':>6}"
        print(f"{work:<58} {ours:9.3f} s  {peer:<34} {shown}  {note}", flush=True)

    return row


def read_results(path: Path) -> dict:
    """The results file ``--only-load`` rewrites (``{"rows": []}`` where there is none yet): a JSON object whose
    ``rows`` each name their ``work``; else a ``ValueError`` naming ``--json``."""
    if not path.exists():
        return {"rows": []}
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or "not JSON"
        raise ValueError(f"--json: cannot read {path} to replace its edge-list rows ({reason})") from None
    rows = old.get("rows") if isinstance(old, dict) else None
    if not isinstance(rows, list) or any(not isinstance(r, dict) or not isinstance(r.get("work"), str) for r in rows):
        raise ValueError(f"--json: {path} is not a results file of this script (rows, each with its work)")
    return old


def only_load(args, table_rows: int, argv: list[str], old: dict) -> int:
    """Measure the edge-list rows alone and put them in place of the old ones of ``old`` (read from ``--json``)."""
    from graphs.csv_reader import idle_cores

    rows = []
    load_rows(args.repeats, table_rows, row_recorder(rows))
    kept = [r for r in old.get("rows", []) if not r["work"].startswith("load a FlyWire-size edge list")]
    old["rows"] = kept + rows
    old["load_rows"] = {
        "command": "python benchmarks/bench_graphs.py " + " ".join(argv),
        "repeats": args.repeats,
        "numba_threads": numba.get_num_threads(),
        "parallel_at_end": idle_cores(),  # graphs.csv_reader.idle_cores: the parallel twins run only with an idle core
        "load_average_1min_at_end": os.getloadavg()[0],
    }
    try:
        write_atomic(args.json, json.dumps(old, indent=1) + "\n", option="--json", mkdir=True)
    except ValueError as exc:
        raise SystemExit(f"--json: {exc}") from None
    print(f"wrote {args.json}")
    return 0


def clustering_against_igraph(und, repeats: int):
    """``((ours_s, igraph_s), C)``: average clustering (networkx convention: degree < 2 counts 0, igraph's
    ``mode="zero"``) by ours and igraph, alternating, fastest of ``repeats``; the two values asserted equal."""
    g = igraph_of(und, directed=False)
    times, (c, c_ig) = best_of(
        repeats, lambda: average_clustering(und), lambda: g.transitivity_avglocal_undirected(mode="zero")
    )
    assert math.isclose(c, c_ig, rel_tol=1e-9), (c, c_ig)
    return times, c


def main(argv=None) -> int:
    ap = OneLineErrorParser(
        prog="python benchmarks/bench_graphs.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help="a 20k-node model and a 300k-row table")
    ap.add_argument("--repeats", type=int, default=3, help="alternating runs of ours and the peer (default 3)")
    ap.add_argument("--rows", type=int, help="rows of the edge-list table (default 3,000,000; 300,000 with --quick)")
    ap.add_argument("--no-exact", action="store_true", help="skip the exact directed L at full size")
    ap.add_argument(
        "--json",
        type=output_file("--json", parents=True),
        help="write the results here (nothing is written without; the committed file is "
        "benchmarks/results/graphs.json)",
    )
    ap.add_argument(
        "--only-load",
        action="store_true",
        help="only the edge-list rows: replace them in the --json file, keep its other rows",
    )
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error(f"--repeats: expected an integer >= 1, got {args.repeats}")
    table_rows = args.rows if args.rows is not None else (300_000 if args.quick else 3_000_000)
    if table_rows < 100:
        ap.error(f"--rows: expected an integer >= 100, got {table_rows}")
    if args.only_load:
        if args.json is None:
            ap.error("--only-load: replaces the edge-list rows of a --json file; give --json")
        try:
            old = read_results(args.json)
        except ValueError as exc:
            ap.error(str(exc))
        return only_load(args, table_rows, list(argv if argv is not None else sys.argv[1:]), old)
    n_full = 20_000 if args.quick else 127_978
    n_small = 2_000 if args.quick else 4_000
    rows = []
    row = row_recorder(rows)
    print(f"{'work':<58} {'ours':>11}  {'best peer':<34} {'peer':>11}  {'ratio':>6}  note")
    t_build, full = timed(lambda: connectome_model(n_full, seed=0))
    row(f"build the connectome model (n={n_full}, {full.edges} edges)", t_build)
    warm = connectome_model(2000, seed=0)
    average_clustering(warm.undirected())  # numba compilation outside the timings
    path_lengths(warm, sources=8)

    # clustering, undirected, networkx convention (degree < 2 counts 0) = igraph mode="zero"
    und = full.undirected()
    if has("igraph"):
        (t_c, t_ig), c = clustering_against_igraph(und, args.repeats)
        row("average clustering, undirected", t_c, "igraph transitivity_avglocal", t_ig, f"C = {c:.4f} (both)")
        threads = numba.get_num_threads()
        numba.set_num_threads(1)  # the algorithms side by side: one thread each
        try:
            (t_c1, t_ig1), _ = clustering_against_igraph(und, args.repeats)
        finally:
            numba.set_num_threads(threads)
        row("average clustering, undirected, 1 thread", t_c1, "igraph transitivity_avglocal", t_ig1, "one thread each")
    else:
        t_c, c = timed(lambda: average_clustering(und))
        row("average clustering, undirected", t_c, note=f"C = {c:.4f}; igraph not installed")

    # path lengths
    t_s, sampled = timed(lambda: path_lengths(full, sources=2500, seed=0))
    half = (sampled.ci[1] - sampled.ci[0]) / 2
    row("directed L, 2500 sampled sources", t_s, note=f"L = {sampled.mean:.4f} +- {half:.4f}")
    peer, peer_s, note = "", None, ""
    if has("igraph"):
        g_dir = igraph_of(full, directed=True)
        sample = np.random.default_rng(0).choice(full.n, 16, replace=False).tolist()
        t_16, _ = timed(lambda: g_dir.distances(source=sample, mode="out"))
        peer, peer_s = "igraph distances, extrapolated", t_16 / 16 * full.n
        note = f"igraph {t_16 / 16 * 1e3:.0f} ms/source x {full.n} sources"
    if not args.no_exact:
        t_e, exact = timed(lambda: path_lengths(full))
        row("exact directed L (giant SCC, all sources)", t_e, peer, peer_s, f"L = {exact.mean:.4f}; {note}")

    small = connectome_model(n_small, seed=0)
    scale_paths = (full.n * (full.indices.size + full.n)) / (small.n * (small.indices.size + small.n))
    t_ours, ours = timed(lambda: path_lengths(small))
    g_nx = small.to_networkx()
    giant = g_nx.subgraph(giant_component(small).tolist())
    t_nx, l_nx = timed(lambda: nx.average_shortest_path_length(giant))
    assert math.isclose(l_nx, ours.mean), (l_nx, ours.mean)
    row(
        f"exact directed L, n={n_small}",
        t_ours,
        "networkx",
        t_nx,
        f"networkx extrapolated: {t_nx * scale_paths / 3600:.1f} h",
    )
    t_sp, dist = timed(lambda: shortest_path(small.to_scipy(), method="D", unweighted=True))
    reached = dist[np.ix_(giant_component(small), giant_component(small))]
    assert math.isclose(reached.sum() / (reached.size - reached.shape[0]), ours.mean)
    row(f"exact directed L, n={n_small}", t_ours, "scipy.sparse.csgraph", t_sp, "n^2 memory")
    if has("igraph"):
        g_small = igraph_of(small, directed=True)
        t_ig, _ = timed(lambda: g_small.average_path_length(directed=True))
        row(f"exact directed L, n={n_small}", t_ours, "igraph average_path_length", t_ig, "over all reachable pairs")
    if has("networkit"):
        import networkit as nk

        g_nk = nk.graph.Graph(small.n, directed=True)
        for u, v in zip(np.repeat(np.arange(small.n), small.out_degree).tolist(), small.indices.tolist(), strict=True):
            g_nk.addEdge(u, v)
        t_nk, _ = timed(lambda: nk.distance.APSP(g_nk).run())
        row(f"exact directed L, n={n_small}", t_ours, "NetworKit APSP", t_nk, "n^2 memory")
    small_und = small.undirected()
    t_cours, c_ours = timed(lambda: average_clustering(small_und))
    t_cnx, c_nx = timed(lambda: nx.average_clustering(g_nx.to_undirected()))
    assert math.isclose(c_nx, c_ours), (c_nx, c_ours)
    row(f"average clustering, n={n_small}", t_cours, "networkx", t_cnx)
    if has("igraph"):
        (t_cours, t_cig), _ = clustering_against_igraph(small_und, args.repeats)
        row(f"average clustering, n={n_small}", t_cours, "igraph transitivity_avglocal", t_cig, "best of repeats")

    # loading a FlyWire-size edge list: summed per pair, threshold 5
    load_rows(args.repeats, table_rows, row)

    out = {
        "version": receptive.__version__,
        "command": "python benchmarks/bench_graphs.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_1min_at_end": os.getloadavg()[0],
        },
        "n": n_full,
        "edges": full.edges,
        "repeats": args.repeats,
        "rows": rows,
    }
    if args.json is None:
        return 0
    try:
        write_atomic(args.json, json.dumps(out, indent=1) + "\n", option="--json", mkdir=True)
    except ValueError as exc:
        ap.error(str(exc))
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    run_command(main)
