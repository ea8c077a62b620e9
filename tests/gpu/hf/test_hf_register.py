"""One way to put a pattern into a model: :func:`gpu.hf.register` runs a name's generation form (prefill and decode)
and a method object's prefill form (the lab's methods), dispatching on what it is given, and refuses what a form
cannot do with one line naming the fix."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from gpu.approx import METHODS, approximate  # noqa: E402
from gpu.hf import register  # noqa: E402


def tiny_llama():
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).double().eval()


def test_names_are_generation_forms_and_objects_prefill_forms():
    assert register("swa", 4) == "receptive-swa-4"
    assert register(METHODS["swa"], 4) == "receptive-prefill-swa-4"
    with pytest.raises(ValueError, match=r"^method: expected one of swa, "):
        register("performer", 4)  # a lab method is registered as its object
    with pytest.raises(TypeError, match=r"^method: expected a method with a name and approximate\(\)"):
        register(object(), 4)


@torch.no_grad()
@pytest.mark.parametrize("method", ["sa", "swa+sink", "moba"])
def test_the_registered_name_generates_and_decoding_equals_the_full_forward(method):
    model = tiny_llama()
    model.set_attn_implementation(register(method, 4, seed=1))
    ids = torch.randint(0, 64, (1, 16), generator=torch.Generator().manual_seed(2))
    full = model(input_ids=ids, use_cache=False).logits
    cache = transformers.DynamicCache(config=model.config)
    steps = [model(input_ids=ids[:, :10], cache=cache, use_cache=True).logits]
    steps += [model(input_ids=ids[:, i : i + 1], cache=cache, use_cache=True).logits for i in range(10, 16)]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-10)
    assert model.generate(ids[:, :8], max_new_tokens=3, min_new_tokens=3, do_sample=False).shape == (1, 11)


@torch.no_grad()
def test_lab_methods_run_the_labs_causal_form_and_refuse_a_cache():
    """``sa-band``, the lab's causal SA, masks its band (about (m + 1) / 2 keys): not the generation form's m keys."""
    model = tiny_llama()
    ids = torch.randint(0, 64, (1, 24), generator=torch.Generator().manual_seed(3))
    seen = {}

    def capture(name):
        model.set_attn_implementation(name)
        return model(input_ids=ids, use_cache=False).logits

    seen["lab"], seen["generation"] = capture(register(METHODS["sa-band"], 6)), capture(register("sa", 6))
    assert not torch.allclose(seen["lab"], seen["generation"])
    # the lab's form equals approximate("sa-band", causal=True) in every layer: a hand-registered function agrees
    from gpu.hf import register_function

    name = register_function(
        "test-lab-sa",
        lambda q, k, v, causal, layer, layers: approximate("sa-band", q, k, v, 6, seed=layer, causal=causal),
    )
    assert torch.allclose(capture(name), seen["lab"], atol=1e-12)
    model.set_attn_implementation(register(METHODS["sa-band"], 6))
    with pytest.raises(ValueError, match=r"^cache: .*prefill only.*use_cache=False.*gpu\.hf\.register: swa, ") as info:
        model.generate(ids[:, :8], max_new_tokens=2, do_sample=False)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("method", "kwargs", "match"),
    [
        (METHODS["performer"], {"decode": "exact"}, r"^decode: performer runs prefill only"),
        (METHODS["sa-band"], {"exact_layers": (0,)}, r"^exact_layers: sa-band runs prefill only"),
        (METHODS["mla"], {"max_length": 64}, r"^max_length: mla runs prefill only"),
        ("sa", {"layer_options": [{}]}, r"^layer_options: sa runs generation forms"),
        ("nope", {}, r"^method: expected one of"),
        ("sa", {"decode": "lazy"}, r"^decode: expected one of"),
    ],
)
def test_options_that_do_not_apply_are_one_line_errors(method, kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        register(method, 8, **kwargs)
    assert "\n" not in str(info.value)


def test_the_name_says_the_options_even_from_an_iterator():
    assert register("sa", 8, 1, decode="exact", exact_layers=iter([3, 0])) == "receptive-sa-8-s1-exact-decode-exact-0.3"
    assert register(METHODS["sa"], 8, 2) == "receptive-prefill-sa-8-s2"


@torch.no_grad()
def test_a_generation_form_in_a_bidirectional_model_names_the_prefill_form():
    config = transformers.BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    model = transformers.BertModel(config, add_pooling_layer=False).eval()
    model.set_attn_implementation(register("sa", 4))
    with pytest.raises(ValueError, match=r"^is_causal: .*register\(gpu\.approx\.METHODS\['sa'\], budget\)") as info:
        model(torch.arange(8)[None])
    assert "\n" not in str(info.value)
    model.set_attn_implementation(register(METHODS["sa"], 4))
    assert model(torch.arange(8)[None]).last_hidden_state.shape == (1, 8, 16)
