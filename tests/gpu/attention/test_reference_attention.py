"""The one reference attention (``gpu.attention.oracle.masked_attention``; ``dense_oracle`` is it in float64)
against attention written query by query with math's exp: any mask, causal or not, grouped key heads, a scale and
a bias; a query that sees no key gives 0, never NaN, with finite gradients."""

import math

import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gpu.approx import exact_attention  # noqa: E402
from gpu.attention.oracle import dense_oracle, masked_attention  # noqa: E402


def by_hand(q, k, v, mask, causal, scale, bias):
    """Each query's softmax over its visible keys, one at a time; no visible key: 0."""
    b, h, m, _ = q.shape
    n, groups = k.shape[2], h // k.shape[1]
    out = torch.zeros(b, h, m, v.shape[-1], dtype=torch.float64)
    for bi in range(b):
        for hi in range(h):
            for i in range(m):
                seen = [j for j in range(n) if mask[bi, hi, i, j] and (not causal or j <= n - m + i)]
                scores = [
                    float(q[bi, hi, i] @ k[bi, hi // groups, j]) * scale + float(bias[bi, hi, i, j]) for j in seen
                ]
                top = max(scores, default=0.0)
                weights = [math.exp(s - top) for s in scores]
                for w, j in zip(weights, seen, strict=True):
                    out[bi, hi, i] += w / sum(weights) * v[bi, hi // groups, j].double()
    return out


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 7),
    queries=st.integers(1, 7),
    groups=st.sampled_from([1, 2]),
    causal=st.booleans(),
    density=st.floats(0.0, 1.0),
    scaled=st.booleans(),
    biased=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_masked_attention_is_attention_written_query_by_query(
    n, queries, groups, causal, density, scaled, biased, seed
):
    m = min(queries, n)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, 2 * groups, m, 3, generator=g, dtype=torch.float64)
    k, v = (torch.randn(1, 2, n, 3, generator=g, dtype=torch.float64) for _ in range(2))
    mask = torch.rand(1, 2 * groups, m, n, generator=g) < density
    bias = torch.randn(1, 2 * groups, m, n, generator=g, dtype=torch.float64) if biased else torch.zeros(1, 1, m, n)
    scale = 0.7 if scaled else 3**-0.5
    want = by_hand(q, k, v, mask.expand(1, 2 * groups, m, n), causal, scale, bias.expand(1, 2 * groups, m, n))
    got = masked_attention(q, k, v, mask, causal=causal, scale=scale if scaled else None, bias=bias if biased else None)
    assert torch.allclose(got, want, atol=1e-12)
    if not causal:
        assert torch.allclose(
            dense_oracle(q.float(), k.float(), v.float(), mask, scale if scaled else None, bias if biased else None),
            want,
            atol=1e-5,
        )


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 12), seed=st.integers(0, 1000), causal=st.booleans())
def test_a_query_without_keys_gives_zero_and_finite_gradients(n, seed, causal):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 2, n, 4, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = torch.rand(1, 2, n, n, generator=g) < 0.3
    mask[..., 0, :] = False  # the first query sees nothing
    got = masked_attention(q, k, v, mask, causal=causal)
    assert (got[..., 0, :] == 0).all() and torch.isfinite(got).all()
    got.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))


@pytest.mark.parametrize("causal", [False, True])
def test_the_labs_exact_attention_is_the_reference_in_its_dtype(causal):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 40, 8, generator=g) for _ in range(3))
    got = exact_attention(q, k, v, causal=causal)
    assert got.dtype == torch.float32
    everything = torch.ones(40, 40, dtype=torch.bool)
    mask = everything.tril() if causal else everything
    assert torch.allclose(got.double(), dense_oracle(q, k, v, mask), atol=1e-6)
    assert torch.equal(exact_attention(q.half(), k.half(), v.half()), exact_attention(q.half(), k.half(), v.half()))
