"""The nn.Modules: fresh permutations in training, receptive's in eval, causality, gates, RoPE."""

import pytest

torch = pytest.importorskip("torch")

from gpu import GatedSAPlusSWALayer, StochasticAttentionLayer, rotary, sa_attention  # noqa: E402
from receptive.permutations import layer_permutation  # noqa: E402


@pytest.mark.parametrize("cls", [StochasticAttentionLayer, GatedSAPlusSWALayer])
def test_shapes_training_and_eval(cls):
    torch.manual_seed(0)
    module = cls(32, 4, 8, kv_heads=2, seed=5, layer=2)
    x = torch.randn(2, 50, 32)
    module.train()
    y1, p1 = module(x), module.last_perm
    y2, p2 = module(x), module.last_perm
    assert y1.shape == x.shape and not torch.equal(p1, p2) and not torch.allclose(y1, y2)
    module.eval()
    y3, y4 = module(x), module(x)
    torch.testing.assert_close(y3, y4)
    assert torch.equal(module.last_perm, torch.as_tensor(layer_permutation(50, 5, 2)))
    y3.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in module.parameters() if p.grad is not None)


@pytest.mark.parametrize("cls", [StochasticAttentionLayer, GatedSAPlusSWALayer])
def test_causal_modules_never_look_ahead(cls):
    torch.manual_seed(1)
    module = cls(16, 2, 6, causal=True).eval()
    x = torch.randn(1, 40, 16)
    y = module(x)
    x2 = x.clone()
    x2[:, 25:] += torch.randn(1, 15, 16)
    torch.testing.assert_close(module(x2)[:, :25], y[:, :25])
    assert not torch.allclose(module(x2)[:, 25:], y[:, 25:])


def test_sa_module_equals_functional_call():
    torch.manual_seed(2)
    module = StochasticAttentionLayer(16, 2, 5, causal=False, rope=False, seed=3).eval()
    x = torch.randn(1, 30, 16)
    q, k, v = module.qkv(x)
    expect = module.merge(sa_attention(q, k, v, 5, seed=3, layer=1))
    torch.testing.assert_close(module(x), expect)


def test_gate_parameter_count():
    module = GatedSAPlusSWALayer(64, 8, 16)
    assert module.extra_parameters == 2 * (64 * 8 + 8)
    base = sum(p.numel() for p in StochasticAttentionLayer(64, 8, 16).parameters())
    assert sum(p.numel() for p in module.parameters()) == base + module.extra_parameters


def test_rotary_is_relative():
    torch.manual_seed(3)
    q = torch.randn(1, 1, 1, 8, dtype=torch.float64).expand(1, 1, 20, 8)
    k = torch.randn(1, 1, 1, 8, dtype=torch.float64).expand(1, 1, 20, 8)
    scores = rotary(q) @ rotary(k).transpose(-1, -2)
    torch.testing.assert_close(scores[0, 0, 5, 2], scores[0, 0, 13, 10])
    torch.testing.assert_close(rotary(q).norm(dim=-1), q.norm(dim=-1))


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"^heads"):
        StochasticAttentionLayer(30, 4, 8)
    with pytest.raises(ValueError, match="w"):
        GatedSAPlusSWALayer(32, 4, 0)
    with pytest.raises(ValueError, match=r"^x: .*head_dim"):
        rotary(torch.randn(1, 1, 4, 3))


@pytest.mark.parametrize("cls", [StochasticAttentionLayer, GatedSAPlusSWALayer])
@pytest.mark.parametrize(
    ("args", "kwargs", "name"),
    [
        ((16.0, 2, 4), {}, "d_model"),
        ((16, "2", 4), {}, "heads"),
        ((16, 2, None), {}, "w"),
        ((16, 2, 4), {"kv_heads": 1.0}, "kv_heads"),
        ((16, 2, 4), {"causal": "no"}, "causal"),
        ((16, 2, 4), {"rope": 1}, "rope"),
        ((16, 2, 4), {"seed": 1.5}, "seed"),
        ((16, 2, 4), {"layer": "1"}, "layer"),
        ((16, 2, 4), {"variant": 3}, "variant"),
        ((16, 2, 4), {"variant": "sa-ms", "blocks": "ab"}, "blocks"),
    ],
)
def test_wrong_types_are_type_errors_naming_the_argument(cls, args, kwargs, name):
    """Both layers take ``w`` (and the gated one ``w_swa``) as the patterns do; a wrong type is a one-line
    ``TypeError`` starting with the argument's name."""
    with pytest.raises(TypeError, match=rf"^{name}: ") as info:
        cls(*args, **kwargs)
    assert "\n" not in str(info.value)


def test_gated_layer_w_swa_type_and_the_shared_vocabulary():
    """``w``/``w_swa``/``causal=False`` as in ``receptive.GatedSAPlusSWA``; ``w_swa`` of a wrong type is a TypeError."""
    import inspect

    from receptive import GatedSAPlusSWA
    from receptive import StochasticAttention as SAPattern

    with pytest.raises(TypeError, match=r"^w_swa: "):
        GatedSAPlusSWALayer(16, 2, 4, w_swa=2.0)
    for layer, pattern in ((StochasticAttentionLayer, SAPattern), (GatedSAPlusSWALayer, GatedSAPlusSWA)):
        mine, theirs = inspect.signature(layer).parameters, inspect.signature(pattern).parameters
        assert {"w", "causal"} <= set(mine) & set(theirs)
        assert mine["causal"].default is False and theirs["causal"].default is False
    assert "w_swa" in inspect.signature(GatedSAPlusSWALayer).parameters
    assert "w_swa" in inspect.signature(GatedSAPlusSWA).parameters


@pytest.mark.parametrize("cls", [StochasticAttentionLayer, GatedSAPlusSWALayer])
@pytest.mark.parametrize(
    ("x", "error", "match"),
    [
        (torch.randn(2, 5, 8), ValueError, r"^x: expected a \(batch, seq, d_model=16\) tensor"),
        (torch.randn(5, 16), ValueError, r"^x: expected a \(batch, seq, d_model=16\) tensor"),
        (torch.randn(2, 0, 16), ValueError, r"^x: .*at least one position"),
        (torch.randn(2, 5, 16, dtype=torch.float64), TypeError, r"^x: expected dtype torch.float32"),
        (torch.zeros(2, 5, 16, dtype=torch.long), TypeError, r"^x: expected a floating dtype"),
        ([[0.0] * 16], TypeError, r"^x: expected a torch.Tensor"),
    ],
)
def test_wrong_input_is_one_line_naming_x_and_what_is_expected(cls, x, error, match):
    layer = cls(16, 2, 4)
    with pytest.raises(error, match=match) as info:
        layer(x)
    assert "\n" not in str(info.value)


def test_input_of_another_dtype_runs_under_autocast():
    layer = StochasticAttentionLayer(16, 2, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert layer(torch.randn(1, 6, 16, dtype=torch.bfloat16)).shape == (1, 6, 16)
