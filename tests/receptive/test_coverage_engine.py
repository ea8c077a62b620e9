"""The coverage engine against the brute-force oracle (dense boolean products, networkx ancestors)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import layer_matrices, rf_sizes, rf_sizes_networkx

from graphs import backward_counts, forward_counts
from receptive import coverage_by_layer, make_pattern, sample_permutations
from receptive.patterns import GatedSAPlusSWA, SlidingWindow, StochasticAttention
from receptive.windows import max_window

NAMES = ["swa", "sa", "sa+swa", "full"]


@st.composite
def cases(draw, max_n=40):
    name = draw(st.sampled_from(NAMES))
    n = draw(st.integers(2, max_n))
    causal = draw(st.booleans())
    circular = draw(st.booleans())
    limit = max_window(n, causal and name == "swa", circular)
    if name == "sa+swa":
        limit = min(limit, max_window(n, causal, circular))
    w = draw(st.integers(1, limit))
    seed = draw(st.integers(0, 1000))
    layers = draw(st.integers(1, 6))
    return name, n, w, causal, circular, seed, layers


def oracle_sizes(name, n, w, causal, circular, seed, layers):
    return rf_sizes(layer_matrices(name, n, w, causal, circular, sample_permutations(n, layers, seed)))


@given(cases(max_n=150), st.sampled_from([None, 64, 128]), st.booleans())
def test_forward_counts_equal_oracle(case, slab_size, stop_when_full):
    name, n, w, causal, circular, seed, layers = case
    pattern = make_pattern(name, n, w, causal, circular, seed)
    reach = forward_counts(
        pattern.layer_ops, n, max_layers=layers, causal=causal, slab_size=slab_size, stop_when_full=stop_when_full
    )
    expect = oracle_sizes(name, n, w, causal, circular, seed, layers)
    got = reach.counts
    assert got.shape[0] <= layers
    np.testing.assert_array_equal(got, expect[: got.shape[0]])
    if got.shape[0] < layers:  # stopped early: everything already full
        np.testing.assert_array_equal(expect[-1], got[-1])
    full = np.flatnonzero((expect == (np.arange(n) + 1 if causal else n)).all(axis=1))
    assert reach.full_layer == (int(full[0]) + 1 if full.size else None)


@given(cases(), st.data())
def test_sampled_targets_equal_exact(case, data):
    name, n, w, causal, circular, seed, layers = case
    pattern = make_pattern(name, n, w, causal, circular, seed)
    targets = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))))
    back = backward_counts(pattern.layer_ops, n, targets, max_layers=layers, causal=causal, stop_when_full=False)
    expect = oracle_sizes(name, n, w, causal, circular, seed, layers)
    np.testing.assert_array_equal(back.counts, expect[:, targets])


@given(cases(max_n=24))
def test_networkx_ancestors_agree(case):
    name, n, w, causal, circular, seed, layers = case
    mats = layer_matrices(name, n, w, causal, circular, sample_permutations(n, layers, seed))
    pattern = make_pattern(name, n, w, causal, circular, seed)
    reach = forward_counts(pattern.layer_ops, n, max_layers=layers, causal=causal, stop_when_full=False)
    np.testing.assert_array_equal(reach.counts, rf_sizes_networkx(mats))


@given(st.integers(2, 60), st.data())
def test_explicit_permutations(n, data):
    causal, circular = data.draw(st.booleans()), data.draw(st.booleans())
    w = data.draw(st.integers(1, max_window(n, False, circular)))
    layers = data.draw(st.integers(1, 4))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    perms = [rng.permutation(n) for _ in range(layers)]
    pattern = StochasticAttention(n, w, causal, circular, permutations=perms)
    assert pattern.max_layers == layers
    result = coverage_by_layer(pattern, layers, method="exact")
    np.testing.assert_array_equal(result.sizes, rf_sizes(layer_matrices("sa", n, w, causal, circular, perms)))


@given(st.integers(2, 80), st.data())
def test_sa_with_identity_permutations_is_swa(n, data):
    circular = data.draw(st.booleans())
    w = data.draw(st.integers(1, max_window(n, False, circular)))
    layers = data.draw(st.integers(1, 5))
    ident = [np.arange(n)] * layers
    sa = coverage_by_layer(StochasticAttention(n, w, False, circular, permutations=ident), layers, method="exact")
    swa = coverage_by_layer(SlidingWindow(n, w, False, circular), layers, method="exact")
    np.testing.assert_array_equal(sa.sizes, swa.sizes)
    # causal SA keeps the two-sided band and masks the future: with truncated windows that is the causal window
    # of w // 2 + 1 keys (a circular band would also bring in keys wrapped round from the start)
    sa_c = coverage_by_layer(StochasticAttention(n, w, True, False, permutations=ident), layers, method="exact")
    swa_c = coverage_by_layer(SlidingWindow(n, min(n, w // 2 + 1), True), layers, method="exact")
    np.testing.assert_array_equal(sa_c.sizes, swa_c.sizes)


@given(st.integers(2, 300), st.data())
def test_swa_engine_equals_closed_form(n, data):
    causal, circular = data.draw(st.booleans()), data.draw(st.booleans())
    w = data.draw(st.integers(1, max_window(n, causal, circular)))
    pattern = SlidingWindow(n, w, causal, circular)
    star = pattern.closed_form_full_layer()
    layers = min(star + 1, 400) if star is not None else data.draw(st.integers(1, 20))
    exact = coverage_by_layer(pattern, layers, method="exact")
    closed = coverage_by_layer(pattern, layers, method="closed-form")
    np.testing.assert_array_equal(exact.sizes, closed.sizes)
    assert exact.full_coverage_layer == closed.full_coverage_layer == star or star > layers


@given(cases(max_n=120))
def test_monotone_in_depth_and_union_dominates(case):
    _, n, w, causal, circular, seed, layers = case
    w = min(w, max_window(n, causal, circular))
    union = GatedSAPlusSWA(n, w, causal, circular, seed)
    sizes = {
        p.name: coverage_by_layer(p, layers, method="exact").sizes
        for p in (union, StochasticAttention(n, w, causal, circular, seed), SlidingWindow(n, w, causal, circular))
    }
    for s in sizes.values():
        assert np.all(np.diff(s, axis=0) >= 0)
    assert np.all(sizes["sa+swa"] >= sizes["sa"]) and np.all(sizes["sa+swa"] >= sizes["swa"])


def test_full_attention_covers_in_one_layer():
    for causal in (False, True):
        res = coverage_by_layer(make_pattern("full", 300, 1, causal), method="exact")
        assert res.full_coverage_layer == 1
        assert res.layers[0].min == 1.0


@pytest.mark.parametrize("causal", [False, True])
def test_many_slabs_and_sampled_mode_at_moderate_n(causal):
    """Several slabs (small memory budget) and sampled targets agree with each other at n = 5000."""
    n, w = 5000, 16
    pattern = StochasticAttention(n, w, causal, seed=3)
    exact = coverage_by_layer(pattern, 6, method="exact", max_memory="3MiB")
    sampled = coverage_by_layer(pattern, 6, method="sampled", targets=200, seed=1)
    np.testing.assert_array_equal(sampled.sizes, exact.sizes[:, sampled.positions])
    lo, hi = sampled.layers[1].mean_ci
    assert lo <= exact.layers[1].mean <= hi
