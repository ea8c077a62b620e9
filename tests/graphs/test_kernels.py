"""The numba kernels against numpy on random bitsets, with chunk and tile sizes that cross every boundary."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphs import WindowOp, kernels
from tests.oracle import propagate, window_matrix


def random_bits(rng, n, n_words):
    return rng.integers(0, 2**64, size=(n, n_words), dtype=np.uint64, endpoint=False)


@given(
    n=st.integers(1, 70),
    n_words=st.integers(1, 20),
    left=st.integers(0, 80),
    right=st.integers(0, 80),
    circular=st.booleans(),
    permuted=st.booleans(),
    holes=st.integers(0, 30),
    order=st.sampled_from([0, 1, -1]),
    chunk=st.integers(1, 40),
    tile=st.integers(1, 24),
    seed=st.integers(0, 2**16),
)
def test_window_kernels_match_definition(n, n_words, left, right, circular, permuted, holes, order, chunk, tile, seed):
    rng = np.random.default_rng(seed)
    bits = random_bits(rng, n, n_words)
    perm = rng.permutation(n).astype(np.int64) if permuted else np.empty(0, dtype=np.int64)
    if permuted and holes:  # a virtual sequence: -1 entries at random places
        perm = np.insert(perm, rng.integers(0, n + 1, size=holes), -1)
    expect = propagate(bits, window_matrix(n, perm, left, right, circular, order))
    for accumulate in (False, True):
        base = random_bits(rng, n, n_words)
        out = base.copy()
        if order == 0:
            kernels.window_or(bits, out, perm, left, right, circular, accumulate, chunk, tile)
        else:
            kernels.window_or_ordered(bits, out, perm, left, right, circular, order, accumulate, chunk, tile)
        np.testing.assert_array_equal(out, expect | base if accumulate else expect)
    if order == 0:  # streaming stores, forced on a small slab
        out = random_bits(rng, n, n_words)
        kernels.window_or(bits, out, perm, left, right, circular, False, chunk, tile, 0)
        np.testing.assert_array_equal(out, expect)


def offset_slab(rng, n, n_words, offset):
    """A C-contiguous random slab whose data start ``offset`` words past a 64-byte boundary (rows of every
    alignment when ``n_words`` is not a multiple of 8)."""
    raw = np.empty(n * n_words + 16, dtype=np.uint64)
    start = (-(raw.ctypes.data // 8) % 8 + offset) % 8
    slab = raw[start : start + n * n_words].reshape(n, n_words)
    slab[:] = random_bits(rng, n, n_words)
    return slab


def test_window_kernels_match_dense_oracle():
    """Many fixed-seed random cases against a dense boolean matrix product: bidirectional (``window_or``) and causal
    (``window_or_ordered``, both directions), truncated and circular, identity and permuted orders, holes, windows
    longer than the sequence, plain, streaming and accumulating stores, output rows of every alignment, as the
    engine calls the kernels (``WindowOp.apply``) and directly with chunk and tile sizes that cross every boundary."""
    rng = np.random.default_rng(20261130)
    for case in range(300):
        n = int(rng.integers(1, 90))
        n_words = int(rng.integers(1, 27))
        left, right = (int(v) for v in rng.integers(0, 40, size=2))
        circular = bool(rng.integers(2))
        order = int(rng.choice([0, 0, 1, -1]))
        perm = None
        if rng.integers(4):
            perm = rng.permutation(n).astype(np.int64)
            if rng.integers(2):
                perm = np.insert(perm, rng.integers(0, n + 1, size=int(rng.integers(1, 30))), -1)
        bits = random_bits(rng, n, n_words)
        expect = propagate(bits, window_matrix(n, perm, left, right, circular, order))
        op = WindowOp(left, right, circular, perm, order)
        out = offset_slab(rng, n, n_words, case % 8)
        op.apply(bits, out, False)
        np.testing.assert_array_equal(out, expect, err_msg=f"case {case}: WindowOp.apply")
        base = offset_slab(rng, n, n_words, (case + 3) % 8)
        out = base.copy()
        op.apply(bits, out, True)
        np.testing.assert_array_equal(out, expect | base, err_msg=f"case {case}: WindowOp.apply, accumulate")
        if order == 0:
            chunk, tile = int(rng.integers(1, 2 * n + 2)), int(rng.integers(1, n_words + 9))
            flat = np.empty(0, np.int64) if perm is None else perm
            for stream_bytes in (0, 2**62):
                out = offset_slab(rng, n, n_words, (case + 5) % 8)
                kernels.window_or(bits, out, flat, left, right, circular, False, chunk, tile, stream_bytes)
                np.testing.assert_array_equal(out, expect, err_msg=f"case {case}: stream_bytes {stream_bytes}")


def test_window_or_streams_a_large_slab():
    """A slab of at least ``WINDOW_OR_STREAM_BYTES`` goes through the streaming-store path with the engine's own
    tiling; it must equal the plain-store path on the same input (each checked against the other, and one row
    against the definition)."""
    n, w = 4096, 64
    n_words = -(-kernels.WINDOW_OR_STREAM_BYTES // (8 * n)) + 3  # just over the threshold, rows not 64-byte multiples
    rng = np.random.default_rng(7)
    bits = random_bits(rng, n, n_words)
    perm = rng.permutation(n).astype(np.int64)
    chunk, tile = kernels.window_or_tiling(n, w + 1, n_words)
    streamed, plain = np.empty_like(bits), np.empty_like(bits)
    assert streamed.nbytes >= kernels.WINDOW_OR_STREAM_BYTES
    kernels.window_or(bits, streamed, perm, w // 2, w // 2, False, False, chunk, tile)
    kernels.window_or(bits, plain, perm, w // 2, w // 2, False, False, chunk, tile, 2**62)
    np.testing.assert_array_equal(streamed, plain)
    p = 1000
    np.testing.assert_array_equal(streamed[perm[p]], np.bitwise_or.reduce(bits[perm[p - w // 2 : p + w // 2 + 1]]))


def test_window_or_rejects_bad_arguments():
    bits = np.zeros((8, 3), dtype=np.uint64)
    out = np.zeros_like(bits)
    perm = np.arange(8)
    good = (bits, out, perm, 1, 1, False, False, 4, 2)
    kernels.window_or(*good)
    bad = {
        "bits": (bits.astype(np.int64), *good[1:]),
        "out": (bits, bits, *good[2:]),
        "perm": (bits, out, np.arange(8) + 1, *good[3:]),
        "left": (*good[:3], -1, *good[4:]),
        "right": (*good[:4], 1.5, *good[5:]),
        "chunk_len": (*good[:7], 0, 2),
        "tile": (*good[:8], 0),
    }
    for name, args in bad.items():
        error = TypeError if name == "right" else ValueError  # right=1.5: a float where an integer is wanted
        with pytest.raises(error, match=rf"^{name}:"):
            kernels.window_or(*args)
    with pytest.raises(ValueError, match=r"^out:"):
        kernels.window_or(bits, np.zeros((8, 6), np.uint64)[:, ::2], perm, 1, 1, False, False, 4, 2)
    with pytest.raises(ValueError, match=r"^stream_bytes:"):
        kernels.window_or(*good, -1)


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
