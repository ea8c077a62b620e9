"""Every public function of ``receptive`` names the argument it refuses, in one line: ``TypeError`` for a wrong type
(``1`` or ``"yes"`` is no flag, ``3`` no name or spec), ``ValueError`` for a bad value."""

import numpy as np
import pytest
from refusals import assert_refused

from receptive import (
    FullAttention,
    GatedSAPlusSWA,
    NeighbourListPattern,
    SlidingWindow,
    StochasticAttention,
    coverage_by_layer,
    flash_attention_window_size,
    inverse_permutation,
    make_pattern,
    max_window,
    window_offsets,
)
from receptive.attention_graphs import attention_graph, union_graph
from receptive.bound.keys import distinct_keys
from receptive.coverage.compute import exact_fits, extend, target_positions
from receptive.fields import receptive_fields
from receptive.patterns.causal_variants import (
    KleinbergAttention,
    MultiScaleSA,
    heads_of,
    keys_per_query,
    make_variant,
    sa_expected_keys,
)
from receptive.patterns.content import random_qk, topk_routing
from receptive.patterns.hf_config import load_config, pattern_from_config
from receptive.patterns.registry import parse_layer, parse_stack, pattern_from_spec, stack_from_spec
from receptive.patterns.stack import LayerStack
from receptive.theory import (
    causal_full_probability,
    full_probability,
    median_layer,
    predict_full_layer,
    swa_coverage,
    swa_full_layer,
)
from receptive.validation import check_permutation


def swa():
    return make_pattern("swa", 32, 4)


CASES = [
    # 1. strict flags (causal, circular and the like): a bool or a numpy bool, never 1 or "yes"
    (lambda: make_pattern("swa", 32, 4, causal="yes"), TypeError, "causal"),
    (lambda: make_pattern("swa", 32, 4, circular=1), TypeError, "circular"),
    (lambda: make_pattern("full", 32, 1, circular="no"), TypeError, "circular"),
    (lambda: SlidingWindow(32, 4, causal=1), TypeError, "causal"),
    (lambda: FullAttention(8, causal=0), TypeError, "causal"),
    (lambda: StochasticAttention(32, 4, circular="y"), TypeError, "circular"),
    (lambda: NeighbourListPattern(2, [[1], [0]], per_layer=1), TypeError, "per_layer"),
    (lambda: make_variant("sa-ms", 32, 4, causal=1), TypeError, "causal"),
    (lambda: MultiScaleSA(32, 4, swa=1), TypeError, "swa"),
    (lambda: KleinbergAttention(32, 4, equal_keys="y"), TypeError, "equal_keys"),
    (lambda: KleinbergAttention(32, 4, circular=1), TypeError, "circular"),
    (lambda: stack_from_spec("swa:4", 32, 2, causal="y"), TypeError, "causal"),
    (lambda: pattern_from_spec("swa:4", 32, circular=1), TypeError, "circular"),
    (lambda: window_offsets(3, 1), TypeError, "causal"),
    (lambda: flash_attention_window_size(3, "a"), TypeError, "causal"),
    (lambda: max_window(8, 1, False), TypeError, "causal"),
    (lambda: max_window(8, True, None), TypeError, "circular"),
    (lambda: sa_expected_keys(8, 2, "y"), TypeError, "causal"),
    (lambda: swa_coverage(16, 3, 2, causal=1), TypeError, "causal"),
    (lambda: swa_full_layer(16, 3, circular="y"), TypeError, "circular"),
    (lambda: full_probability("sa", 64, 4, 3, causal=1), TypeError, "causal"),
    (lambda: causal_full_probability(64, 4, 3, swa=1), TypeError, "swa"),
    (lambda: coverage_by_layer(swa(), progress="x"), TypeError, "progress"),
    (lambda: attention_graph("swa", 16, 3, directed=1), TypeError, "directed"),
    (lambda: union_graph("swa", 16, 3, 2, causal="y"), TypeError, "causal"),
    (lambda: topk_routing(*random_qk(8, 4, seed=0), 2, causal=1), TypeError, "causal"),
    # 2. a wrong type is a TypeError naming the argument
    (lambda: coverage_by_layer(swa(), method=3), TypeError, "method"),
    (lambda: coverage_by_layer(swa(), targets="x"), TypeError, "targets"),
    (lambda: coverage_by_layer(swa(), targets=1.5), TypeError, "targets"),
    (lambda: coverage_by_layer(swa(), targets=[0.5, 1.5]), TypeError, "targets"),
    (lambda: coverage_by_layer(swa(), slab_size="x", method="exact"), TypeError, "slab_size"),
    (lambda: make_variant(5, 32, 4), TypeError, "name"),
    (lambda: make_pattern(3, 32, 4), TypeError, "name"),
    (lambda: stack_from_spec(3, 32, 4), TypeError, "stack"),
    (lambda: parse_stack(3), TypeError, "stack"),
    (lambda: parse_layer(3), TypeError, "stack"),
    (lambda: pattern_from_spec(3, 32), TypeError, "stack"),
    (lambda: inverse_permutation("abc"), TypeError, "perm"),
    (lambda: inverse_permutation([0.0, 1.0]), TypeError, "perm"),
    (lambda: full_probability(3, 64, 4, 3), TypeError, "name"),
    (lambda: predict_full_layer("sa", 64, 4, model=3), TypeError, "model"),
    (lambda: distinct_keys("sa", 1), TypeError, "pattern"),
    (lambda: distinct_keys(swa(), 1.0), TypeError, "layer"),
    # 3. no raw Python error: what would have been "has no len()", "unsupported operand" or an AttributeError
    (lambda: inverse_permutation(5), TypeError, "perm"),
    (lambda: make_pattern("sa", 32, 4, permutations=3), TypeError, "permutations"),
    (lambda: make_pattern("sa", 4, 2, permutations=[0, 1, 2, 3]), TypeError, "permutations[0]"),
    (lambda: max_window("x", True, False), TypeError, "n"),
    (lambda: keys_per_query(3), TypeError, "pattern"),
    (lambda: heads_of(8, "x"), TypeError, "w"),
    (lambda: NeighbourListPattern(4, 3), TypeError, "neighbours"),
    (lambda: LayerStack(3), TypeError, "period"),
    (lambda: LayerStack([swa()], name=3), TypeError, "name"),
    (lambda: extend(coverage_by_layer(swa(), 2), "x"), TypeError, "layers"),
    (lambda: extend("x", 3), TypeError, "result"),
    (lambda: exact_fits("x"), TypeError, "n"),
    (lambda: target_positions(3, "x"), TypeError, "n"),
    (lambda: receptive_fields(swa(), "x", 1), TypeError, "targets"),
    (lambda: median_layer("x"), TypeError, "probabilities"),
    (lambda: load_config(3), TypeError, "hf_config"),
    (lambda: pattern_from_config({}, "x"), TypeError, "n"),
    (lambda: GatedSAPlusSWA(32, 4, w_swa="x"), TypeError, "w_swa"),
    (lambda: MultiScaleSA(32, 4, swa=True, w_swa=2.0), TypeError, "w_swa"),
    (lambda: KleinbergAttention(32, 4, swa=True, w_swa="4"), TypeError, "w_swa"),
    # the values of the right type, as before: ValueError naming the argument
    (lambda: coverage_by_layer(swa(), method="magic"), ValueError, "method"),
    (lambda: coverage_by_layer(swa(), targets=[3, 32]), ValueError, "targets"),
    (lambda: coverage_by_layer(swa(), targets=[[1, 2]]), ValueError, "targets"),
    (lambda: coverage_by_layer(swa(), slab_size=0, method="exact"), ValueError, "slab_size"),
    (lambda: make_variant("sa-xx", 32, 4), ValueError, "name"),
    (lambda: stack_from_spec(" ", 32, 4), ValueError, "stack"),
    (lambda: stack_from_spec("swa:4", 32, 0), ValueError, "depth"),
    (lambda: inverse_permutation([0, 0]), ValueError, "perm"),
    (lambda: inverse_permutation([]), ValueError, "perm"),
    (lambda: inverse_permutation([[0, 1]]), ValueError, "perm"),
    (lambda: StochasticAttention(4, 2, permutations=[[0, 1, 2]]), ValueError, "permutations[0]"),
    (lambda: max_window(0, True, False), ValueError, "n"),
    (lambda: keys_per_query(swa(), 0), ValueError, "layer"),
    (lambda: heads_of(8, 0), ValueError, "w"),
    (lambda: extend(coverage_by_layer(swa(), 2), 0), ValueError, "layers"),
    (lambda: median_layer([[0.5]]), ValueError, "probabilities"),
    (lambda: KleinbergAttention(32, 4, circular=True), ValueError, "circular"),
]


@pytest.mark.parametrize(("call", "error", "name"), CASES)
def test_a_refused_argument_is_named_in_one_line(call, error, name):
    assert_refused(call, error, name)


def test_numpy_bools_and_size_strings_are_accepted():
    assert SlidingWindow(32, 4, causal=np.True_).causal is True
    assert make_pattern("sa", 32, 4, circular=np.bool_(True)).circular is True
    assert window_offsets(4, np.False_) == (2, 1)
    a = coverage_by_layer(make_pattern("sa", 64, 4, seed=1), method="exact", max_memory="64MiB", progress=False)
    b = coverage_by_layer(make_pattern("sa", 64, 4, seed=1), method="exact", max_memory=64 * 2**20, progress=False)
    assert a.full_coverage_layer == b.full_coverage_layer
    np.testing.assert_array_equal(check_permutation("perm", np.array([1, 0], dtype=np.int32)), [1, 0])
    np.testing.assert_array_equal(inverse_permutation(np.array([2, 0, 1])), [1, 2, 0])


def test_one_tqdm_disable_helper():
    """``_quiet`` lives in :mod:`graphs.reachability`; the sweep runner uses that one (receptive builds on graphs)."""
    import graphs.reachability
    import receptive.sweep.runner

    assert receptive.sweep.runner._quiet is graphs.reachability._quiet
    assert [graphs.reachability._quiet(p) for p in (None, True, False)] == [None, False, True]
