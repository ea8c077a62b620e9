"""A tiny pre-norm transformer whose attention is full, SWA, SA or gated SA+SWA, at equal width and window.

Block ``l`` (1-based) computes ``x = x + Attn_l(LN(x))``, ``x = x + MLP(LN(x))`` with ``MLP(x) = W_2 GELU(W_1 x)``
(hidden ``4 d_model``; Radford et al. 2019 pre-norm, Xiong et al. 2020). Every attention kind has the same
projections (``W_q``, ``W_kv``, ``W_o``, no biases, RoPE at original positions): ``full`` and ``swa`` are
:class:`WindowAttention`, ``sa`` is :class:`gpu.attention.modules.StochasticAttentionLayer` and ``sa+swa`` is
:class:`gpu.attention.modules.GatedSAPlusSWALayer`, which adds two per-head sigmoid gates, ``2 (d_model h + h)``
parameters per layer (:func:`parameter_counts` reports them). SA layer ``l`` uses seed ``seed`` and layer index ``l``,
so in eval mode its permutation is :func:`receptive.permutations.layer_permutation` ``(n, seed, l)`` and the model's
reachability is exactly ``receptive.make_pattern(kind, n, w, causal, seed=seed)`` through ``L`` layers; in training
every forward draws fresh permutations from torch's global generator.

The causal variants (:func:`receptive.patterns.causal_variants.variant_names`: ``sa-ms``,
``kleinberg``, ``dilated``, each ``+swa`` and ``-eq``) are :class:`gpu.attention.neighbour.PatternAttention`: the
same projections and RoPE, one softmax per head over the union of the keys the pattern's layer ``l`` lists (for
``+swa`` the window is merged into that list: pattern semantics, no gates), the pattern
``make_variant(kind, n, min(w, n), causal, seed)`` in eval mode and a fresh pattern seed from torch's global
generator at every training forward (``dilated`` is deterministic).
"""

from __future__ import annotations

import torch
from torch import nn

from gpu.attention import full_attention, swa_attention
from gpu.attention.modules import AttentionProjections, GatedSAPlusSWALayer, StochasticAttentionLayer
from gpu.attention.neighbour import PatternAttention
from receptive.patterns.causal_variants import variant_names
from receptive.windows import max_window

#: the kinds of the original experiments (the default of every config)
BASE_KINDS = ("full", "swa", "sa", "sa+swa")
#: the causal variants, attended through their explicit key lists
VARIANT_KINDS = tuple(variant_names())
KINDS = BASE_KINDS + VARIANT_KINDS


class WindowAttention(AttentionProjections):
    """Full attention (``window`` ignored) or SWA of ``window`` keys per query (:mod:`receptive.windows`), with the
    same projections as :class:`gpu.attention.modules.StochasticAttentionLayer`."""

    def __init__(self, d_model, n_heads, window, *, kind="swa", causal=True, rope=True):
        if kind not in ("full", "swa"):
            raise ValueError(f"kind: expected 'full' or 'swa', got {kind!r}")
        super().__init__(d_model, n_heads, None, window, causal, rope)
        self.kind = kind

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x)
        if self.kind == "full":
            return self.merge(full_attention(q, k, v, causal=self.causal, check_finite=False))
        n = x.shape[1]
        w = min(self.w, max_window(n, self.causal, False))
        return self.merge(swa_attention(q, k, v, w, causal=self.causal, check_finite=False))


def make_attention(kind: str, d_model: int, n_heads: int, window: int, causal: bool, seed: int, layer: int):
    """The attention module of ``kind`` for block ``layer`` (1-based)."""
    if kind in ("full", "swa"):
        return WindowAttention(d_model, n_heads, window, kind=kind, causal=causal)
    if kind == "sa":
        return StochasticAttentionLayer(d_model, n_heads, window, causal=causal, seed=seed, layer=layer)
    if kind == "sa+swa":
        return GatedSAPlusSWALayer(d_model, n_heads, window, causal=causal, seed=seed, layer=layer)
    if kind in VARIANT_KINDS:
        return PatternAttention(d_model, n_heads, window, variant=kind, causal=causal, seed=seed, layer=layer)
    raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")


class Block(nn.Module):
    """``x + Attn(LN(x))`` then ``x + MLP(LN(x))``."""

    def __init__(self, attention: nn.Module, d_model: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attention = attention
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    """Token embedding, ``layers`` pre-norm blocks of attention ``kind``, final LayerNorm, linear head.

    ``forward(tokens)`` maps ``(batch, n)`` int64 tokens to ``(batch, n, vocab_out)`` logits. No learned positions:
    the only position signal is RoPE inside attention, identical for every kind.
    """

    def __init__(
        self,
        kind: str,
        vocab: int,
        d_model: int,
        n_heads: int,
        layers: int,
        window: int,
        causal: bool,
        seed: int = 0,
        vocab_out: int | None = None,
    ):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
        for name, value in (("vocab", vocab), ("d_model", d_model), ("n_heads", n_heads), ("layers", layers)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected a positive integer, got {value!r}")
        self.kind, self.causal, self.window = kind, causal, window
        self.embed = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(
            Block(make_attention(kind, d_model, n_heads, window, causal, seed, layer), d_model)
            for layer in range(1, layers + 1)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab if vocab_out is None else vocab_out)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def parameter_counts(model: TinyTransformer) -> dict:
    """``{"total", "gates"}``: all trainable parameters and those of the SA+SWA gates (``2 (d h + h)`` per layer,
    zero for the other kinds); ``total - gates`` is the same for every kind at equal width and depth."""
    total = sum(p.numel() for p in model.parameters() if p.requires_grad)
    gates = sum(b.attention.extra_parameters for b in model.blocks if isinstance(b.attention, GatedSAPlusSWALayer))
    return {"total": total, "gates": gates, "without_gates": total - gates}
