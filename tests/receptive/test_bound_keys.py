"""Distinct keys per query (``receptive.bound.keys`` and ``causal_variants.keys_per_query``) against a dense
oracle written from the operators' definitions with plain loops, on many small random cases of every variant."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from graphs.ops import BlockOp, NeighbourOp, WindowOp
from receptive.bound.keys import SMALL_BYTES, SMALL_BYTES_PER_OP, distinct_keys, mean_distinct_keys, memory_bytes
from receptive.patterns import PATTERNS, make_pattern
from receptive.patterns.causal_variants import keys_per_query, variant_names
from tests.oracle import window_matrix

NAMES = ["sa", "sa+swa", "swa", *variant_names()]


def layer_matrix(pattern, layer: int) -> np.ndarray:
    """The layer's ``n x n`` boolean matrix (query, key), the union of its operators' edges."""
    n = pattern.n
    mat = np.zeros((n, n), dtype=bool)
    for op in pattern.layer_ops(layer):
        if isinstance(op, WindowOp):
            mat |= window_matrix(n, op.perm, op.left, op.right, op.circular, op.order)
        elif isinstance(op, NeighbourOp):
            for i in range(n):
                for j in op.indices[op.indptr[i] : op.indptr[i + 1]]:
                    mat[i, j] = True
        else:
            raise AssertionError(f"no oracle for {type(op).__name__}")
    return mat


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(NAMES),
    st.booleans(),
    st.booleans(),
    st.integers(8, 120),
    st.integers(2, 20),
    st.integers(0, 10_000),
    st.integers(1, 3),
)
def test_keys_per_query_matches_the_dense_oracle(name, causal, circular, n, w, seed, layer):
    w = min(w, n - 1)
    if circular and (causal or name.startswith("kleinberg")):
        circular = False  # causal patterns are not circular; Kleinberg refuses circular
    pat = make_pattern(name, n, w, causal, circular=circular, seed=seed)
    mat = layer_matrix(pat, layer)
    want = mat.sum(axis=1)
    assert np.all(np.diag(mat)), "every query attends to itself"
    assert not causal or not np.triu(mat, 1).any(), "a causal key after its query"
    np.testing.assert_array_equal(distinct_keys(pat, layer), want)
    assert keys_per_query(pat, layer) == want.sum() / n
    assert mean_distinct_keys(pat, layer) == want.sum() / n


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("causal", [False, True])
def test_fast_count_matches_the_adjacency_at_larger_n(name, causal):
    for n, w, seed in ((4096, 32, 1), (2**14, 8, 7)):
        pat = make_pattern(name, n, w, causal, seed=seed)
        np.testing.assert_array_equal(distinct_keys(pat, 1), np.diff(pat.adjacency(1).indptr))


class Ops:
    """A pattern made of given operators (every layer the same)."""

    def __init__(self, n, ops):
        self.n, self.ops = n, tuple(ops)

    def layer_ops(self, layer):
        return self.ops

    def adjacency(self, layer):
        raise AssertionError("the fast path must not build the adjacency")


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 40), st.integers(0, 10_000), st.data())
def test_holes_wrapping_orders_and_several_neighbour_lists(n, seed, data):
    rng = np.random.default_rng(seed)
    ops = []
    for _ in range(data.draw(st.integers(0, 3))):
        holes = data.draw(st.integers(0, 6))
        perm = np.concatenate([rng.permutation(n), np.full(holes, -1)])
        perm = rng.permutation(perm) if data.draw(st.booleans()) else perm
        ops.append(
            WindowOp(
                data.draw(st.integers(0, 5)),
                data.draw(st.integers(0, 5)),
                data.draw(st.booleans()),
                perm if data.draw(st.booleans()) else None,
                data.draw(st.sampled_from([-1, 0, 1])),
            )
        )
    for _ in range(data.draw(st.integers(0 if ops else 1, 2))):
        lists = [rng.integers(0, n, rng.integers(0, 6)).tolist() for _ in range(n)]  # repeats allowed
        ops.append(NeighbourOp.from_lists(lists, n))
    pat = Ops(n, rng.permutation(np.array(ops, dtype=object)).tolist())
    want = layer_matrix(pat, 1).sum(axis=1)
    np.testing.assert_array_equal(distinct_keys(pat, 1), want)


@njit
def _allocate(m):
    return np.full(m, -1, dtype=np.int64).sum()


def traced_peak(call) -> int:
    """``tracemalloc``'s peak traced bytes during ``call()``, after one warm-up call (compilation, lazy caches)."""
    call()
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def hidden_kernel_bytes(n: int) -> int:
    """The kernel's stamp array (``8 n``) when numba allocates outside ``tracemalloc``'s view, else 0."""
    m = 2**16
    return 0 if traced_peak(lambda: _allocate(m)) >= 8 * m else 8 * n


def check_peak(pat) -> None:
    """Traced peak (plus the stamp array if untraced) of one call of each public counter within
    ``memory_bytes``, and above its large arrays alone (``memory_bytes`` less the small-object allowance), so that
    the estimate is neither low nor loose."""
    bound = memory_bytes(pat, 1)
    large = bound - SMALL_BYTES - SMALL_BYTES_PER_OP * len(pat.layer_ops(1))
    for call in (lambda: distinct_keys(pat, 1), lambda: mean_distinct_keys(pat, 1)):
        peak = traced_peak(call) + hidden_kernel_bytes(pat.n)
        assert large <= peak <= bound, (peak, large, bound)


@pytest.mark.parametrize("name", ["sa", "sa+swa", "swa", "sa-ms+swa-eq", "kleinberg+swa-eq", "dilated+swa-eq"])
@pytest.mark.parametrize("causal", [False, True])
def test_memory_bytes_bounds_the_traced_peak(name, causal):
    pat = make_pattern(name, 2**14, 8, causal, seed=3)
    check_peak(pat)


@pytest.mark.parametrize("seed", range(6))
def test_memory_bytes_counts_the_copies_of_other_dtypes_and_identities(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    ops = []
    for _ in range(rng.integers(1, 4)):
        perm = np.concatenate([rng.permutation(n), np.full(rng.integers(0, 50), -1)])
        perm = rng.permutation(perm).astype(rng.choice([np.int32, np.int64]))
        ops.append(WindowOp(int(rng.integers(0, 4)), int(rng.integers(0, 4)), False, perm if seed % 3 else None))
    for _ in range(rng.integers(0 if seed % 2 else 1, 3)):
        nb = NeighbourOp.from_lists([rng.integers(0, n, rng.integers(0, 5)).tolist() for _ in range(n)], n)
        dtype = rng.choice([np.int32, np.int64])
        ops.append(NeighbourOp(nb.indptr.astype(dtype), nb.indices.astype(dtype)))
    pat = Ops(n, ops)
    np.testing.assert_array_equal(distinct_keys(pat, 1), layer_matrix(pat, 1).sum(axis=1))
    check_peak(pat)


def test_other_operators_and_repeated_indices_fall_back_to_the_adjacency():
    class WithAdjacency(Ops):
        def adjacency(self, layer):
            from receptive.patterns.base import Pattern

            return Pattern.adjacency(self, layer)

        def _check_layer(self, layer):
            return layer

    n = 12
    block = BlockOp(np.array([0, 6, 12]), np.array([0, 0, 1]), np.array([0]))
    twice = WindowOp(1, 1, False, np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0]))  # index 0 at two places
    for ops in ([block, WindowOp(1, 0)], [twice]):
        pat = WithAdjacency(n, ops)
        adjacency = pat.adjacency(1).toarray()
        np.testing.assert_array_equal(distinct_keys(pat, 1), adjacency.sum(axis=1))
        if ops[0] is twice:
            np.testing.assert_array_equal(adjacency, window_matrix(n, twice.perm, 1, 1, False, 0))


def test_bad_arguments_get_one_line_errors():
    pat = make_pattern("sa", 64, 8, True)
    for call, arg, error in (
        (lambda: distinct_keys(pat, 0), "layer", ValueError),
        (lambda: distinct_keys(pat, True), "layer", TypeError),
        (lambda: distinct_keys(pat, 1.0), "layer", TypeError),
        (lambda: distinct_keys("sa", 1), "pattern", TypeError),
        (lambda: mean_distinct_keys(object()), "pattern", TypeError),
        (lambda: memory_bytes(pat, -1), "layer", ValueError),
        (lambda: distinct_keys(Ops(4, [WindowOp(1, 1, False, np.array([0, 1, 2, 7]))]), 1), "pattern", ValueError),
        (
            lambda: distinct_keys(Ops(4, [NeighbourOp(np.array([0, 1, 2, 3, 4]), np.array([0, 1, 2, 4]))]), 1),
            "pattern",
            ValueError,
        ),
        (
            lambda: distinct_keys(Ops(4, [NeighbourOp(np.array([0, 1, 2, 4]), np.array([0, 1, 2, 3]))]), 1),
            "pattern",
            ValueError,
        ),
    ):
        with pytest.raises(error) as info:
            call()
        assert str(info.value).startswith(arg + ":") and "\n" not in str(info.value)


def test_registered_names_cover_the_variants():
    assert set(NAMES) <= set(PATTERNS)
