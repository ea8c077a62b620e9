"""The numba kernels against numpy on random bitsets, with chunk and tile sizes that cross every boundary."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from graphs import kernels


def random_bits(rng, n, n_words):
    return rng.integers(0, 2**64, size=(n, n_words), dtype=np.uint64, endpoint=False)


def window_oracle(bits, perm, left, right, circular, order):
    n = bits.shape[0]
    perm = np.arange(n) if perm.size == 0 else perm
    length = perm.size  # holes (-1) make a virtual sequence longer than n
    out = np.zeros_like(bits)
    for p in range(length):
        dst = perm[p]
        if dst < 0:
            continue
        for x in range(p - left, p + right + 1):
            if circular:
                x %= length
            elif not 0 <= x < length:
                continue
            src = perm[x]
            if src < 0 or (order > 0 and src > dst) or (order < 0 and src < dst):
                continue
            out[dst] |= bits[src]
    return out


@given(
    n=st.integers(1, 70),
    n_words=st.integers(1, 5),
    left=st.integers(0, 80),
    right=st.integers(0, 80),
    circular=st.booleans(),
    permuted=st.booleans(),
    holes=st.integers(0, 30),
    order=st.sampled_from([0, 1, -1]),
    chunk=st.integers(1, 40),
    tile=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_window_kernels_match_definition(n, n_words, left, right, circular, permuted, holes, order, chunk, tile, seed):
    rng = np.random.default_rng(seed)
    bits = random_bits(rng, n, n_words)
    perm = rng.permutation(n).astype(np.int64) if permuted else np.empty(0, dtype=np.int64)
    if permuted and holes:  # a virtual sequence: -1 entries at random places
        perm = np.insert(perm, rng.integers(0, n + 1, size=holes), -1)
    expect = window_oracle(bits, perm, left, right, circular, order)
    for accumulate in (False, True):
        base = random_bits(rng, n, n_words)
        out = base.copy()
        if order == 0:
            kernels.window_or(bits, out, perm, left, right, circular, accumulate, chunk, tile)
        else:
            kernels.window_or_ordered(bits, out, perm, left, right, circular, order, accumulate, chunk, tile)
        np.testing.assert_array_equal(out, expect | base if accumulate else expect)


@given(n=st.integers(1, 50), n_words=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_neighbour_or_and_popcounts(n, n_words, seed):
    rng = np.random.default_rng(seed)
    bits = random_bits(rng, n, n_words)
    lists = [rng.choice(n, size=rng.integers(0, n + 1), replace=False) for _ in range(n)]
    indptr = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64)
    indices = np.concatenate([np.asarray(x, dtype=np.int64) for x in lists] + [np.empty(0, np.int64)])
    out = np.full_like(bits, 12345)
    kernels.neighbour_or(bits, out, indptr, indices, False)
    for i in range(n):
        expect = np.bitwise_or.reduce(bits[lists[i]], axis=0) if len(lists[i]) else np.zeros(n_words, np.uint64)
        np.testing.assert_array_equal(out[i], expect)
    unpacked = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")
    np.testing.assert_array_equal(kernels.row_popcounts(bits), unpacked.sum(axis=1))
    np.testing.assert_array_equal(kernels.column_popcounts(bits), unpacked.sum(axis=0))


def test_column_popcounts_flushes_lane_counters():
    """More than 255 rows with the same bit set must not overflow the 8-bit lanes."""
    bits = np.full((3000, 2), np.uint64(2**64 - 1), dtype=np.uint64)
    bits[::7, 1] = 0
    counts = kernels.column_popcounts(bits)
    assert np.all(counts[:64] == 3000)
    assert np.all(counts[64:] == 3000 - len(range(0, 3000, 7)))
