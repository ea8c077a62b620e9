"""Exact clustering measures against networkx on random small graphs, plus closed forms and bad input."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import graphs.clustering_measures as clustering_measures
from graphs.clustering_measures import (
    ClusteringResult,
    average_clustering,
    clustering,
    local_clustering,
    transitivity,
    triangles,
)
from graphs.graph import Graph


@st.composite
def graphs(draw, max_nodes=14):
    """Random (di)graphs: isolated nodes, several components, reciprocal edges, duplicates and self-loops in the
    input (dropped by ``from_edges``), and the edgeless graph."""
    n = draw(st.integers(1, max_nodes))
    directed = draw(st.booleans())
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    if directed and pairs and draw(st.booleans()):  # reciprocate a random part of the edges
        pairs += [(v, u) for u, v in pairs if draw(st.booleans())]
    src = np.array([u for u, _ in pairs], dtype=np.int64)
    dst = np.array([v for _, v in pairs], dtype=np.int64)
    return Graph.from_edges(n, src, dst, directed=directed)


def directed_denominators(g: nx.DiGraph) -> np.ndarray:
    """``2 (d_tot (d_tot - 1) - 2 d_bidir)`` per node, straight from the definition (Fagiolo 2007)."""
    out = []
    for i in range(g.number_of_nodes()):
        preds, succs = set(g.predecessors(i)), set(g.successors(i))
        d_tot = len(preds) + len(succs)
        out.append(2 * (d_tot * (d_tot - 1) - 2 * len(preds & succs)))
    return np.array(out)


def check_against_networkx(graph: Graph) -> None:
    g = graph.to_networkx()
    u = g.to_undirected()
    nodes = range(graph.n)
    tri = nx.triangles(u)
    np.testing.assert_array_equal(triangles(graph), [tri[i] for i in nodes])
    assert triangles(graph).dtype == np.int64
    local = local_clustering(graph)
    expect = nx.clustering(g)
    assert local.dtype == np.float64
    np.testing.assert_allclose(local, [expect[i] for i in nodes], rtol=1e-12, atol=0)
    np.testing.assert_allclose(average_clustering(graph), nx.average_clustering(g), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(transitivity(graph), nx.transitivity(u), rtol=1e-12, atol=0)

    # igraph convention: mean over nodes whose clustering is defined
    if graph.directed:
        defined = directed_denominators(g) > 0
    else:
        defined = np.array([u.degree(i) >= 2 for i in nodes], dtype=bool)
    igraph_avg = float(np.mean(local[defined])) if defined.any() else 0.0
    np.testing.assert_allclose(average_clustering(graph, count_zeros=False), igraph_avg, rtol=1e-12, atol=1e-15)

    res = clustering(graph)
    assert isinstance(res, ClusteringResult)
    assert res.directed == graph.directed
    np.testing.assert_allclose(res.average, average_clustering(graph), rtol=1e-12, atol=0)
    np.testing.assert_allclose(res.average_nonzero_degree, igraph_avg, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(res.transitivity, transitivity(graph), rtol=1e-12, atol=0)
    assert set(res.to_dict()) == {"average", "average_nonzero_degree", "transitivity", "directed"}


@given(graph=graphs())
def test_random_small_graphs_match_networkx(graph):
    check_against_networkx(graph)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("p", [0.02, 0.1, 0.5, 1.0])
def test_gnp_graphs_match_networkx(directed, p):
    g = nx.gnp_random_graph(60, p, seed=7, directed=directed)
    check_against_networkx(Graph.from_networkx(g))


@pytest.mark.parametrize("directed", [False, True])
def test_larger_graph_matches_networkx(directed, monkeypatch):
    """Skewed degrees, and the parallel kernels (forced on this size) split the nodes across threads."""
    monkeypatch.setattr(clustering_measures, "_PARALLEL_MIN_EDGES", 0)
    g = nx.barabasi_albert_graph(1500, 6, seed=3)
    if directed:  # random orientations, every fifth edge reciprocated
        rng = np.random.default_rng(0)
        edges = [(u, v) if rng.random() < 0.5 else (v, u) for u, v in g.edges]
        g = nx.DiGraph(edges + [(v, u) for u, v in edges[::5]])
    check_against_networkx(Graph.from_networkx(g))


@pytest.mark.parametrize("g", [nx.karate_club_graph(), nx.complete_graph(7), nx.petersen_graph(), nx.star_graph(5)])
def test_named_graphs(g):
    check_against_networkx(Graph.from_networkx(g))
    check_against_networkx(Graph.from_networkx(g.to_directed()))


@pytest.mark.parametrize(("n", "k"), [(9, 2), (13, 4), (40, 6), (101, 10)])
def test_ring_lattice_closed_form(n, k):
    """Watts & Strogatz 1998: a ring where each node links to its k nearest neighbours has C = 3(k-2) / (4(k-1))."""
    src = np.repeat(np.arange(n), k // 2)
    dst = (src + np.tile(np.arange(1, k // 2 + 1), n)) % n
    expect = 3 * (k - 2) / (4 * (k - 1))
    for graph in (Graph.from_edges(n, src, dst, directed=False), Graph.from_edges(n, np.r_[src, dst], np.r_[dst, src])):
        np.testing.assert_allclose(local_clustering(graph), expect, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(average_clustering(graph), expect, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(average_clustering(graph, count_zeros=False), expect, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(transitivity(graph), expect, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(triangles(graph), 3 * (k // 2) * (k // 2 - 1) // 2)


def test_triangle_with_pendant_conventions():
    """Triangle 0-1-2 plus the edge 2-3: C = (1, 1, 1/3, 0); node 3 has degree 1."""
    graph = Graph.from_edges(4, [0, 1, 2, 2], [1, 2, 0, 3], directed=False)
    np.testing.assert_allclose(local_clustering(graph), [1, 1, 1 / 3, 0])
    np.testing.assert_allclose(average_clustering(graph), 7 / 12)  # networkx: node 3 counts as 0
    np.testing.assert_allclose(average_clustering(graph, count_zeros=False), 7 / 9)  # igraph: node 3 dropped
    np.testing.assert_allclose(transitivity(graph), 3 / 5)  # 1 triangle, 5 connected triples
    res = clustering(graph)
    np.testing.assert_allclose([res.average, res.average_nonzero_degree, res.transitivity], [7 / 12, 7 / 9, 3 / 5])
    assert res.directed is False


def test_directed_cycle_and_feed_forward():
    """A directed 3-cycle and a transitive triple both have one undirected triangle, directed clustering 1/2
    (each node: (A + A^T)^3_ii = 2 of 2 (2·1 - 0) x 2 = 4 possible)."""
    for edges in ([(0, 1), (1, 2), (2, 0)], [(0, 1), (1, 2), (0, 2)]):
        graph = Graph.from_edges(3, *zip(*edges, strict=True), directed=True)
        np.testing.assert_allclose(local_clustering(graph), 0.5)
        np.testing.assert_array_equal(triangles(graph), [1, 1, 1])
        np.testing.assert_allclose(transitivity(graph), 1.0)
        assert clustering(graph).directed is True


@pytest.mark.parametrize("directed", [False, True])
def test_edgeless_graph(directed):
    graph = Graph.from_edges(5, [], [], directed=directed)
    np.testing.assert_array_equal(triangles(graph), np.zeros(5, dtype=np.int64))
    np.testing.assert_array_equal(local_clustering(graph), np.zeros(5))
    for value in (average_clustering(graph), average_clustering(graph, count_zeros=False), transitivity(graph)):
        assert value == 0.0 and not np.isnan(value)
    assert clustering(graph).to_dict() == {
        "average": 0.0,
        "average_nonzero_degree": 0.0,
        "transitivity": 0.0,
        "directed": directed,
    }


@pytest.mark.parametrize("func", [triangles, local_clustering, average_clustering, transitivity, clustering])
@pytest.mark.parametrize("bad", [None, nx.path_graph(3), np.eye(3), "graph"])
def test_bad_graph(func, bad):
    with pytest.raises(TypeError, match=r"^graph: expected a graphs.Graph"):
        func(bad)


@pytest.mark.parametrize("bad", [None, 1, "yes"])
def test_bad_count_zeros(bad):
    graph = Graph.from_edges(3, [0, 1], [1, 2], directed=False)
    with pytest.raises(TypeError, match=r"^count_zeros: expected a bool"):
        average_clustering(graph, count_zeros=bad)


@pytest.mark.parametrize("directed", [False, True])
def test_chunking_does_not_change_counts(directed, monkeypatch):
    """The forward pass splits nodes into chunks with private counters: the serial kernels (one chunk), the
    parallel ones (one chunk per thread) and the parallel ones within a tiny memory budget (one chunk) agree."""
    clus = clustering_measures
    g = nx.gnp_random_graph(300, 0.08, seed=11, directed=directed)
    graph = Graph.from_networkx(g)
    one = clus._counts(graph, directed_triangles=True)
    monkeypatch.setattr(clus, "_PARALLEL_MIN_EDGES", 0)
    many = clus._counts(graph, directed_triangles=True)
    np.testing.assert_array_equal(one.triangles, many.triangles)
    monkeypatch.setattr(clus, "_CHUNK_BUDGET", 1)
    one = clus._counts(graph, directed_triangles=True)
    np.testing.assert_array_equal(one.triangles, many.triangles)
    if directed:
        np.testing.assert_array_equal(one.dtriangles, many.dtriangles)
    assert int(many.triangles.sum()) // 3 == sum(nx.triangles(g.to_undirected()).values()) // 3


def test_matches_igraph_avglocal():
    """igraph's ``transitivity_avglocal_undirected``: mode="zero" is networkx's convention (``count_zeros=True``),
    mode="nan" drops nodes of degree < 2 (``count_zeros=False``)."""
    ig = pytest.importorskip("igraph")
    g = nx.powerlaw_cluster_graph(800, 5, 0.3, seed=5)
    graph = Graph.from_networkx(g)
    h = ig.Graph(n=graph.n, edges=list(g.edges), directed=False)
    assert average_clustering(graph) == pytest.approx(h.transitivity_avglocal_undirected(mode="zero"), rel=1e-12)
    assert average_clustering(graph, count_zeros=False) == pytest.approx(
        h.transitivity_avglocal_undirected(mode="nan"), rel=1e-12
    )


@pytest.mark.parametrize(
    "first",
    [
        "import graphs",
        "import graphs.clustering_measures",
        "from graphs.clustering_measures import clustering",
        "from graphs import clustering",
        "import graphs.smallworld",
        "import receptive",
    ],
)
def test_graphs_clustering_is_the_function_whatever_the_import_order(first):
    """``graphs.clustering`` is the function :func:`graphs.clustering_measures.clustering` in a fresh interpreter,
    whichever module was imported first (no submodule of that name shadows it)."""
    import subprocess
    import sys

    code = (
        f"{first}\nimport graphs, graphs.clustering_measures as m\n"
        "assert graphs.clustering is m.clustering and callable(graphs.clustering), graphs.clustering\n"
        "assert graphs.average_clustering is m.average_clustering\n"
        "import importlib.util\nassert importlib.util.find_spec('graphs.clustering') is None\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
