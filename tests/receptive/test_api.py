"""The Python API: patterns, results, validation of every public argument."""

import numpy as np
import pytest

from graphs import NeighbourOp, forward_counts
from graphs.memory import parse_bytes
from receptive import (
    NeighbourListPattern,
    SlidingWindow,
    StochasticAttention,
    coverage_by_layer,
    flash_attention_window_size,
    inverse_permutation,
    layer_permutation,
    make_pattern,
    max_window,
    window_offsets,
)
from receptive.theory import log_w_n, sa_full_layer_estimate, sa_mean_coverage


def test_window_convention():
    assert window_offsets(64, causal=True) == (63, 0)
    assert window_offsets(64, causal=False) == (32, 31)
    assert window_offsets(5, causal=False) == (2, 2)
    assert flash_attention_window_size(1, True) == (0, 0)
    assert max_window(10, causal=True, circular=False) == 10
    assert max_window(10, causal=False, circular=False) == 19
    assert max_window(10, causal=False, circular=True) == 10
    # every query of a window pattern sees exactly w keys away from the edges
    adj = SlidingWindow(50, 7).adjacency(1)
    assert set(np.diff(adj.indptr)[10:40]) == {7}


def test_permutations_are_reproducible_and_shared():
    a, b = layer_permutation(100, 5, 3), layer_permutation(100, 5, 3)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, layer_permutation(100, 5, 4))
    np.testing.assert_array_equal(a[inverse_permutation(a)], np.arange(100))
    sa, both = make_pattern("sa", 100, 8, seed=5), make_pattern("sa+swa", 100, 8, seed=5)
    np.testing.assert_array_equal(sa.permutation(3), both.permutation(3))


def test_result_dataclasses():
    res = coverage_by_layer(make_pattern("sa", 600, 8, seed=1), method="exact")
    d = res.to_dict()
    assert d["full_coverage_layer"] == res.full_coverage_layer == len(d["layers"])
    assert "sa w=8" in repr(res) and "L*=" in repr(res)
    assert res.sizes.shape == (len(res.layers), 600)


def test_neighbour_list_pattern_adds_self_and_checks_causality():
    nbrs = [[(i + 1) % 6] for i in range(6)]
    pat = NeighbourListPattern(6, nbrs)
    res = coverage_by_layer(pat, 5, method="exact")
    np.testing.assert_array_equal(res.sizes[:, 0], [2, 3, 4, 5, 6])
    with pytest.raises(ValueError, match="causal"):
        NeighbourListPattern(6, nbrs, causal=True)
    with pytest.raises(ValueError, match="indices"):
        NeighbourListPattern(3, [[0], [5], [1]])
    per_layer = NeighbourListPattern(4, [[[1], [], [], []], [[], [], [], [2]]], per_layer=True)
    assert per_layer.max_layers == 2
    res = coverage_by_layer(per_layer, 5, method="exact")
    assert len(res.layers) == 2 and "defines 2 layers" in res.note


def test_neighbour_op_transpose():
    op = NeighbourOp.from_lists([[1, 2], [], [0]], 3)
    t = op.transpose()
    assert [list(t.indices[t.indptr[i] : t.indptr[i + 1]]) for i in range(3)] == [[2], [0], [0]]


def test_theory_formulas():
    assert log_w_n(4096, 16) == pytest.approx(3.0)
    c = sa_mean_coverage(32768, 64, 5)
    assert np.all(np.diff(c) >= 0) and c[-1] == pytest.approx(1.0)
    assert sa_full_layer_estimate(32768, 64) == 4
    assert sa_full_layer_estimate(100, 1) is None


def test_sa_prediction_close_to_measurement():
    """The coupon-collector estimate is within one layer of the measured L* (bidirectional, moderate n)."""
    for n, w in [(4096, 16), (8192, 8), (2048, 32)]:
        measured = coverage_by_layer(make_pattern("sa", n, w, seed=0), method="exact").full_coverage_layer
        assert abs(measured - sa_full_layer_estimate(n, w)) <= 1, (n, w, measured)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: make_pattern("sa", 1.5, 4), "n:"),
        (lambda: make_pattern("swa", 10, True), "w:"),
        (lambda: make_pattern("sa", "10", 2), "n:"),
        (lambda: make_pattern("sa", 10, 2, seed=None), "seed"),
        (lambda: coverage_by_layer("sa"), "pattern"),
        (lambda: coverage_by_layer(make_pattern("sa", 10, 2), layers=2.0), "layers"),
    ],
)
def test_wrong_types_are_type_errors(call, match):
    with pytest.raises(TypeError, match=match):
        call()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: make_pattern("sa", 0, 4), "n:"),
        (lambda: make_pattern("sa", 10, 0), "w:"),
        (lambda: make_pattern("sa", 10, 20), "w:"),
        (lambda: make_pattern("nope", 10, 2), "name: unknown pattern"),
        (lambda: make_pattern("sa", 10, 2, seed=-3), "seed"),
        (lambda: StochasticAttention(4, 2, permutations=[[0, 1, 2, 2]]), "permutations"),
        (lambda: StochasticAttention(4, 2, permutations=[[0, 1, 2]]), "permutations"),
        (lambda: StochasticAttention(4, 2, permutations=[]), "permutations"),
        (lambda: coverage_by_layer(make_pattern("sa", 10, 2), method="magic"), "method"),
        (lambda: coverage_by_layer(make_pattern("sa", 10, 2), layers=0), "layers"),
        (lambda: coverage_by_layer(make_pattern("sa", 10, 2), max_layers=0), "max_layers"),
        (lambda: coverage_by_layer(make_pattern("sa", 10, 2), targets=11), "targets"),
        (lambda: coverage_by_layer(make_pattern("sa", 10, 2), targets=[3, 10]), "targets"),
        (lambda: coverage_by_layer(make_pattern("sa", 10, 2), targets=5, method="exact"), "targets"),
        (lambda: coverage_by_layer(make_pattern("sa", 10, 2), method="closed-form"), "closed form"),
        (lambda: coverage_by_layer(make_pattern("sa", 10, 2), max_memory="-1"), "max_memory"),
        (lambda: make_pattern("sa", 10, 2).adjacency(0), "layer"),
        (lambda: layer_permutation(10, 0, 0), "layer"),
    ],
)
def test_bad_arguments_name_themselves(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_max_memory_bounds_what_coverage_holds():
    """The per-layer sizes count against max_memory: refused before anything large is allocated, and a run that
    fits peaks below its budget."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(MemoryError, match=r"^max_memory: 5500 layers .* layers fit"):
            coverage_by_layer(make_pattern("swa", 16384, 4, causal=True), max_layers=5500, method="exact")
        refused_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        budget = 48 * 2**20
        result = coverage_by_layer(
            make_pattern("swa", 1024, 4, causal=True), max_layers=400, method="exact", max_memory=budget
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused_peak < 2**20
    assert result.full_coverage_layer == 341 and peak <= budget


def test_memory_budget_is_checked_before_allocating():
    pat = make_pattern("sa", 10**7, 64)
    with pytest.raises(MemoryError, match="max_memory"):
        coverage_by_layer(pat, method="exact", max_memory="100MiB")
    with pytest.raises(MemoryError, match="slab_size"):
        forward_counts(pat.layer_ops, pat.n, max_layers=1, slab_size=64 * 100, max_memory=2**20)
    assert parse_bytes("1.5GiB") == 3 * 2**29 and parse_bytes(4096) == 4096


def test_slabs_are_independent_tasks():
    """Slabs of any width, run in any order, combine to the single-pass result."""
    from graphs import slab_counts
    from graphs.reachability import combine_slabs, plan_slabs

    pat = make_pattern("sa+swa", 1000, 8, causal=True, seed=4)
    whole = coverage_by_layer(pat, 6, method="exact")
    ranges = [(0, 70), (70, 500), (500, 1000)]
    slabs = [slab_counts(pat.layer_ops, 1000, a, b, max_layers=6, causal=True) for a, b in reversed(ranges)]
    np.testing.assert_array_equal(combine_slabs(slabs, 1000, True).counts, whole.sizes)
    with pytest.raises(ValueError, match="partition"):
        combine_slabs(slabs[:2], 1000, True)
    planned = plan_slabs(pat.layer_ops, 1000, max_memory=2**18)
    assert len(planned) > 1 and planned[0][0] == 0 and planned[-1][1] == 1000
    assert all((b - a) % 64 == 0 for a, b in planned[:-1])


def test_result_memory_is_checked():
    with pytest.raises(MemoryError, match="max_memory"):
        coverage_by_layer(make_pattern("swa", 2**30, 64), layers=10, max_memory="1GiB")


@pytest.mark.parametrize("causal", [False, True])
def test_a_dropped_pattern_is_freed_without_the_garbage_collector(causal):
    """Patterns keep their per-layer draws without reference cycles: the last reference frees them (a 2^20 Kleinberg
    draw is ~1 GB), so sweeps over many big patterns need no ``gc.collect``."""
    import gc
    import weakref

    from receptive.patterns import PATTERNS
    from receptive.patterns.blocks import BigBird
    from receptive.patterns.random_keys import RandomKeys

    windowed = [name for name, kind in PATTERNS.items() if kind.windowed]
    builders = [lambda name=name: make_pattern(name, 256, 8, causal, seed=1) for name in windowed]
    builders += [lambda: RandomKeys(256, 4, causal, seed=1), lambda: BigBird(256, 16, causal=causal, seed=1)]
    gc.disable()
    try:
        for build in builders:
            pattern = build()
            for layer in (1, 2, 1):
                pattern.layer_ops(layer)
            ref = weakref.ref(pattern)
            del pattern
            assert ref() is None, f"{build()!r} is kept alive by a reference cycle"
    finally:
        gc.enable()


def test_the_coverage_subpackage_is_a_module():
    """``receptive.coverage`` is the subpackage (``python -m receptive.coverage``) however it is reached; the
    function is ``receptive.coverage_by_layer``. No submodule of ``receptive`` or ``graphs`` shares its name with
    something else the package exports."""
    import importlib
    import pkgutil
    import types

    import graphs
    import receptive
    import receptive.coverage as imported

    module = importlib.import_module("receptive.coverage")
    assert isinstance(module, types.ModuleType) and imported is module and receptive.coverage is module
    assert receptive.coverage_by_layer is module.coverage_by_layer
    for package in (receptive, graphs):
        for info in pkgutil.iter_modules(package.__path__):
            value = getattr(package, info.name, None)
            assert value is None or isinstance(value, types.ModuleType), f"{package.__name__}.{info.name}"
