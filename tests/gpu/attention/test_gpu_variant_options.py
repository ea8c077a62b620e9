"""The causal variants as options of gpu.StochasticAttentionLayer / gpu.GatedSAPlusSWALayer: every variant
against float64 dense attention with the mask of receptive's pattern, the attended key sets read off the
computation itself (one-hot values), causality on those sets, fresh draws in training, one-line errors."""

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton compiles anything: the fused kernel on the CPU

from gpu import GatedSAPlusSWALayer, StochasticAttentionLayer, variant_attention  # noqa: E402
from gpu.attention import swa_attention  # noqa: E402
from gpu.attention.oracle import dense_oracle  # noqa: E402
from gpu.attention.variants import (  # noqa: E402
    VARIANTS,
    dilated_attention,
    head_blocks,
    head_dilations,
    kleinberg_keys,
    multiscale_permutations,
)
from receptive import make_pattern  # noqa: E402
from receptive.patterns.causal_variants import (  # noqa: E402
    DilatedHeads,
    KleinbergAttention,
    MultiScaleSA,
    make_variant,
)


def head_masks(variant, n, w, heads, causal, seed, layer):
    """``(heads, n, n)`` bool: what head ``h`` may attend, from receptive's single-scale patterns."""
    if variant == "sa":
        mask = make_pattern("sa", n, w, causal, seed=seed).adjacency(layer).toarray()
        return np.stack([mask] * heads)
    if variant == "kleinberg":
        return np.stack([KleinbergAttention(n, w, causal, seed=seed).adjacency(layer).toarray()] * heads)
    if variant == "sa-ms":
        pats = [MultiScaleSA(n, w, causal, seed=seed, blocks=[b]) for b in head_blocks(n, heads, w)]
        return np.stack([p.adjacency(layer).toarray() for p in pats])
    pats = [DilatedHeads(n, w, causal, dilations=[r]) for r in head_dilations(n, heads, w)]
    return np.stack([p.adjacency(1).toarray() for p in pats])


def union_pattern(variant, n, w, causal, seed):
    return (
        make_pattern("sa", n, w, causal, seed=seed)
        if variant == "sa"
        else make_variant(variant, n, w, causal, seed=seed)
    )


def scales(variant, n, w) -> int:
    if variant == "sa-ms":
        return len(MultiScaleSA(n, w).blocks)
    if variant == "dilated":
        return len(DilatedHeads(n, w).dilations)
    return 1


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("variant", VARIANTS)
def test_attended_keys_are_the_patterns_edges_and_values_match_the_dense_oracle(variant, causal):
    """One-hot values make the output row of query i its attention weights: the keys with weight > 0 are the keys
    the computation attended. They must be the pattern's edges, per head and as a union over heads."""
    rng = np.random.default_rng(13 + causal)
    for trial in range(10):
        n = int(rng.choice([12, 16, 24, 27, 32]))
        w = int(rng.integers(2, 7))
        seed, layer = int(rng.integers(0, 100)), int(rng.integers(1, 4))
        kv_heads = int(rng.choice([1, 2]))
        heads = kv_heads * -(-(scales(variant, n, w) + int(rng.integers(0, 2))) // kv_heads)
        g = torch.Generator().manual_seed(trial)
        q = torch.randn(1, heads, n, n, generator=g, dtype=torch.float64)
        k = torch.randn(1, kv_heads, n, n, generator=g, dtype=torch.float64)
        onehot = torch.eye(n, dtype=torch.float64).expand(1, kv_heads, n, n)
        weights = variant_attention(q, k, onehot, w, variant, causal=causal, seed=seed, layer=layer)[0].numpy()
        attended = weights > 0
        masks = head_masks(variant, n, w, heads, causal, seed, layer)
        np.testing.assert_array_equal(attended, masks, err_msg=f"{variant} n={n} w={w} heads={heads}")
        union = union_pattern(variant, n, w, causal, seed).adjacency(layer).toarray()
        np.testing.assert_array_equal(attended.any(axis=0), union)
        np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-12)
        if causal:
            assert not np.triu(attended, 1).any(), "a key after its query"
        # arbitrary values (and float32) against the dense float64 reference with the pattern's mask
        v = torch.randn(1, kv_heads, n, n, generator=g, dtype=torch.float64)
        for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 2e-5)):
            got = variant_attention(
                q.to(dtype), k.to(dtype), v.to(dtype), w, variant, causal=causal, seed=seed, layer=layer
            )
            torch.testing.assert_close(got.double(), dense_oracle(q, k, v, masks), rtol=tol, atol=tol)


@pytest.mark.parametrize("causal", [True, False])
def test_dilated_heads_with_explicit_dilations_against_the_pattern(causal):
    rng = np.random.default_rng(5)
    for _ in range(10):
        n = int(rng.integers(2, 40))
        w = int(rng.integers(1, n + 1))
        dilations = sorted({int(r) for r in rng.integers(1, n + 1, size=int(rng.integers(1, 4)))})
        heads = len(dilations) * int(rng.integers(1, 3))
        q, k, v = (torch.randn(2, heads, n, 6, dtype=torch.float64) for _ in range(3))
        got = dilated_attention(q, k, v, w, causal, dilations=dilations)
        masks = [
            DilatedHeads(n, w, causal, dilations=[dilations[h % len(dilations)]]).adjacency(1).toarray()
            for h in range(heads)
        ]
        torch.testing.assert_close(got, dense_oracle(q, k, v, np.stack(masks)), rtol=1e-10, atol=1e-10)


def test_dilated_flex_backend_matches_torch():
    pytest.importorskip("torch.nn.attention.flex_attention")
    q, k, v = (torch.randn(1, 3, 27, 8) for _ in range(3))
    for causal in (True, False):
        torch.testing.assert_close(
            dilated_attention(q, k, v, 4, causal, backend="flex"),
            dilated_attention(q, k, v, 4, causal),
            rtol=1e-5,
            atol=1e-5,
        )


@pytest.mark.parametrize("causal", [True, False])
def test_dilated_and_multiscale_heads_run_on_the_fused_kernel(causal):
    """The banded variants on ``backend="triton"`` (the CPU interpreter here, the GPU where there is one) against
    the float64 torch path: the residue-class rows and the per-head permutations go through the fused kernel."""
    pytest.importorskip("triton")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    g = torch.Generator().manual_seed(9)
    q = torch.randn(1, 4, 27, 16, generator=g)
    k, v = (torch.randn(1, 2, 27, 16, generator=g) for _ in range(2))
    for variant, w in (("dilated", 3), ("dilated", 5), ("sa-ms", 3)):
        ref = variant_attention(q.double(), k.double(), v.double(), w, variant, causal=causal, seed=1)
        got = variant_attention(*(t.to(device) for t in (q, k, v)), w, variant, causal=causal, seed=1, backend="triton")
        torch.testing.assert_close(got.double().cpu(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("causal", [True, False])
def test_drawn_kleinberg_keys_follow_the_patterns_law(causal):
    """Torch draws (training) against the pattern's numpy draws (eval): same distribution of signed distance
    scales ``sign(j - i) floor(log2 |j - i|)`` (total variation < 0.02 on about 60k keys each), valid keys."""
    n, w = 4096, 16
    gen = torch.Generator().manual_seed(0)
    drawn = torch.cat([kleinberg_keys(n, w, causal, generator=gen) for _ in range(4)])
    seeded = torch.cat([kleinberg_keys(n, w, causal, seed=s) for s in range(4)])
    rows = torch.arange(n).repeat(4)[:, None].expand_as(drawn)

    def scale_hist(table):
        valid = (table >= 0) & (table != rows)
        d = (table - rows)[valid]
        assert (d.abs() < n).all() and (not causal or (d < 0).all())
        bucket = torch.sign(d) * (torch.floor(torch.log2(d.abs().double())).long() + 1)
        return torch.bincount(bucket + 20, minlength=41).double() / d.numel()

    assert (drawn == rows).any(1).all(), "every query attends itself"
    tv = 0.5 * (scale_hist(drawn) - scale_hist(seeded)).abs().sum().item()
    assert tv < 0.02, tv
    assert not torch.equal(kleinberg_keys(n, w, causal), kleinberg_keys(n, w, causal))
    g1, g2 = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    assert torch.equal(kleinberg_keys(64, 8, causal, generator=g1), kleinberg_keys(64, 8, causal, generator=g2))


def module_reference(module, x, masks, swa=None):
    """The module's output from the dense float64 reference with ``masks`` (and the gated window)."""
    q, k, v = module.qkv(x)
    y = dense_oracle(q, k, v, masks).float()
    if swa is not None:
        y_swa = swa_attention(q, k, v, swa, causal=module.causal)
        g_sa = torch.sigmoid(module.gate_sa(x)).transpose(1, 2)[..., None]
        g_swa = torch.sigmoid(module.gate_swa(x)).transpose(1, 2)[..., None]
        y = g_sa * y + g_swa * y_swa
    return module.merge(y)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("cls", [StochasticAttentionLayer, GatedSAPlusSWALayer])
@pytest.mark.parametrize("variant", VARIANTS)
def test_modules_eval_is_the_seeded_pattern_training_is_fresh(variant, cls, causal):
    torch.manual_seed(0)
    n, w, heads = 32, 4, 4
    module = cls(32, heads, w, kv_heads=2, causal=causal, seed=3, layer=2, variant=variant)
    x = torch.randn(2, n, 32)
    module.eval()
    y = module(x)
    masks = head_masks(variant, n, w, heads, causal, 3, 2)
    with torch.no_grad():
        expect = module_reference(module, x, masks, swa=w if cls is GatedSAPlusSWALayer else None)
    torch.testing.assert_close(y, expect, rtol=1e-4, atol=1e-5)
    assert torch.equal(module(x), y)
    assert (module.last_perm is not None) == (variant in ("sa", "sa-ms"))
    assert (module.last_keys is not None) == (variant == "kleinberg")
    y.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in module.parameters() if p.grad is not None)
    if causal:  # changing later tokens leaves the earlier outputs alone
        x2 = x.clone()
        x2[:, 20:] += torch.randn(2, n - 20, 32)
        with torch.no_grad():
            torch.testing.assert_close(module(x2)[:, :20], y[:, :20].detach())
    module.train()
    y1, s1 = module(x), (module.last_perm, module.last_keys)
    y2, s2 = module(x), (module.last_perm, module.last_keys)
    (y1.sum() + y2.sum()).backward()
    assert all(torch.isfinite(p.grad).all() for p in module.parameters() if p.grad is not None)
    if variant == "dilated":  # deterministic: training is eval
        torch.testing.assert_close(y1, y.detach())
        assert torch.equal(y1, y2)
    else:
        state1, state2 = (s[0] if s[0] is not None else s[1] for s in (s1, s2))
        assert not torch.equal(state1, state2) and not torch.allclose(y1, y2)


def test_training_draws_stay_within_the_variants_rules():
    """Fresh multi-scale permutations are permutations within their blocks; fresh Kleinberg keys are in range,
    causal ones never after the query, and every query keeps itself."""
    gen = torch.Generator().manual_seed(1)
    perms = multiscale_permutations(81, 4, 3, generator=gen)
    for perm, b in zip(perms, head_blocks(81, 4, 3), strict=True):
        assert torch.equal(torch.sort(perm).values, torch.arange(81)) and torch.equal(perm // b, torch.arange(81) // b)
    for causal in (True, False):
        keys = kleinberg_keys(50, 7, causal, generator=gen)
        rows = torch.arange(50)[:, None].expand_as(keys)
        valid = keys >= 0
        assert keys.shape == (50, 7) and (keys[valid] < 50).all() and (keys == rows).any(1).all()
        assert not causal or (keys[valid] <= rows[valid]).all()
        kept = torch.sort(torch.where(valid, keys, -1 - torch.arange(7)), dim=1).values  # padding: distinct
        assert (kept[:, 1:] != kept[:, :-1]).all(), "a repeated key"


@pytest.mark.parametrize("variant", VARIANTS)
def test_short_sequences_and_few_heads_give_finite_outputs(variant):
    torch.manual_seed(2)
    for n in (1, 2, 3, 7):
        for causal in (True, False):
            module = StochasticAttentionLayer(8, 2, 5, causal=causal, variant=variant)
            for mode in (module.train, module.eval):
                mode()
                y = module(torch.randn(1, n, 8, requires_grad=True))
                assert torch.isfinite(y).all()
                y.sum().backward()
    # one head, four dilation scales: only r = 1 runs (the window), which is SWA
    q, k, v = (torch.randn(1, 1, 64, 4) for _ in range(3))
    assert head_dilations(64, 1, 4) == [1]
    torch.testing.assert_close(variant_attention(q, k, v, 4, "dilated", causal=True), swa_attention(q, k, v, 4, True))


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: StochasticAttentionLayer(16, 2, 4, variant="kleinberg+swa"), "variant"),
        (lambda: GatedSAPlusSWALayer(16, 2, 4, variant="longnet"), "variant"),
        (lambda: StochasticAttentionLayer(16, 2, 0, variant="dilated"), "w"),
        (lambda: GatedSAPlusSWALayer(16, 2, 4, variant="kleinberg", w_swa=0), "w_swa"),
        (lambda: StochasticAttentionLayer(16, 2, 4, variant="kleinberg", blocks=[4]), "blocks"),
        (lambda: StochasticAttentionLayer(16, 2, 4, variant="sa-ms", blocks=[1, 16]), "blocks"),
        (lambda: StochasticAttentionLayer(16, 2, 4, variant="sa-ms", blocks=[5])(torch.randn(1, 16, 16)), "blocks"),
        (lambda: StochasticAttentionLayer(16, 2, 4, variant="sa-ms", seed=-1), "seed"),
        (lambda: GatedSAPlusSWALayer(16, 2, 4, variant="dilated", layer=0), "layer"),
        (lambda: variant_attention(*(torch.randn(1, 2, 8, 4),) * 3, 4, "bogus"), "variant"),
        (lambda: variant_attention(*(torch.randn(1, 2, 8, 4),) * 3, 0, "kleinberg"), "w"),
        (lambda: variant_attention(*(torch.randn(1, 2, 8, 4),) * 3, 9, "dilated"), "w"),
        (lambda: variant_attention(*(torch.randn(1, 2, 8, 4),) * 3, 0, "sa-ms"), "w"),
        (lambda: variant_attention(*(torch.randn(1, 2, 8, 4),) * 3, 4, "sa-ms", blocks=[3, 8]), "blocks"),
        (lambda: variant_attention(*(torch.randn(1, 2, 8, 4),) * 3, 4, "dilated", layer=0), "layer"),
        (lambda: variant_attention(*(torch.randn(1, 2, 8, 4),) * 3, 4, "sa", backend="cuda"), "backend"),
        (lambda: dilated_attention(*(torch.randn(1, 2, 8, 4),) * 3, 4, dilations=[0]), "dilations"),
        (lambda: dilated_attention(*(torch.randn(1, 2, 8, 4),) * 3, 4, dilations=[]), "dilations"),
        (lambda: kleinberg_keys(8, 9), "w"),
        (lambda: multiscale_permutations(64, 4, 8, blocks=[5, 64]), "blocks"),
    ],
)
def test_bad_input_is_a_one_line_error_naming_the_argument(call, needle):
    with pytest.raises(ValueError, match=rf"^{needle}:") as info:
        call()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: variant_attention(*(torch.randn(1, 2, 8, 4),) * 3, 4, "kleinberg", causal="yes"), "causal"),
        (lambda: dilated_attention(*(torch.randn(1, 2, 8, 4),) * 3, 4, causal=1), "causal"),
        (lambda: StochasticAttentionLayer(16, 2, 4.0), "w"),
        (lambda: GatedSAPlusSWALayer(16, 2, 4, causal=1), "causal"),
        (lambda: variant_attention([[1.0]], [[1.0]], [[1.0]], 4, "sa"), "q"),
    ],
)
def test_wrong_type_is_a_one_line_type_error_naming_the_argument(call, needle):
    with pytest.raises(TypeError, match=rf"^{needle}:") as info:
        call()
    assert "\n" not in str(info.value)


def test_cpu_bench_times_the_paths_round_robin():
    """gpu.bench.cli on the CPU: one warm-up run each, then every round runs every path once, in turn, each round
    starting one path later (gpu.bench.timing.round_robin)."""
    from gpu.bench.timing import _times

    calls = []
    runs = _times({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3, cuda=False)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"] and [len(r) for r in runs.values()] == [3, 3]
