"""Cascade attention over shared context rows against a float64 loop oracle: per query, softmax over its context
row's valid keys and its own earlier tokens, every key head group read as transformers' ``repeat_kv`` reads it."""

from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu.harness.shared_context import shared_context_attention

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def oracle(ck, cv, valid, rows, q, k, v, scale):
    """``(batch, T, heads, d)`` by plain loops: each query's keys gathered, one softmax."""
    batch, heads, t, d = q.shape
    group = heads // k.shape[1]
    out = torch.zeros(batch, t, heads, d, dtype=torch.float64)
    for b in range(batch):
        r = int(rows[b])
        for h in range(heads):
            g = h // group
            for i in range(t):
                keys = torch.cat([ck[r, g][valid[r]], k[b, g, : i + 1]])
                values = torch.cat([cv[r, g][valid[r]], v[b, g, : i + 1]])
                weights = torch.softmax(keys @ q[b, h, i] * scale, 0)
                out[b, i, h] = weights @ values
    return out


@settings(max_examples=40)
@given(
    contexts=st.integers(1, 3),
    choices=st.lists(st.integers(0, 2), min_size=1, max_size=6),
    heads_kv=st.sampled_from([(1, 1), (2, 1), (4, 2), (3, 3)]),
    t=st.integers(1, 5),
    s=st.integers(1, 9),
    seed=st.integers(0, 2**16),
)
def test_each_query_reads_its_context_row_and_its_own_earlier_tokens(contexts, choices, heads_kv, t, s, seed):
    heads, kv_heads = heads_kv
    g = torch.Generator().manual_seed(seed)
    rows = torch.tensor([c % contexts for c in choices])
    ck, cv = torch.randn(2, contexts, kv_heads, s, 3, generator=g, dtype=torch.float64)
    valid = torch.rand(contexts, s, generator=g) < 0.7  # a row may hold no valid context key: its own tokens remain
    q = torch.randn(len(choices), heads, t, 3, generator=g, dtype=torch.float64) * 2
    k, v = torch.randn(2, len(choices), kv_heads, t, 3, generator=g, dtype=torch.float64)
    forward = shared_context_attention([(ck, cv)], valid, rows)
    out, weights = forward(SimpleNamespace(layer_idx=0), q, k, v, None, scaling=0.7)
    assert weights is None and out.shape == (len(choices), t, heads, 3)
    assert torch.allclose(out, oracle(ck, cv, valid, rows, q, k, v, 0.7), atol=1e-12)


def test_each_layer_reads_its_own_context():
    g = torch.Generator().manual_seed(0)
    layers = [tuple(torch.randn(2, 1, 1, 4, 2, generator=g, dtype=torch.float64)) for _ in range(2)]
    valid, rows = torch.ones(1, 4, dtype=torch.bool), torch.tensor([0])
    q, k, v = torch.randn(3, 1, 1, 2, 2, generator=g, dtype=torch.float64)
    forward = shared_context_attention(layers, valid, rows)
    for layer, (ck, cv) in enumerate(layers):
        out, _ = forward(SimpleNamespace(layer_idx=layer), q, k, v, None, scaling=1.0)
        assert torch.allclose(out, oracle(ck, cv, valid, rows, q, k, v, 1.0))
