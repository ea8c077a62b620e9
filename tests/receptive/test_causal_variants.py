"""The causal SA variants (sa-ms, kleinberg, dilated) against dense definitions written with plain loops."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphs import forward_counts
from receptive.patterns.causal_variants import (
    DilatedHeads,
    KleinbergAttention,
    MultiScaleSA,
    block_permutation,
    default_blocks,
    dilation_permutation,
    keys_per_query,
    make_variant,
    sa_expected_keys,
    variant_names,
)
from tests.oracle import rf_sizes, sa_matrix, swa_matrix


def dense(pattern, layer):
    return pattern.adjacency(layer).toarray()


def edges(pattern, layer):
    a = pattern.adjacency(layer).tocoo()
    return a.row, a.col  # (query, key)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("swa", [False, True])
def test_multiscale_matches_the_union_of_sa_heads(causal, swa):
    n, w = 64, 4
    pat = MultiScaleSA(n, w, causal, seed=3, swa=swa)
    assert pat.blocks == [4, 16, 64]
    for layer in (1, 2):
        want = np.zeros((n, n), dtype=bool)
        for b in pat.blocks:
            want |= sa_matrix(block_permutation(n, b, 3, layer), w, causal, False)
        if swa:
            want |= swa_matrix(n, w, causal, False)
        np.testing.assert_array_equal(dense(pat, layer), want)
        q, k = edges(pat, layer)
        assert not causal or np.all(k <= q)


def test_multiscale_with_one_block_of_n_is_sa():
    from receptive import make_pattern

    for causal in (False, True):
        ms = MultiScaleSA(128, 8, causal, seed=5, blocks=[128])
        sa = make_pattern("sa", 128, 8, causal, seed=5)
        for layer in (1, 3):
            np.testing.assert_array_equal(dense(ms, layer), dense(sa, layer))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([(12, 3), (16, 4), (24, 6), (32, 32), (30, 5)]), st.integers(0, 50), st.integers(1, 4))
def test_block_permutations_are_permutations_within_blocks(nb, seed, layer):
    n, b = nb
    perm = block_permutation(n, b, seed, layer)
    np.testing.assert_array_equal(np.sort(perm), np.arange(n))
    np.testing.assert_array_equal(perm // b, np.arange(n) // b)  # block k holds exactly its own positions
    np.testing.assert_array_equal(perm, block_permutation(n, b, seed, layer))


def test_block_permutations_are_uniform_within_a_block():
    # where position 0 lands inside its block of 4, over many layers: uniform (chi-square, fixed seeds)
    lands = np.array([int(np.flatnonzero(block_permutation(16, 4, 0, layer) == 0)[0]) for layer in range(1, 801)])
    counts = np.bincount(lands, minlength=4)
    assert counts.sum() == 800 and np.all(np.abs(counts - 200) < 45)


@pytest.mark.parametrize("causal", [False, True])
def test_dilated_heads_are_strided_windows(causal):
    n, w = 50, 3
    pat = DilatedHeads(n, w, causal)
    assert pat.dilations == [1, 3, 9, 27]
    want = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for r in pat.dilations:
            span = range(0, w) if causal else range(-(w // 2), (w - 1) // 2 + 1)
            for t in span:
                j = i - r * t
                if 0 <= j < n:
                    want[i, j] = True
    np.testing.assert_array_equal(dense(pat, 1), want)
    np.testing.assert_array_equal(dense(pat, 2), want)  # deterministic


def test_dilated_causal_covers_within_log_w_n_layers():
    for n, w in ((64, 4), (81, 3), (100, 4)):
        pat = DilatedHeads(n, w, causal=True)
        mats = [dense(pat, 1)] * len(pat.dilations)
        sizes = rf_sizes(mats)
        assert np.array_equal(sizes[-1], np.arange(1, n + 1)), (n, w)


def test_dilation_permutation_holes_separate_residue_classes():
    perm = dilation_permutation(10, 3, 2)
    np.testing.assert_array_equal(perm, [0, 3, 6, 9, -1, -1, 1, 4, 7, -1, -1, 2, 5, 8, -1, -1])
    np.testing.assert_array_equal(dilation_permutation(7, 1, 5), np.arange(7))


@pytest.mark.parametrize("causal", [False, True])
def test_kleinberg_keys_follow_the_definition(causal):
    n, w = 200, 6
    pat = KleinbergAttention(n, w, causal, seed=2)
    keys = pat.sample_keys(1)
    assert keys.shape == (n, w - 1)
    i = np.arange(n)[:, None]
    assert np.all((keys >= 0) & (keys < n))
    if causal:
        assert np.all(keys <= i)
        assert np.all(keys[1:] < i[1:])  # every query but the first has a strictly earlier key
    want = np.zeros((n, n), dtype=bool)
    for q in range(n):
        want[q, q] = True
        for k in keys[q]:
            want[q, k] = True
    np.testing.assert_array_equal(dense(pat, 1), want)
    q, k = edges(pat, 1)
    assert not causal or np.all(k <= q)
    assert not np.array_equal(keys, pat.sample_keys(2))


def test_kleinberg_distance_law_is_log_uniform():
    n = 4096
    pat = KleinbergAttention(n, 33, causal=True, seed=0)
    q = np.arange(n)[:, None]
    d = (q - pat.sample_keys(1))[n - 1024 :].ravel()  # queries far from the start: D >= 3071
    # each dyadic scale [2^k, 2^(k+1)) gets the same share ln 2 / ln(D + 1) ~ 0.086 of the keys
    shares = np.array([np.mean((d >= 2**k) & (d < 2 ** (k + 1))) for k in range(11)])
    assert np.all(np.abs(shares - np.log(2) / np.log(3584)) < 0.012), shares


@pytest.mark.parametrize("name", variant_names())
@pytest.mark.parametrize("causal", [False, True])
def test_every_variant_never_looks_ahead_and_matches_the_engine(name, causal):
    n, w = 48, 4
    pat = make_variant(name, n, w, causal, seed=1)
    mats = [dense(pat, layer) for layer in (1, 2, 3)]
    for layer, m in enumerate(mats, 1):
        q, k = edges(pat, layer)
        assert np.all(np.diag(m)), "every query attends to itself"
        assert not causal or np.all(k <= q), f"{name}: a key after its query"
    sizes = rf_sizes(mats)
    counts = forward_counts(pat.layer_ops, n, max_layers=3, causal=causal).counts
    np.testing.assert_array_equal(counts[: len(sizes)], sizes[: len(counts)])


def test_equal_key_versions_match_sa_keys_per_query():
    n, w = 4096, 16
    for causal in (False, True):
        target = sa_expected_keys(n, w, causal)
        for name in ("sa-ms-eq", "kleinberg-eq"):
            keys = keys_per_query(make_variant(name, n, w, causal), 1)
            assert abs(keys - target) / target < 0.2, (name, causal, keys, target)
    from receptive import make_pattern

    assert abs(keys_per_query(make_pattern("sa", n, w, True), 1) - sa_expected_keys(n, w, True)) < 0.2


def test_bad_input_gets_one_line_errors():
    cases = [
        (lambda: MultiScaleSA(64, 4, blocks=[5, 64]), "blocks"),
        (lambda: MultiScaleSA(64, 4, blocks=[128]), "blocks"),
        (lambda: MultiScaleSA(64, 4, blocks=[]), "blocks"),
        (lambda: MultiScaleSA(64, 0), "w"),
        (lambda: KleinbergAttention(64, 0), "w"),
        (lambda: DilatedHeads(64, 0), "w"),
        (lambda: make_variant("sa-xx", 64, 4), "name"),
        (lambda: block_permutation(64, 7, 0, 1), "block"),
        (lambda: KleinbergAttention(64, 4, circular=True), "circular"),
    ]
    for build, arg in cases:
        with pytest.raises(ValueError) as info:
            build()
        msg = str(info.value)
        assert msg.startswith(arg + ":") and "\n" not in msg, msg


def test_default_blocks():
    assert default_blocks(2**12, 8) == [8, 64, 512, 4096]
    assert default_blocks(1000, 10) == [10, 100, 1000]
    assert default_blocks(96, 8) == [8, 96]  # 64 does not divide 96


def strided_matrix(n, dilations, head_w, causal, w_swa=None):
    """Dense oracle of the dilated heads written from the definition: key i + r t for every dilation r and every t
    in the head's window (``-(h-1)..0`` causal, ``-(h//2)..(h-1)//2`` two-sided), plus a sliding window of ``w_swa``."""
    span = range(-(head_w - 1), 1) if causal else range(-(head_w // 2), (head_w - 1) // 2 + 1)
    want = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for r in dilations:
            for t in span:
                if 0 <= i + r * t < n:
                    want[i, i + r * t] = True
    if w_swa is not None:
        want |= swa_matrix(n, w_swa, causal, False)
    return want


def oracle_full_layer(mat, max_layers):
    sizes = rf_sizes([mat] * max_layers)
    full = np.flatnonzero(np.all(sizes == mat.shape[0], axis=1))
    return int(full[0]) + 1 if full.size else None


# (n, w) where the equal-keys share 1 + round((w - 1)/H) is 2 keys: a bidirectional head takes 3, one on each side
@pytest.mark.parametrize("n, w", [(20, 3), (27, 3), (48, 4), (64, 4), (100, 5), (125, 5)])
def test_bidirectional_dilated_eq_heads_look_both_ways_and_cover(n, w):
    for swa in (False, True):
        pat = DilatedHeads(n, w, causal=False, swa=swa, equal_keys=True)
        assert 1 + round((w - 1) / len(pat.dilations)) == 2 and pat.head_w == 3
        assert (pat.head_left, pat.head_right) == (1, 1)
        want = strided_matrix(n, pat.dilations, 3, False, w if swa else None)
        np.testing.assert_array_equal(dense(pat, 1), want)
        full = oracle_full_layer(want, 40)
        assert full is not None
        assert forward_counts(pat.layer_ops, n, max_layers=40, causal=False).full_layer == full
    # a two-key head (window_offsets(2, False) = (1, 0)) never looks ahead: never full
    two_keys = DilatedHeads(n, w, causal=False, head_w=2)
    assert oracle_full_layer(strided_matrix(n, two_keys.dilations, 2, False), 40) is None
    assert forward_counts(two_keys.layer_ops, n, max_layers=40, causal=False).full_layer is None


def test_bidirectional_dilated_eq_covers_where_two_key_heads_cannot():
    # w = 8 from n = 2^13 on: 5 dilations, so the equal-keys share 1 + round(7/5) is 2 keys per head
    # (the exact L* against a dense oracle: the parametrised test above, at small n)
    n, w = 2**13, 8
    for name in ("dilated-eq", "dilated+swa-eq"):
        pat = make_variant(name, n, w, causal=False)
        assert pat.dilations == [1, 8, 64, 512, 4096] and pat.head_w == 3
        assert forward_counts(pat.layer_ops, n, max_layers=64, causal=False).full_layer is not None
        two_keys = DilatedHeads(n, w, causal=False, swa=pat.swa is not None, head_w=2)
        assert forward_counts(two_keys.layer_ops, n, max_layers=64, causal=False).full_layer is None
    # keys per query: 1 + 2H away from the edges, above SA's w
    pat = make_variant("dilated-eq", 2**14, w, causal=False)
    assert pat.offsets().tolist() == sorted({r * t for r in pat.dilations for t in (-1, 0, 1)})
    assert len(pat.offsets()) == 1 + 2 * 5
    assert abs(pat.mean_keys() - keys_per_query(pat, 1)) < 1e-9
    assert 10 < pat.mean_keys() < 11 and sa_expected_keys(2**14, w, False) == 8


def test_causal_dilated_eq_heads_are_unchanged():
    # causal heads look back only, so two keys suffice: head_w = max(2, 1 + round(((w + 1)//2 - 1)/H))
    for n in (2**10, 2**12, 2**14, 2**16, 2**20):
        for w in (8, 32, 64, 128, 256):
            if w >= n:
                continue
            for name in ("dilated-eq", "dilated+swa-eq"):
                pat = make_variant(name, n, w, causal=True)
                assert pat.head_w == max(2, 1 + round(((w + 1) // 2 - 1) / len(pat.dilations)))
                assert (pat.head_left, pat.head_right) == (pat.head_w - 1, 0)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 90),
    st.integers(2, 9),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.one_of(st.none(), st.integers(1, 6)),
)
def test_dilated_mean_keys_matches_the_edge_count(n, w, causal, swa, equal, head_w):
    w = min(w, n)
    pat = DilatedHeads(n, w, causal, swa=swa, equal_keys=equal, head_w=None if head_w is None else min(head_w, n))
    want = strided_matrix(n, pat.dilations, pat.head_w, causal, w if swa else None)
    np.testing.assert_array_equal(dense(pat, 1), want)
    assert abs(pat.mean_keys() - want.sum() / n) < 1e-9
    assert abs(pat.mean_keys() - keys_per_query(pat, 1)) < 1e-9


def test_equal_key_window_floor_and_bad_minimum():
    from receptive.patterns.causal_variants import equal_key_window

    assert equal_key_window(8, 5) == 2 and equal_key_window(8, 5, 3) == 3 and equal_key_window(8, 2, 3) == 5
    with pytest.raises(ValueError, match=r"^minimum:"):
        equal_key_window(8, 5, 0)
    with pytest.raises(ValueError, match=r"^circular:"):
        DilatedHeads(64, 4, circular=True).offsets()


@pytest.mark.parametrize("causal", [False, True])
def test_dilated_default_head_window_fits_a_short_sequence(causal):
    from receptive.patterns.dilated_heads import DilatedHeads

    pattern = DilatedHeads(2, 2, causal=causal, equal_keys=True)
    assert pattern.head_w <= 2
