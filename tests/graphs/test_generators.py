"""Reference random graphs and the edge-list / GraphML loaders."""

import gzip
import math

import networkx as nx
import numpy as np
import pytest

from graphs.generators import erdos_renyi, ring_lattice, watts_strogatz
from graphs.graph import Graph
from graphs.io import from_networkx, load_edge_list, load_graphml


def edge_set(graph: Graph) -> set[tuple[int, int]]:
    rows = np.repeat(np.arange(graph.n), graph.out_degree)
    return set(zip(rows.tolist(), graph.indices.tolist(), strict=True))


def assert_valid_csr(graph: Graph) -> None:
    rows = np.repeat(np.arange(graph.n), graph.out_degree)
    assert graph.indptr[0] == 0 and graph.indptr[-1] == graph.indices.size
    assert np.all(rows != graph.indices), "self-loop"
    for u in range(min(graph.n, 200)):
        nb = graph.indices[graph.indptr[u] : graph.indptr[u + 1]]
        assert np.all(np.diff(nb) > 0), "unsorted or duplicate neighbours"
    if not graph.directed:
        assert edge_set(graph) == {(v, u) for u, v in edge_set(graph)}


# --- Erdos-Renyi ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("directed", [False, True])
def test_erdos_renyi_degree_and_edge_count(directed):
    """n = 20000, <k> = 10: M ~ Binomial(N, p); the mean degree and the edge count lie within 5 standard deviations
    of their expectations (<k> and pN), and the degree variance within 5% of the binomial (n-1)p(1-p)."""
    n, k = 20000, 10.0
    g = erdos_renyi(n, k, directed=directed, seed=7)
    assert g.n == n and g.directed == directed
    p = k / (n - 1)
    pairs = n * (n - 1) // (1 if directed else 2)
    sd_edges = math.sqrt(pairs * p * (1 - p))
    assert abs(g.edges - pairs * p) < 5 * sd_edges
    sd_mean = sd_edges * (1 if directed else 2) / n
    assert abs(g.mean_degree - k) < 5 * sd_mean  # ~0.15 undirected, ~0.11 directed
    assert g.mean_degree == pytest.approx(g.edges * (1 if directed else 2) / n)
    assert np.var(g.out_degree) == pytest.approx((n - 1) * p * (1 - p), rel=0.05)
    if directed:  # in-degrees are binomial too
        assert np.var(g.reverse().out_degree) == pytest.approx((n - 1) * p * (1 - p), rel=0.05)
    assert_valid_csr(g)


def test_erdos_renyi_small_cases_and_seeding():
    a, b = erdos_renyi(500, 6, seed=3), erdos_renyi(500, 6, seed=3)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert not np.array_equal(a.indices, erdos_renyi(500, 6, seed=4).indices)
    assert erdos_renyi(1, 0).edges == 0
    assert erdos_renyi(50, 0).edges == 0
    assert erdos_renyi(30, 29).edges == 30 * 29 // 2  # p = 1: complete graph
    assert erdos_renyi(30, 29, directed=True).edges == 30 * 29
    dense = erdos_renyi(40, 35, seed=1)  # dense branch (non-edges drawn)
    assert_valid_csr(dense)
    assert abs(dense.mean_degree - 35) < 2
    # every pair equally likely: p = 0.5 on 4 nodes over many seeds
    counts = sum(erdos_renyi(4, 1.5, seed=s).to_scipy().toarray().astype(int) for s in range(400))
    off = counts[~np.eye(4, dtype=bool)]
    assert np.all(np.abs(off / 400 - 0.5) < 0.1)


def test_erdos_renyi_bad_input():
    for kwargs, name, error in [
        ({"n": 0, "mean_degree": 1}, "n", ValueError),
        ({"n": 2.5, "mean_degree": 1}, "n", TypeError),
        ({"n": True, "mean_degree": 1}, "n", TypeError),
        ({"n": 10, "mean_degree": -1}, "mean_degree", ValueError),
        ({"n": 10, "mean_degree": 9.5}, "mean_degree", ValueError),
        ({"n": 1, "mean_degree": 1}, "mean_degree", ValueError),
        ({"n": 10, "mean_degree": float("nan")}, "mean_degree", ValueError),
        ({"n": 10, "mean_degree": "3"}, "mean_degree", TypeError),
        ({"n": 10, "mean_degree": 3, "seed": -1}, "seed", ValueError),
        ({"n": 10, "mean_degree": 3, "directed": "yes"}, "directed", TypeError),
    ]:
        with pytest.raises(error, match=f"^{name}:"):
            erdos_renyi(**kwargs)


# --- ring lattice and Watts-Strogatz ----------------------------------------------------------------------------


def test_ring_lattice():
    g = ring_lattice(20, 6)
    assert not g.directed and g.edges == 60
    assert set(g.out_degree.tolist()) == {6}
    assert set(g.indices[g.indptr[0] : g.indptr[1]].tolist()) == {1, 2, 3, 17, 18, 19}
    assert edge_set(g) == edge_set(Graph.from_networkx(nx.watts_strogatz_graph(20, 6, 0.0)))
    assert set(ring_lattice(5, 4).out_degree.tolist()) == {4}  # k = n - 1: complete graph
    assert nx.average_clustering(ring_lattice(100, 8).to_networkx()) == pytest.approx(3 * 6 / (4 * 7))


def test_watts_strogatz():
    n, k = 1000, 10
    lattice = ring_lattice(n, k)
    zero = watts_strogatz(n, k, 0.0, seed=5)
    np.testing.assert_array_equal(zero.indptr, lattice.indptr)
    np.testing.assert_array_equal(zero.indices, lattice.indices)
    for beta in (0.1, 0.5, 1.0):
        g = watts_strogatz(n, k, beta, seed=5)
        assert_valid_csr(g)
        assert g.edges == nx.watts_strogatz_graph(n, k, beta, seed=5).number_of_edges() == n * k // 2
        assert g.mean_degree == k
        assert g.out_degree.min() >= k // 2  # each node keeps its k/2 "own" edges (rewired or not)
    rewired = watts_strogatz(n, k, 1.0, seed=5)
    assert len(edge_set(rewired) & edge_set(lattice)) < 0.05 * 2 * n * k // 2
    # same model as networkx: clustering ~ C(0) (1 - beta)^3 at beta = 0.1
    ours = np.mean([nx.average_clustering(watts_strogatz(n, k, 0.1, seed=s).to_networkx()) for s in range(3)])
    ref = np.mean([nx.average_clustering(nx.watts_strogatz_graph(n, k, 0.1, seed=s)) for s in range(3)])
    assert ours == pytest.approx(ref, abs=0.02)
    # saturated tiny graphs: rewiring never duplicates or loops, edge count is kept
    for seed in range(30):
        tiny = watts_strogatz(6, 4, 1.0, seed=seed)
        assert tiny.edges == 12
        assert_valid_csr(tiny)


def test_lattice_bad_input():
    for fn, kwargs, name, error in [
        (ring_lattice, {"n": 2, "k": 2}, "n", ValueError),
        (ring_lattice, {"n": 10, "k": 3}, "k", ValueError),
        (ring_lattice, {"n": 10, "k": 0}, "k", ValueError),
        (ring_lattice, {"n": 10, "k": 10}, "k", ValueError),
        (ring_lattice, {"n": 10, "k": 4.0}, "k", TypeError),
        (watts_strogatz, {"n": 10, "k": 4, "beta": 1.5}, "beta", ValueError),
        (watts_strogatz, {"n": 10, "k": 4, "beta": -0.1}, "beta", ValueError),
        (watts_strogatz, {"n": 10, "k": 4, "beta": None}, "beta", TypeError),
        (watts_strogatz, {"n": 10, "k": 5, "beta": 0.1}, "k", ValueError),
        (watts_strogatz, {"n": 10, "k": 4, "beta": 0.1, "seed": 1.5}, "seed", TypeError),
    ]:
        with pytest.raises(error, match=f"^{name}:"):
            fn(**kwargs)


# --- loaders ----------------------------------------------------------------------------------------------------

FLYWIRE = """pre_root_id,post_root_id,neuropil,syn_count,nt_type
720575940629970489,720575940631267655,AVLP_R,3,ACH
720575940629970489,720575940631267655,PVLP_R,4,ACH
720575940631267655,720575940622838154,AVLP_R,5,GABA
720575940622838154,720575940629970489,SLP_L,2,GLUT
720575940600000000,720575940622838154,SLP_L,9,GLUT
720575940622838154,720575940622838154,SLP_L,9,GLUT
"""


def write(tmp_path, text, name="edges.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_load_edge_list_renumbers_and_thresholds(tmp_path):
    path = write(tmp_path, FLYWIRE)
    graph, ids = load_edge_list(path)  # "pre"/"post" find pre_root_id/post_root_id
    assert ids.dtype == np.int64
    np.testing.assert_array_equal(ids, [720575940629970489, 720575940631267655, 720575940622838154, 720575940600000000])
    assert graph.directed and graph.n == 4
    assert edge_set(graph) == {(0, 1), (1, 2), (2, 0), (3, 2)}  # duplicate row merged, self-loop dropped
    # rows of one pair are summed before thresholding: 3 + 4 = 7 >= 5 survives, 2 does not
    graph, ids = load_edge_list(path, weight="syn_count", threshold=5)
    assert edge_set(graph) == {(0, 1), (1, 2), (3, 2)}
    assert graph.n == 4
    graph, ids = load_edge_list(path, weight="syn_count", threshold=8)  # only 3 -> 2 (and the self-loop row)
    np.testing.assert_array_equal(ids, [720575940622838154, 720575940600000000])
    assert edge_set(graph) == {(1, 0)}
    undirected, _ = load_edge_list(path, directed=False)
    assert not undirected.directed and undirected.edges == 4
    # gzip, exact column names, weight without threshold keeps everything
    gz = tmp_path / "edges.csv.gz"
    with gzip.open(gz, "wt") as handle:
        handle.write(FLYWIRE)
    graph, _ = load_edge_list(gz, source="pre_root_id", target="post_root_id", weight="syn")
    assert graph.edges == 4


def test_load_edge_list_string_ids(tmp_path):
    path = write(tmp_path, "src,dst,w\nb,a,1\na,c,2.5\n c ,b,1e1\n\n07,7,1\n")
    graph, ids = load_edge_list(path, source="src", target="dst")
    assert ids.dtype.kind == "U"
    assert ids.tolist() == ["b", "a", "c", "07", "7"]
    assert edge_set(graph) == {(0, 1), (1, 2), (2, 0), (3, 4)}
    graph, ids = load_edge_list(path, source="src", target="dst", weight="w", threshold=2)
    # numbered by first appearance in the file, also when that row was dropped ("b" in row 1)
    assert ids.tolist() == ["b", "a", "c"] and edge_set(graph) == {(1, 2), (2, 0)}


def test_load_edge_list_errors(tmp_path):
    path = write(tmp_path, FLYWIRE)
    with pytest.raises(FileNotFoundError, match="path"):
        load_edge_list(tmp_path / "missing.csv")
    with pytest.raises(ValueError, match=r"^source: no column"):
        load_edge_list(path, source="from")
    with pytest.raises(ValueError, match=r"^target: no column"):
        load_edge_list(path, target="to")
    with pytest.raises(ValueError, match=r"^weight: no column"):
        load_edge_list(path, weight="count")
    with pytest.raises(ValueError, match=r"^source: 2 columns"):
        load_edge_list(path, source="p")
    with pytest.raises(ValueError, match=r"^threshold: needs a weight"):
        load_edge_list(path, threshold=5)
    with pytest.raises(TypeError, match=r"^threshold: expected"):
        load_edge_list(path, weight="syn_count", threshold="5")
    bad = write(tmp_path, "pre,post,syn\n1,2,3\n2,3,many\n", "bad.csv")
    with pytest.raises(ValueError, match=r"^weight: .*'many'"):
        load_edge_list(bad, weight="syn")
    nan = write(tmp_path, "pre,post,syn\n1,2,nan\n", "nan.csv")
    with pytest.raises(ValueError, match=r"^weight:"):
        load_edge_list(nan, weight="syn")
    with pytest.raises(ValueError, match=r"^path: no edges with summed syn_count >= 100"):
        load_edge_list(path, weight="syn_count", threshold=100)
    with pytest.raises(ValueError, match=r"^path: no edges"):
        load_edge_list(write(tmp_path, "pre,post\n", "header_only.csv"))
    with pytest.raises(ValueError, match=r"^path: no edges"):
        load_edge_list(write(tmp_path, "pre,post\n4,4\n", "loops.csv"))
    with pytest.raises(ValueError, match=r"^path: .* is empty"):
        load_edge_list(write(tmp_path, "", "empty.csv"))
    with pytest.raises(ValueError, match=r"^path: line 3 .* 1 fields"):
        load_edge_list(write(tmp_path, "pre,post\n1,2\n3\n", "short.csv"))


def test_load_graphml_round_trip(tmp_path):
    for graph in (nx.gnp_random_graph(30, 0.2, seed=1), nx.gnp_random_graph(30, 0.2, seed=2, directed=True)):
        path = tmp_path / "g.graphml"
        nx.write_graphml(graph, path)
        loaded = load_graphml(path)
        assert loaded.directed == graph.is_directed() and loaded.n == 30
        assert edge_set(loaded) == edge_set(from_networkx(graph))
        assert loaded.edges == graph.number_of_edges()
    with pytest.raises(FileNotFoundError, match="path"):
        load_graphml(tmp_path / "missing.graphml")
    with pytest.raises(ValueError, match=r"^path: .* not a readable GraphML"):
        load_graphml(write(tmp_path, "not xml", "bad.graphml"))
