"""Generation with a KV cache on a tiny random Llama: incremental decoding equals the full-sequence forward."""

import pytest
import torch

transformers = pytest.importorskip("transformers")
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, StaticCache  # noqa: E402

from gpu.attention.generation_patterns import GENERATION_METHODS  # noqa: E402
from gpu.hf.generation import compacted, generation_forward  # noqa: E402
from gpu.hf.implementations import implementation_name, register  # noqa: E402

METHODS = sorted(GENERATION_METHODS)


@pytest.fixture(scope="module")
def model():
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).double().eval()


def logits(model, name, ids, **kw):
    model.set_attn_implementation(name)
    with torch.no_grad():
        return model(input_ids=ids, **kw).logits


@pytest.mark.parametrize("method", METHODS)
def test_token_by_token_decoding_equals_the_full_forward(model, method):
    ids = torch.randint(0, 64, (2, 24), generator=torch.Generator().manual_seed(3))
    name = register(method, 5, seed=2)
    full = logits(model, name, ids)
    cache = DynamicCache(config=model.config)
    with torch.no_grad():
        prefix = model(input_ids=ids[:, :7], cache=cache, use_cache=True).logits
        steps = [model(input_ids=ids[:, t : t + 1], cache=cache, use_cache=True).logits for t in range(7, 24)]
    assert torch.allclose(torch.cat([prefix, *steps], 1), full, atol=1e-10)


@pytest.mark.parametrize("method", ["sa", "sa-ms", "moba"])
def test_chunked_decoding_and_a_static_cache_equal_the_full_forward(model, method):
    ids = torch.randint(0, 64, (1, 20), generator=torch.Generator().manual_seed(4))
    name = register(method, 4, seed=1)
    full = logits(model, name, ids)
    cache = StaticCache(config=model.config, max_cache_len=32)
    with torch.no_grad():
        parts = [
            model(input_ids=ids[:, a:b], cache=cache, use_cache=True).logits for a, b in ((0, 9), (9, 13), (13, 20))
        ]
    assert torch.allclose(torch.cat(parts, 1), full, atol=1e-10)


@pytest.mark.parametrize("method", ["sa", "swa+sink", "top-k"])
def test_generate_with_left_padding_gives_each_prompt_its_own_continuation(model, method):
    name = register(method, 4, seed=5)
    model.set_attn_implementation(name)
    a = torch.randint(1, 64, (1, 12), generator=torch.Generator().manual_seed(5))
    b = a[:, 4:]
    batch = torch.cat([a, torch.cat([torch.zeros(1, 4, dtype=torch.long), b], 1)])
    mask = torch.cat([torch.ones(1, 12), torch.cat([torch.zeros(1, 4), torch.ones(1, 8)], 1)]).long()
    with torch.no_grad():
        together = model.generate(
            batch, attention_mask=mask, max_new_tokens=6, min_new_tokens=6, do_sample=False, pad_token_id=0
        )
        alone = model.generate(b, max_new_tokens=6, min_new_tokens=6, do_sample=False, pad_token_id=0)
    assert torch.equal(together[1, -6:], alone[0, -6:])


def test_generate_equals_greedy_argmax_of_full_forwards(model):
    name = register("sa", 4, seed=3)
    model.set_attn_implementation(name)
    ids = torch.randint(0, 64, (1, 10), generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=8, do_sample=False)
        seq = ids
        for _ in range(8):
            seq = torch.cat([seq, model(input_ids=seq, use_cache=False).logits[:, -1:].argmax(-1)], 1)
    assert torch.equal(out, seq)


def test_exact_decode_runs_the_pattern_in_the_prefill_only(model):
    ids = torch.randint(0, 64, (1, 20), generator=torch.Generator().manual_seed(7))
    sparse_prefill = register("sa", 3, decode="exact")
    cache = DynamicCache(config=model.config)
    model.set_attn_implementation(sparse_prefill)
    with torch.no_grad():
        prefix = model(input_ids=ids[:, :12], cache=cache, use_cache=True).logits
        rest = model(input_ids=ids[:, 12:], cache=cache, use_cache=True).logits
    assert torch.allclose(prefix, logits(model, register("sa", 3), ids[:, :12]), atol=1e-10)
    # the decoded tokens read every key: on an exact prefill they equal the exact forward
    exact_prefill = register("exact", 1)
    cache = DynamicCache(config=model.config)
    model.set_attn_implementation(exact_prefill)
    with torch.no_grad():
        model(input_ids=ids[:, :12], cache=cache, use_cache=True)
        exact_rest = model(input_ids=ids[:, 12:], cache=cache, use_cache=True).logits
    assert torch.allclose(exact_rest, logits(model, "sdpa", ids)[:, 12:], atol=1e-10)
    assert not torch.allclose(rest, exact_rest, atol=1e-6)  # the sparse prefill's cached keys differ


def test_exact_layers_and_full_budget_give_exact_attention(model):
    ids = torch.randint(0, 64, (1, 16), generator=torch.Generator().manual_seed(8))
    reference = logits(model, "sdpa", ids)
    assert torch.allclose(logits(model, register("sa", 2, exact_layers=(0, 1, 2)), ids), reference, atol=1e-10)
    assert torch.allclose(logits(model, register("swa", 16), ids), reference, atol=1e-10)
    assert torch.allclose(logits(model, register("sa", 31), ids), reference, atol=1e-10)
    assert not torch.allclose(logits(model, register("sa", 2, exact_layers=(0,)), ids), reference)


def test_trace_sees_every_layer_in_order(model):
    seen = []
    name = register("swa", 3, trace=lambda layer, positions, keep: seen.append((layer, keep.shape)))
    logits(model, name, torch.zeros(1, 9, dtype=torch.long))
    assert seen == [(0, (9, 9)), (1, (9, 9)), (2, (9, 9))]


def test_past_max_length_is_a_one_line_error(model):
    name = register("sa", 4, max_length=16)
    with pytest.raises(ValueError, match=r"^max_length: the sequence has 20 tokens, more than max_length = 16$"):
        logits(model, name, torch.zeros(1, 20, dtype=torch.long))


def test_sa_default_max_length_is_the_models_context(model):
    """Without ``max_length`` the permutations are drawn over ``max_position_embeddings`` (64), so a row of a
    16-token prompt equals the same row under an explicit ``max_length=64``."""
    ids = torch.randint(0, 64, (1, 16), generator=torch.Generator().manual_seed(9))
    a = logits(model, register("sa", 3, seed=4), ids)
    b = logits(model, register("sa", 3, seed=4, max_length=64), ids)
    c = logits(model, register("sa", 3, seed=4, max_length=128), ids)
    assert torch.equal(a, b) and not torch.allclose(a, c)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"method": "magic"}, ValueError, "^method: "),
        ({"budget": 0}, ValueError, "^budget: "),
        ({"budget": "8"}, TypeError, "^budget: "),
        ({"decode": "greedy"}, ValueError, "^decode: "),
        ({"max_length": 0}, ValueError, "^max_length: "),
        ({"exact_layers": [-1]}, ValueError, "^exact_layers: "),
    ],
)
def test_bad_registrations_are_one_line_errors(kwargs, error, match):
    args = {"method": "sa", "budget": 8} | kwargs
    with pytest.raises(error, match=match):
        register(args.pop("method"), args.pop("budget"), **args)


def test_a_bidirectional_model_and_a_packed_mask_are_refused():
    forward = generation_forward("sa", 4)
    x = torch.zeros(1, 1, 4, 2)
    with pytest.raises(ValueError, match=r"^is_causal: "):
        forward(None, x, x, x, None, is_causal=False)
    packed = torch.ones(1, 1, 4, 4, dtype=torch.bool)  # not causal
    with pytest.raises(ValueError, match=r"^attention_mask: "):
        compacted(lambda q, k, v: q, x, x, x, packed)


def test_names():
    assert implementation_name("moba", 64, exact_layers=(3, 1)) == "receptive-moba-64-exact-1.3"


def test_a_budget_past_the_bound_and_exact_layers_not_a_list_are_one_line_errors():
    with pytest.raises(ValueError, match=r"^budget: expected an integer in \[1, 65536\]"):
        register("sa", 10**12)
    with pytest.raises(TypeError, match=r"^exact_layers: expected an iterable of layer indices, got int"):
        register("sa", 8, exact_layers=1)


@pytest.mark.parametrize("method", ["sa", "swa+sink", "exact", "top-k"])
def test_a_static_cache_decoded_step_by_step_equals_the_full_forward(model, method):
    """Every step reads the filled slots of the static cache in place (the causal-prefix mask recognised once per
    call), with an explicit attention mask as ``generate`` passes it."""
    ids = torch.randint(0, 64, (1, 18), generator=torch.Generator().manual_seed(11))
    name = register(method, 4, seed=6)
    full = logits(model, name, ids)
    cache = StaticCache(config=model.config, max_cache_len=40)
    model.set_attn_implementation(name)
    with torch.no_grad():
        parts = [model(input_ids=ids[:, :6], cache=cache, use_cache=True).logits]
        for t in range(6, 18):
            mask = torch.ones(1, t + 1, dtype=torch.long)
            parts.append(model(input_ids=ids[:, t : t + 1], attention_mask=mask, cache=cache, use_cache=True).logits)
    assert torch.allclose(torch.cat(parts, 1), full, atol=1e-10)


def test_the_causal_prefix_is_recognised_once_per_mask_and_padding_is_not_a_prefix():
    from gpu.hf import generation

    causal = torch.ones(4, 6, dtype=torch.bool).tril(2)[None, None]
    assert generation._causal_prefix(causal, (1, 4, 6)) == 6
    calls = []
    original = generation.keep_mask
    generation.keep_mask = lambda *a: calls.append(1) or original(*a)
    try:
        assert [generation._causal_prefix(causal, (1, 4, 6)) for _ in range(3)] == [6, 6, 6]
        assert calls == []  # remembered: one check per model call, not per layer
        causal[0, 0, 0, 5] = True  # an in-place change bumps the version: checked again
        assert generation._causal_prefix(causal, (1, 4, 6)) is None and calls == [1]
    finally:
        generation.keep_mask = original
    left_padded = torch.ones(4, 6, dtype=torch.bool).tril(2)[None, None].clone()
    left_padded[..., 0] = False
    assert generation._causal_prefix(left_padded, (1, 4, 6)) is None
    batch = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    batch[1, ..., 4] = False  # rows of different lengths
    assert generation._causal_prefix(batch, (2, 1, 5)) is None
