"""The stack measures of the generation-form patterns against shortest paths on the layered graph, hand cases and the
refusals of bad arguments."""

import math

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from refusals import assert_refused

from analysis.paper_tasks.stack_reach import STACK_METHODS, stack_reach
from gpu.attention.generation_keys import position_keys


def adjacency(method, n, m, heads, seed, max_length, exact):
    """Dense ``(n, n)``: query ``i`` reads key ``k`` through some head (``exact``: every ``k <= i``)."""
    if exact:
        return np.tril(np.ones((n, n), dtype=bool))
    keys_method = "sa+swa-union" if method == "sa+swa" else method
    idx, valid = position_keys(keys_method, torch.arange(n), n, m, heads, seed, max_length)
    keep = np.zeros((n, n), dtype=bool)
    for h in range(heads):
        for i in range(n):
            keep[i, idx[h, i][valid[h, i]].numpy()] = True
    return keep


def oracle(method, n, m, layers, heads, seed, max_length, target, hops, exact_layers):
    """Every measure from the graph with nodes ``(layer, position)``: a residual edge of weight 0 and an attention
    edge of weight 1 from each ``(l, k)`` to ``(l + 1, i)`` where layer ``l`` has query ``i`` read key ``k``."""
    graph = nx.DiGraph()
    for layer in range(layers):
        exact = method == "exact" or layer in exact_layers
        keep = adjacency(method, n, m, heads, seed * layers + layer, max_length, exact)
        for i in range(n):
            graph.add_edge((layer, i), (layer + 1, i), weight=0)
            for k in np.flatnonzero(keep[i]):
                if k != i:
                    graph.add_edge((layer, int(k)), (layer + 1, i), weight=1)
    edges = nx.single_source_dijkstra_path_length(graph.reverse(), (layers, target))
    hops_to = [edges.get((0, j), math.inf) for j in range(target)]
    reached = [d for d in hops_to if d < math.inf]
    full_layer = next(
        (L for L in range(1, layers + 1) if all((0, j) in nx.ancestors(graph, (L, target)) for j in range(target))),
        None,
    )
    return {
        "full_layer": full_layer,
        "reach_share": {h: sum(d <= h for d in hops_to) / target for h in hops},
        "reach_share_all": len(reached) / target,
        "mean_hops": sum(reached) / len(reached) if reached else None,
        "unreached": target - len(reached),
    }


@settings(max_examples=150, deadline=None)
@given(
    method=st.sampled_from(STACK_METHODS),
    n=st.integers(2, 40),
    m=st.integers(1, 8),
    layers=st.integers(1, 6),
    heads=st.integers(1, 3),
    seed=st.integers(0, 1000),
    max_length=st.one_of(st.just(64), st.integers(40, 70)),  # 64: sa-ms has several scales
    data=st.data(),
)
def test_every_measure_equals_shortest_paths_on_the_layered_graph(method, n, m, layers, heads, seed, max_length, data):
    target = data.draw(st.integers(1, n - 1), label="target")
    exact_layers = data.draw(st.sets(st.integers(0, layers - 1), max_size=2), label="exact_layers")
    hops = (1, 2, 3, layers)
    got = stack_reach(
        method,
        m,
        n,
        layers=layers,
        heads=heads,
        seed=seed,
        max_length=max_length,
        target=target,
        hops=hops,
        exact_layers=exact_layers,
    )
    want = oracle(method, n, m, layers, heads, seed, max_length, target, hops, exact_layers)
    assert {name: getattr(got, name) for name in want} == want  # shares of the same counts: exact floats


def test_the_window_needs_one_edge_per_step():
    r = stack_reach("swa", 2, 5, layers=4)
    assert r.full_layer == 4
    assert r.reach_share == {1: 0.25, 2: 0.5, 3: 0.75}
    assert (r.reach_share_all, r.mean_hops, r.unreached) == (1.0, 2.5, 0)
    short = stack_reach("swa", 2, 5, layers=3)  # position 0 is four steps away
    assert (short.full_layer, short.unreached, short.reach_share_all) == (None, 1, 0.75)


def test_exact_attention_reaches_everything_in_one_edge():
    r = stack_reach("exact", 3, 50, hops=(1,))
    assert (r.full_layer, r.reach_share, r.mean_hops) == (1, {1: 1.0}, 1.0)


def test_an_exact_layer_fills_the_field_at_once():
    assert stack_reach("swa", 2, 64, layers=6, exact_layers=[2]).full_layer == 3


def test_sa_plus_swa_measures_the_union_of_its_two_paths():
    args = dict(layers=4, heads=2, seed=3, max_length=256)
    assert stack_reach("sa+swa", 8, 200, **args).to_dict() == {
        **stack_reach("sa+swa-union", 8, 200, **args).to_dict(),
        "method": "sa+swa",
    }


def test_the_result_reads_and_serialises():
    r = stack_reach("sa", 4, 30, layers=3, exact_layers=(1,))
    assert repr(r).startswith("StackReach(sa, budget=4, n=30, layers=3, heads=9, seed=0, exact_layers=[1], target=29:")
    d = r.to_dict()
    assert d["exact_layers"] == [1] and set(d["reach_share"]) == {"1", "2", "3"}


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"method": 3}, TypeError, "method"),
        ({"method": "banded"}, ValueError, "method"),
        ({"method": "moba"}, ValueError, "method"),
        ({"method": "top-k"}, ValueError, "method"),
        ({"budget": 2.0}, TypeError, "budget"),
        ({"budget": 0}, ValueError, "budget"),
        ({"n": 0}, ValueError, "n"),
        ({"n": 1}, ValueError, "n"),
        ({"layers": 0}, ValueError, "layers"),
        ({"heads": 0}, ValueError, "heads"),
        ({"seed": -1}, ValueError, "seed"),
        ({"max_length": 15}, ValueError, "max_length"),
        ({"target": 0}, ValueError, "target"),
        ({"target": 16}, ValueError, "target"),
        ({"target": "last"}, TypeError, "target"),
        ({"hops": 2}, TypeError, "hops"),
        ({"hops": (0,)}, ValueError, "hops"),
        ({"exact_layers": (4,)}, ValueError, "exact_layers"),
        ({"exact_layers": (True,)}, TypeError, "exact_layers"),
        ({"budget": 10**6, "n": 8192}, ValueError, "n"),
    ],
)
def test_bad_arguments_are_refused(kwargs, error, name):
    args = {"method": "sa", "budget": 4, "n": 16, "layers": 4} | kwargs
    assert_refused(lambda: stack_reach(args.pop("method"), args.pop("budget"), args.pop("n"), **args), error, name)
