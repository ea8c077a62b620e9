"""The generation-form key sets against dense boolean oracles, and their attention against float64 dense attention."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gpu.approx import approximate
from gpu.attention.generation_keys import position_keys, sa_band
from gpu.attention.generation_patterns import GENERATION_METHODS, generation_attention, mean_keys_read
from gpu.attention.oracle import dense_oracle
from receptive.windows import window_offsets


def band_oracle(n: int, w: int, rank: np.ndarray) -> np.ndarray:
    """Dense ``(n, n)``: query ``i`` reads the past keys whose rank among ``0..i`` (by ``rank``) is within its band."""
    left, right = window_offsets(w, False)
    keep = np.zeros((n, n), dtype=bool)
    for i in range(n):
        past = sorted(range(i + 1), key=lambda j: rank[j])
        own = past.index(i)
        for r, j in enumerate(past):
            keep[i, j] = -left <= r - own <= right
    return keep


def dense(idx, valid, n):
    keep = np.zeros((idx.shape[-2], n), dtype=bool)
    for row, (i, v) in enumerate(zip(idx.numpy(), valid.numpy(), strict=True)):
        keep[row, i[v]] = True
    return keep


@given(n=st.integers(1, 40), w=st.integers(1, 12), seed=st.integers(0, 10**6))
def test_sa_band_equals_the_dense_oracle(n, w, seed):
    rank = torch.from_numpy(np.random.default_rng(seed).permutation(n + 3))  # drawn over a longer max_length
    idx, valid = sa_band(torch.arange(n), n, w, rank)
    assert np.array_equal(dense(idx, valid, n), band_oracle(n, w, rank.numpy()))


@given(n=st.integers(1, 40), m=st.integers(1, 16), seed=st.integers(0, 50))
def test_local_sink_and_shortcuts_is_the_union_of_its_parts(n, m, seed):
    from receptive.permutations import layer_permutation

    rank = np.argsort(layer_permutation(64, seed, 1))  # the permuted position of each token over max_length 64
    idx, valid = position_keys("swa+sink+sa", torch.arange(n), n, m, 1, seed, 64)
    shortcuts = max(1, m // 4)
    local = max(1, m - shortcuts - 1)
    rows, cols = np.indices((n, n))
    expected = ((cols <= rows) & (rows - cols < local)) | ((cols == 0) & (rows >= 0))
    expected |= band_oracle(n, shortcuts, rank)
    assert np.array_equal(dense(idx[0], valid[0], n), expected)


@given(n=st.integers(1, 30), m=st.integers(1, 10), seed=st.integers(0, 50))
def test_no_row_reads_a_later_key_or_a_key_twice(n, m, seed):
    positions = torch.arange(n)
    for method in ("swa", "swa+sink", "sa", "sa+sink", "sa+swa-union", "swa+sink+sa", "sa-ms"):
        idx, valid = position_keys(method, positions, n, m, 3, seed, 64)
        assert bool((idx[valid] <= positions[:, None].expand_as(idx[0])[None].expand_as(idx)[valid]).all())
        for head in range(3):
            for i, v in zip(idx[head], valid[head], strict=True):
                assert len(set(i[v].tolist())) == int(v.sum())


@given(n=st.integers(1, 30), w=st.integers(1, 12), seed=st.integers(0, 50), band=st.booleans())
def test_the_sink_added_to_a_key_set_equals_the_sorted_dedupe(n, w, seed, band):
    from gpu.attention.generation_keys import window, with_sink
    from gpu.attention.neighbour import dedupe

    positions = torch.arange(n)
    rank = torch.from_numpy(np.random.default_rng(seed).permutation(n + 3))
    keys = sa_band(positions, n, w, rank) if band else window(positions, w)
    idx, valid = with_sink(*keys)
    expected = dedupe(idx, torch.cat([torch.ones_like(valid[:, :1]), keys[1]], -1))
    assert torch.equal(valid, expected)
    assert bool(valid[:, 0].all()) and torch.equal(idx[:, 0], torch.zeros(n, dtype=idx.dtype))


@given(
    n=st.integers(1, 30), w=st.integers(1, 12), band_w=st.integers(1, 12), seed=st.integers(0, 50), sink=st.booleans()
)
def test_the_union_with_a_window_is_the_set_union_counted_once(n, w, band_w, seed, sink):
    from gpu.attention.generation_keys import union_with_window

    positions = torch.arange(n)
    rank = torch.from_numpy(np.random.default_rng(seed).permutation(n + 3))
    band = sa_band(positions, n, band_w, rank)
    idx, valid = union_with_window(band, positions, w, sink=sink)
    rows, cols = np.indices((n, n))
    expected = dense(*band, n) | ((cols <= rows) & (rows - cols < w)) | ((cols == 0) & sink)
    assert np.array_equal(dense(idx, valid, n), expected)
    for i, v in zip(idx, valid, strict=True):
        assert len(set(i[v].tolist())) == int(v.sum())


def test_rows_do_not_depend_on_later_tokens():
    """The keys of the first 20 positions are the same with 20 tokens present as with 50."""
    for method in ("sa", "sa+sink", "sa+swa-union", "swa+sink+sa", "sa-ms"):
        short = position_keys(method, torch.arange(20), 20, 5, 4, 7, 64)
        long = position_keys(method, torch.arange(20), 50, 5, 4, 7, 64)
        for a, b in zip(short, long, strict=True):
            assert torch.equal(a, b)


def test_sa_reads_about_its_whole_band():
    """Past the first tokens a query reads nearly ``w`` keys (the lab's causal SA keeps about half)."""
    assert mean_keys_read("sa", 2048, 64, max_length=8192) > 0.95 * 64
    assert mean_keys_read("swa", 2048, 64) == pytest.approx(64 - 63 * 64 / 2 / 2048)


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((3, 8, 2), TypeError, r"^method:"),
        (("moba", 8, 2), ValueError, r"^method:"),
        (("swa", 8, "2"), TypeError, r"^budget:"),
        (("swa", 0, 2), ValueError, r"^n:"),
        (("swa", 8, 2, 0), ValueError, r"^heads:"),
        (("sa", 8, 2, 1, -1), ValueError, r"^seed:"),
        (("sa", 8, 2, 1, 0, 4), ValueError, r"^max_length:"),
    ],
)
def test_mean_keys_read_bad_arguments_are_one_line_errors(args, error, match):
    with pytest.raises(error, match=match) as info:
        mean_keys_read(*args)
    assert "\n" not in str(info.value)


def test_swa_sink_moba_top_k_equal_the_lab_forms_in_prefill():
    q, k, v = torch.randn(3, 2, 3, 40, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).unbind(0)
    for method in ("swa", "swa+sink", "moba", "top-k"):
        ours = generation_attention(method, q, k, v, 8)
        lab = approximate(method, q, k, v, 8, causal=True)
        assert torch.allclose(ours, lab, atol=1e-12), method


def reference(method, q, k, v, m, seed, max_length):
    """float64 dense attention over the oracle's key sets (SA's band from :func:`band_oracle`)."""
    n = k.shape[2]
    causal = np.tril(np.ones((n, n), dtype=bool))

    def attend(keep):
        return dense_oracle(q, k, v, keep)

    from gpu.attention.generation_keys import _sigma_rank

    rank = _sigma_rank(max_length, seed, max_length).numpy()
    window = np.tril(np.ones((n, n), dtype=bool), 0) & ~np.tril(np.ones((n, n), dtype=bool), -m)
    if method == "exact":
        return attend(causal)
    if method == "sa":
        return attend(band_oracle(n, m, rank))
    if method == "swa":
        return attend(window)
    if method == "sa+swa":
        half = max(1, m // 2)
        w_half = np.tril(np.ones((n, n), dtype=bool), 0) & ~np.tril(np.ones((n, n), dtype=bool), -half)
        return 0.5 * (attend(band_oracle(n, half, rank)) + attend(w_half))
    raise AssertionError(method)


@pytest.mark.parametrize("method", ["exact", "sa", "swa", "sa+swa"])
@given(n=st.integers(2, 24), m=st.integers(1, 9), seed=st.integers(0, 20))
def test_attention_equals_float64_dense_attention_over_the_oracle_keys(method, n, m, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(3, 1, 2, n, 4, dtype=torch.float64, generator=g).unbind(0)
    out = generation_attention(method, q, k, v, m, seed, max_length=32)
    assert torch.allclose(out, reference(method, q, k, v, m, seed, 32), atol=1e-12)


@pytest.mark.parametrize("method", sorted(GENERATION_METHODS))
def test_a_decode_step_reads_what_the_full_forward_gives_its_position(method):
    q, k, v = torch.randn(3, 1, 4, 30, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1)).unbind(0)
    full = generation_attention(method, q, k, v, 6, 3, 64)
    for t in (0, 5, 17, 29):
        step = generation_attention(method, q[:, :, t : t + 1], k[:, :, : t + 1], v[:, :, : t + 1], 6, 3, 64)
        assert torch.allclose(step, full[:, :, t : t + 1], atol=1e-12), (method, t)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"budget": 0}, ValueError, "budget: "),
        ({"budget": 2.0}, TypeError, "budget: "),
        ({"max_length": 10}, ValueError, "max_length: the sequence has 12 tokens"),
        ({"method": "nope"}, ValueError, "method: "),
    ],
)
def test_bad_arguments_are_one_line_errors(kwargs, error, match):
    x = torch.zeros(1, 1, 12, 4)
    args = {"method": "sa", "budget": 4, "max_length": 64} | kwargs
    with pytest.raises(error, match=match):
        generation_attention(args.pop("method"), x, x, x, **args)


@given(n=st.integers(1, 40), w=st.integers(1, 12), queries=st.integers(1, 5), seed=st.integers(0, 10**6))
def test_the_band_of_the_last_queries_alone_equals_their_oracle_rows(n, w, queries, seed):
    rank = torch.from_numpy(np.random.default_rng(seed).permutation(n))
    positions = torch.arange(max(0, n - queries), n)
    idx, valid = sa_band(positions, n, w, rank)
    assert np.array_equal(dense(idx, valid, n), band_oracle(n, w, rank.numpy())[positions.numpy()])


@given(
    n=st.integers(1, 40),
    w=st.integers(1, 12),
    queries=st.integers(1, 5),
    extra=st.integers(0, 30),
    seed=st.integers(0, 10**6),
)
def test_the_band_walked_in_the_whole_order_equals_the_sorted_present_keys(n, w, queries, extra, seed):
    """A decode step walks the permutation's whole cached order (over ``max_length``), skipping later tokens,
    instead of sorting the keys present: the same keys in the same slots."""
    rank = torch.from_numpy(np.random.default_rng(seed).permutation(n + extra))
    positions = torch.arange(max(0, n - queries), n)
    walked = sa_band(positions, n, w, rank, order=torch.argsort(rank))
    sorted_ = sa_band(positions, n, w, rank)
    assert torch.equal(walked[0][walked[1]], sorted_[0][sorted_[1]]) and torch.equal(walked[1], sorted_[1])
    assert np.array_equal(dense(*walked, n), band_oracle(n, w, rank.numpy())[positions.numpy()])


@pytest.mark.parametrize("method", sorted(GENERATION_METHODS))
@pytest.mark.parametrize("queries", [1, 4, 30])
def test_grouped_key_heads_read_in_place_equal_the_repeated_heads(method, queries):
    """GQA: 6 query heads over 2 key heads give what the key heads repeated 3 times give, prefill and decode."""
    g = torch.Generator().manual_seed(2)
    q = torch.randn(2, 6, queries, 8, dtype=torch.float64, generator=g)
    k, v = torch.randn(2, 2, 2, 30, 8, dtype=torch.float64, generator=g).unbind(0)
    grouped = generation_attention(method, q, k, v, 6, 3, 64)
    repeated = generation_attention(method, q, k.repeat_interleave(3, 1), v.repeat_interleave(3, 1), 6, 3, 64)
    assert torch.allclose(grouped, repeated, atol=1e-12)


def test_key_heads_that_do_not_divide_the_query_heads_are_a_one_line_error():
    with pytest.raises(ValueError, match=r"^k, v: 4 and 4 key heads; expected one number dividing the 6 query heads"):
        generation_attention("sa", torch.zeros(1, 6, 3, 4), torch.zeros(1, 4, 3, 4), torch.zeros(1, 4, 3, 4), 2)
