"""Attention patterns as static graphs (receptive.attention_graphs), hops through depth (receptive.hops) and the
bad input of ``python -m receptive.smallworld``."""

import numpy as np
import pytest

from graphs.clustering_measures import average_clustering
from graphs.graph import Graph
from graphs.paths import path_lengths
from graphs.smallworld import small_world
from receptive import make_pattern
from receptive.attention_graphs import attention_graph, union_graph
from receptive.hops import hop_distribution
from receptive.permutations import layer_permutation
from receptive.smallworld import main as attention_main
from receptive.windows import window_offsets


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


# --- attention patterns as graphs -------------------------------------------------------------------------------


@pytest.mark.parametrize("w", [5, 8])
def test_swa_attention_graph_degrees(w):
    n = 64
    g = attention_graph("swa", n, w)
    left, right = window_offsets(w, causal=False)
    i = np.arange(n)
    in_degree = g.reverse().out_degree  # keys of each query, itself excluded
    np.testing.assert_array_equal(in_degree, np.minimum(i, left) + np.minimum(n - 1 - i, right))
    assert set(in_degree[left : n - right].tolist()) == {w - 1}
    assert set(g.out_degree[right : n - left].tolist()) == {w - 1}  # queries that see each key
    assert edge_set(g) == {(j, q) for q in range(n) for j in range(max(0, q - left), min(n, q + right + 1)) if j != q}
    causal = attention_graph("swa", n, w, causal=True)
    assert set(causal.reverse().out_degree[w - 1 :].tolist()) == {w - 1}
    assert all(j < q for j, q in edge_set(causal))
    circ = attention_graph("swa", n, w, circular=True)
    assert set(circ.reverse().out_degree.tolist()) == {w - 1}
    und = attention_graph("swa", n, w, directed=False)
    assert not und.directed and edge_set(und) == edge_set(g.undirected())
    assert set(und.out_degree[left : n - left].tolist()) == {2 * left}


@pytest.mark.parametrize(("w", "circular"), [(5, False), (8, False), (6, True)])
def test_sa_layer_is_a_relabelled_swa_lattice(w, circular):
    n, seed = 80, 11
    lattice = attention_graph("swa", n, w, circular=circular)
    swa = edge_set(lattice)
    for layer in (1, 2, 3):
        perm = layer_permutation(n, seed, layer)
        sa = attention_graph("sa", n, w, layer=layer, seed=seed, circular=circular)
        assert edge_set(sa) == {(int(perm[x]), int(perm[p])) for x, p in swa}  # key perm[x] -> query perm[p]
        np.testing.assert_array_equal(sa.out_degree[perm], lattice.out_degree)
    # causal SA with odd w: the underlying undirected graph is still the relabelled lattice
    perm = layer_permutation(n, seed, 1)
    und = edge_set(attention_graph("swa", n, 5, directed=False))
    causal_sa = attention_graph("sa", n, 5, seed=seed, causal=True, directed=False)
    assert edge_set(causal_sa) == {(int(perm[x]), int(perm[p])) for x, p in und}


def test_union_graph_contains_each_layer():
    n, w, layers = 100, 6, 4
    for name in ("sa", "sa+swa", "swa"):
        union = union_graph(name, n, w, layers, seed=2)
        parts = [edge_set(attention_graph(name, n, w, layer=layer, seed=2)) for layer in range(1, layers + 1)]
        assert edge_set(union) == set().union(*parts)
        # SA draws a fresh permutation per layer: the layers' edge sets all differ (SWA's are all the same), and
        # the union is larger than any one layer (the subset half follows from the equality above)
        assert len({frozenset(part) for part in parts}) == (1 if name == "swa" else layers)
        assert (len(edge_set(union)) > max(map(len, parts))) == (name != "swa")
    assert edge_set(union_graph("swa", n, w, 5)) == edge_set(attention_graph("swa", n, w))
    sa_swa = attention_graph("sa+swa", n, w, seed=2)
    assert edge_set(sa_swa) == edge_set(attention_graph("sa", n, w, seed=2)) | edge_set(attention_graph("swa", n, w))
    und = union_graph("sa", n, w, 3, seed=2, directed=False)
    assert not und.directed and edge_set(und) == edge_set(union_graph("sa", n, w, 3, seed=2).undirected())
    assert union_graph("sa", n, w, 1, seed=2).edges == attention_graph("sa", n, w, seed=2).edges


def test_attention_graph_bad_input():
    cases = [
        (attention_graph, ("bigbird", 10, 3), {}, "name", ValueError),
        (attention_graph, (None, 10, 3), {}, "name", TypeError),
        (attention_graph, ("swa", 0, 3), {}, "n", ValueError),
        (attention_graph, ("swa", 10, 0), {}, "w", ValueError),
        (attention_graph, ("swa", 10, 20), {}, "w", ValueError),
        (attention_graph, ("sa", 10, 3), {"layer": 0}, "layer", ValueError),
        (attention_graph, ("sa", 10, 3), {"seed": -1}, "seed", ValueError),
        (attention_graph, ("swa", 10, 3), {"seed": 0.5}, "seed", TypeError),
        (union_graph, ("sa", 10, 3, 0), {}, "layers", ValueError),
        (union_graph, ("sa", 10, 3, 2.0), {}, "layers", TypeError),
        (union_graph, ("nope", 10, 3, 2), {}, "name", ValueError),
        (union_graph, ("sa", 10, 11, 2), {"circular": True}, "w", ValueError),
        (union_graph, ("sa+swa", 10, 3, 2), {"seed": -3}, "seed", ValueError),
    ]
    for fn, args, kwargs, name, error in cases:
        with pytest.raises(error, match=f"^{name}:"):
            fn(*args, **kwargs)


def test_one_sa_layer_is_a_relabelled_lattice():
    for circular in (False, True):
        swa = attention_graph("swa", 1500, 9, circular=circular, directed=False)
        sa = attention_graph("sa", 1500, 9, circular=circular, seed=7, directed=False)
        assert average_clustering(sa) == pytest.approx(average_clustering(swa))
        assert path_lengths(sa).mean == pytest.approx(path_lengths(swa).mean)
    union = small_world(attention_graph("sa+swa", 1500, 9, seed=7, directed=False))
    lattice = small_world(attention_graph("swa", 1500, 9, directed=False))
    assert union.L < lattice.L / 5 and union.C > 10 * union.C_r


def test_hops_through_depth_equal_first_arrival_layers():
    pattern = make_pattern("sa+swa", 300, 6, causal=True, seed=2)
    hops = hop_distribution(pattern, 12, method="exact")
    first = np.full((300, 300), -1)
    reach = np.eye(300, dtype=bool)
    for layer in range(1, 13):
        reach = (pattern.adjacency(layer).toarray().astype(int) @ reach.astype(int)) > 0
        first[(first < 0) & reach] = layer
    np.fill_diagonal(first, -1)
    counts = np.bincount(first[first > 0], minlength=hops.pairs.size)
    np.testing.assert_array_equal(hops.pairs, counts[: hops.pairs.size])
    admissible = 300 * 299 // 2
    assert hops.unreached_fraction == pytest.approx(1 - counts.sum() / admissible)


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["--w", "0", "--graph", "sa"], "--w"),
        (["--layers", "0", "--graph", "sa"], "--layers"),
        (["--graph", "sa", "--n", "20", "--w", "100"], "--w"),
        (["--graph", "nope"], "--graph"),
    ],
)
def test_attention_cli_bad_input(argv, name, capsys):
    with pytest.raises(SystemExit) as exc:
        attention_main([*argv, "--no-progress"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err, err
