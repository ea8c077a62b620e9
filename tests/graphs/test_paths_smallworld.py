"""Path lengths, small-world measures and the connectome model against networkx and formulas."""

import json
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphs.clustering_measures import average_clustering
from graphs.generators import erdos_renyi, ring_lattice, watts_strogatz
from graphs.graph import Graph
from graphs.paths import giant_component, path_lengths
from graphs.rewire import degree_preserving_random
from graphs.smallworld import (
    calibrate_connectome,
    connectome_model,
    er_clustering,
    er_path_length,
    lattice_clustering,
    reciprocity,
    small_world,
)
from graphs.smallworld.cli import main


def nx_reference(g: nx.Graph):
    comps = nx.strongly_connected_components(g) if g.is_directed() else nx.connected_components(g)
    giant = g.subgraph(max(comps, key=len))
    lengths = dict(nx.all_pairs_shortest_path_length(giant))
    hist = np.bincount([d for row in lengths.values() for d in row.values()])
    hist[0] = 0
    n = g.number_of_nodes()
    reach = sum(len(nx.descendants(g, u)) for u in g)
    return giant.number_of_nodes(), hist, 1 - reach / (n * (n - 1))


@given(st.integers(2, 45), st.floats(0.0, 0.25), st.booleans(), st.integers(0, 10**6))
def test_exact_path_lengths_equal_networkx(n, p, directed, seed):
    g = nx.gnp_random_graph(n, p, seed=seed, directed=directed)
    ours = path_lengths(Graph.from_networkx(g), max_memory=2**14)  # small budget: several slabs
    size, hist, unreachable = nx_reference(g)
    assert ours.component_size == size
    np.testing.assert_array_equal(ours.pairs, hist[: ours.pairs.size])
    assert hist[ours.pairs.size :].sum() == 0
    if hist.sum():
        assert ours.mean == pytest.approx(float(np.arange(hist.size) @ hist / hist.sum()))
    assert ours.unreachable_fraction == pytest.approx(unreachable)


def test_sampled_path_length_interval_and_limit():
    g = erdos_renyi(3000, 6.0, directed=True, seed=2)
    exact = path_lengths(g)
    sampled = path_lengths(g, sources=300, seed=4)
    lo, hi = sampled.ci
    assert lo <= exact.mean <= hi and hi - lo < 0.1
    everyone = path_lengths(g, sources=g.n, seed=0)  # every giant node as a source: the exact mean
    assert everyone.mean == pytest.approx(exact.mean) and everyone.ci[1] - everyone.ci[0] == pytest.approx(0)
    assert sampled.unreachable_fraction == pytest.approx(exact.unreachable_fraction, abs=0.03)


def test_erdos_renyi_matches_formulas_at_large_n():
    n, k = 20000, 10.0
    g = erdos_renyi(n, k, seed=1)
    assert average_clustering(g) == pytest.approx(er_clustering(n, k), rel=0.25)
    assert path_lengths(g, sources=200, seed=0).mean == pytest.approx(er_path_length(n, k), rel=0.02)


def test_watts_strogatz_limits():
    lattice = watts_strogatz(1000, 10, 0.0)
    assert average_clustering(lattice) == pytest.approx(lattice_clustering(10))
    assert path_lengths(lattice).mean == pytest.approx(
        nx.average_shortest_path_length(nx.watts_strogatz_graph(1000, 10, 0))
    )
    rand = watts_strogatz(4000, 10, 1.0, seed=3)
    assert average_clustering(rand) < 5 * er_clustering(4000, 10)
    assert path_lengths(rand, sources=100).mean == pytest.approx(er_path_length(4000, 10), rel=0.05)
    sw = small_world(watts_strogatz(2000, 10, 0.05, seed=1), sources=200)
    assert sw.sigma > 3 and abs(sw.omega) < 0.5


def test_degree_preserving_random_reference():
    g = watts_strogatz(1000, 8, 0.0)
    r = degree_preserving_random(g, seed=1)
    np.testing.assert_array_equal(r.out_degree, g.out_degree)
    assert average_clustering(r) < 0.2 * average_clustering(g)
    sw = small_world(g, reference="rewired", sources=100)
    assert sw.reference == "rewired" and sw.C_r < 0.05


def test_connectome_model_statistics_and_calibration():
    g = connectome_model(5000, 20.5, 0.3, 40, seed=1)
    assert g.mean_degree == pytest.approx(20.5, rel=0.03)
    assert reciprocity(g) == pytest.approx(0.138, abs=0.01)
    # targets the model can reach at this size: calibration must find them again
    truth = connectome_model(4000, 20.5, 0.35, 48, seed=0)
    target_c = average_clustering(truth.undirected())
    target_l = path_lengths(truth, sources=64, seed=0).mean
    fit = calibrate_connectome(4000, target_C=target_c, target_L=target_l, neighbourhood_range=(12, 200), steps=6)
    assert fit.measured["C"] == pytest.approx(target_c, rel=0.1)
    assert fit.measured["L_directed"] == pytest.approx(target_l, abs=0.05)
    assert set(fit.to_dict()) >= {"random_fraction", "neighbourhood", "measured", "targets"}


def test_giant_component_of_disconnected_graph():
    g = Graph.from_edges(7, [0, 1, 2, 4], [1, 2, 0, 5], directed=True)
    np.testing.assert_array_equal(giant_component(g), [0, 1, 2])
    result = path_lengths(g)
    assert result.mean == pytest.approx(1.5) and result.unreachable_fraction == pytest.approx(1 - 7 / 42)


def test_cli_json_and_report(capsys, tmp_path):
    assert main(["--graph", "ws", "--n", "500", "--k", "8", "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for key in ("n", "edges", "mean_degree", "C", "transitivity", "L", "L_method", "C_r", "L_r", "sigma", "omega"):
        assert key in doc, key
    assert doc["L_method"] == "exact" and doc["sigma"] > 1
    assert main(["--graph", "connectome", "--n", "3000", "--sources", "64", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "FlyWire" in out and "sigma" in out
    csv = tmp_path / "edges.csv"
    csv.write_text("pre_root_id,post_root_id,syn_count\n10,11,6\n11,12,9\n12,10,1\n12,10,5\n")
    assert main(["--edges", str(csv), "--weight", "syn_count", "--threshold", "5", "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n"] == 3 and doc["edges"] == 3 and doc["L_directed"] == pytest.approx(1.5)
    assert all(not isinstance(v, float) or math.isfinite(v) for v in doc.values())


@pytest.mark.parametrize(
    ("cli", "argv", "name"),
    [
        (main, ["--n", "3"], "--n"),
        (main, ["--graph", "sa", "--w", "16"], "python -m receptive.smallworld"),
        (
            main,
            ["--w", "16"],
            "unrecognized arguments: --w 16; --w: options of the attention graphs (python -m receptive",
        ),
        (main, ["--wei", "syn", "--graph", "er"], "unrecognized arguments: --wei"),
        (main, ["--sources", "0"], "--sources"),
        (main, ["--k", "-1"], "--k"),
        (main, ["--beta", "2", "--graph", "ws"], "--beta"),
        (main, ["--graph", "nope"], "--graph"),
        (main, ["--edges", "/nonexistent.csv"], "nonexistent"),
        (main, ["--exact", "--sources", "5"], "--sources"),
    ],
)
def test_cli_bad_input(cli, argv, name, capsys):
    with pytest.raises(SystemExit) as exc:
        cli([*argv, "--no-progress"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err, err


def test_bad_arguments():
    g = ring_lattice(20, 4)
    with pytest.raises(TypeError, match=r"^graph:"):
        path_lengths("g")
    with pytest.raises(ValueError, match=r"^sources:"):
        path_lengths(g, sources=0)
    with pytest.raises(TypeError, match=r"^sources:"):
        path_lengths(g, sources=2.0)
    with pytest.raises(ValueError, match="reference"):
        small_world(g, reference="magic")
    with pytest.raises(ValueError, match="random_fraction"):
        connectome_model(100, 5, 1.5, 10)
    with pytest.raises(ValueError, match="neighbourhood"):
        connectome_model(100, 5, 0.5, 100)
    with pytest.raises(ValueError, match=r"^target_C:"):
        calibrate_connectome(100, target_C=2)
    with pytest.raises(TypeError, match=r"^neighbourhood:"):
        connectome_model(100, 5, 0.5, 10.0)
    with pytest.raises(TypeError, match=r"^random_fraction:"):
        connectome_model(100, 5, "0.5", 10)
    with pytest.raises(TypeError, match=r"^reference:"):
        small_world(g, reference=None)
    with pytest.raises(TypeError, match=r"^graph:"):
        small_world(nx.path_graph(3))
    with pytest.raises(ValueError, match=r"^switches_per_edge:"):
        degree_preserving_random(g, switches_per_edge=0)
    with pytest.raises(TypeError, match=r"^graph:"):
        degree_preserving_random("g")
