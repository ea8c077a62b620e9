"""Multi-scale SA in the attention backend: per-head block permutations on q's device, the dense oracle, the
coverage pattern of the same permutations, and one-line errors."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gpu import GatedSAPlusSWALayer, StochasticAttentionLayer, sa_attention  # noqa: E402
from gpu.attention.modules import head_blocks, multiscale_permutations  # noqa: E402
from gpu.attention.oracle import dense_oracle  # noqa: E402
from receptive.patterns.causal_variants import MultiScaleSA  # noqa: E402
from tests.oracle import sa_matrix  # noqa: E402


def dense(q, k, v, masks):
    """The float64 reference (:func:`gpu.attention.oracle.dense_oracle`), one boolean mask (query, key) per head."""
    return dense_oracle(q, k, v, np.stack(masks)[None])


def test_drawn_permutations_stay_within_their_blocks():
    gen = torch.Generator().manual_seed(3)
    perms = multiscale_permutations(256, 6, 4, generator=gen)
    sizes = head_blocks(256, 6, 4)
    assert sizes == [256, 64, 16, 4, 256, 64]
    for perm, b in zip(perms, sizes, strict=True):
        assert torch.equal(torch.sort(perm).values, torch.arange(256))
        assert torch.equal(perm // b, torch.arange(256) // b)


@pytest.mark.parametrize("causal", [False, True])
def test_multiscale_attention_matches_the_dense_oracle_and_the_pattern(causal):
    n, w, heads = 64, 4, 3
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, heads, n, 8) for _ in range(3))
    perm = multiscale_permutations(n, heads, w, seed=7, layer=2)
    out = sa_attention(q, k, v, w, perm=perm, causal=causal)
    masks = [sa_matrix(p.numpy(), w, causal, False) for p in perm]
    torch.testing.assert_close(out.double(), dense(q, k, v, masks), rtol=1e-5, atol=1e-5)
    for m in masks:
        assert not causal or not np.any(np.triu(m, 1)), "a key after its query"
    # the union over heads is receptive's sa-ms pattern with the same blocks and seed
    pattern = MultiScaleSA(n, w, causal, seed=7, blocks=head_blocks(n, heads, w))
    np.testing.assert_array_equal(pattern.adjacency(2).toarray(), np.logical_or.reduce(masks))


@pytest.mark.parametrize("cls", [StochasticAttentionLayer, GatedSAPlusSWALayer])
def test_modules_take_the_variant(cls):
    module = cls(32, 4, 8, variant="sa-ms", seed=1)
    x = torch.randn(2, 64, 32)
    module.train()
    y1, p1 = module(x), module.last_perm
    _, p2 = module(x), module.last_perm
    assert y1.shape == x.shape and p1.shape == (4, 64) and not torch.equal(p1, p2)
    module.eval()
    y3, p3 = module(x), module.last_perm
    y4 = module(x)
    assert torch.equal(y3, y4) and torch.equal(p3, multiscale_permutations(64, 4, 8, seed=1, layer=1))


def test_bad_variant_and_blocks():
    with pytest.raises(ValueError, match=r"^variant:"):
        StochasticAttentionLayer(32, 4, 8, variant="kleinberg-eq")  # the modules take the four families
    with pytest.raises(ValueError, match=r"^blocks:"):
        multiscale_permutations(64, 4, 8, blocks=[5, 64])
