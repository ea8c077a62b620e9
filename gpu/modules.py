"""Drop-in multi-head attention modules: Stochastic Attention and gated SA+SWA (Jin & Sui 2026, arXiv 2604.00754).

Both project ``x`` (``(batch, seq, d_model)``) to q, k, v (GQA: ``n_kv_heads`` may divide ``n_heads``), apply
rotary position embeddings with the *original* positions (before any permutation, so positions mean what they
mean in the text), attend, and project back. In training every forward draws a fresh permutation; in eval the
permutation of layer ``layer`` and seed ``seed`` is :func:`receptive.permutations.layer_permutation`'s, so a
fixed model analyses with ``receptive.coverage``.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import nn

from receptive.patterns.causal_variants import block_permutation, check_blocks, default_blocks
from receptive.validation import check_int
from receptive.windows import max_window

from .attention import sa_attention, swa_attention


def rotary(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """RoPE (Su et al. 2021, RoFormer, Eq. 34) on ``(batch, heads, seq, head_dim)`` at positions ``0..seq-1``:
    pairs ``(x_{2i}, x_{2i+1})`` rotated by ``pos * base^(-2i/d)``."""
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"head_dim: rotary embeddings need an even head dimension, got {d}")
    inv = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d)
    angles = torch.arange(x.shape[-2], device=x.device, dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


class AttentionProjections(nn.Module):
    """The shared part of every attention module: ``W_q``, ``W_kv`` and ``W_o`` (no biases, GQA), RoPE at original
    positions, the window clipped to the sequence. Subclasses implement ``forward`` with ``qkv`` and ``merge``."""

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None, window: int, causal: bool, rope: bool):
        super().__init__()
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        for name, value in (("d_model", d_model), ("n_heads", n_heads), ("n_kv_heads", n_kv_heads), ("window", window)):
            check_int(name, value, 1)
        if d_model % n_heads or n_heads % n_kv_heads:
            raise ValueError(f"n_heads: must divide d_model ({d_model}) and be a multiple of n_kv_heads ({n_kv_heads})")
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d_model // n_heads
        self.window, self.causal, self.rope = window, causal, rope
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.kv = nn.Linear(d_model, 2 * n_kv_heads * self.head_dim, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def qkv(self, x):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, self.n_heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, n, 2, self.n_kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.rope:
            q, k = rotary(q), rotary(k)
        return q, k, v

    def merge(self, y):
        b, h, n, d = y.shape
        return self.out(y.transpose(1, 2).reshape(b, n, h * d))

    def window_for(self, n: int) -> int:
        return min(self.window, max_window(n, False, False))  # SA: the two-sided band in permuted order


VARIANTS = ("sa", "sa-ms")


def head_blocks(n: int, heads: int, window: int, blocks=None) -> list[int]:
    """Block size of every head of multi-scale SA: ``blocks`` (default
    :func:`receptive.patterns.causal_variants.default_blocks`: ``w, w^2, ..., n``) assigned to the heads in turn,
    the largest scale first (with fewer heads than scales, the smallest scales are dropped)."""
    scales = check_blocks(default_blocks(n, window) if blocks is None else blocks, n)[::-1]
    return [scales[h % len(scales)] for h in range(heads)]


def multiscale_permutations(n, heads, window, *, blocks=None, seed=None, layer=1, generator=None, device=None):
    """Per-head permutations ``(heads, n)`` of multi-scale SA (``sa-ms``): head ``h`` permutes uniformly within
    blocks of :func:`head_blocks`'s size. ``seed`` gives :func:`receptive.patterns.causal_variants.block_permutation`'s
    (the ones the coverage engine analyses); otherwise they are drawn on ``device`` (q's) with ``generator``: the
    block index plus a uniform tie-break, argsorted, so no host round trip."""
    sizes = head_blocks(n, heads, window, blocks)
    if seed is not None:
        return _seeded_multiscale(n, tuple(sizes), seed, layer, torch.device(device) if device else torch.device("cpu"))
    where = device if generator is None else generator.device
    positions = torch.arange(n, device=where, dtype=torch.float64)
    noise = torch.rand((heads, n), generator=generator, device=where, dtype=torch.float64)
    size = torch.tensor(sizes, device=where, dtype=torch.float64)[:, None]
    return torch.argsort(torch.floor(positions / size) + noise, dim=-1).to(device)


@functools.lru_cache(maxsize=64)
def _seeded_multiscale(n: int, sizes: tuple, seed: int, layer: int, device: torch.device) -> torch.Tensor:
    """The seeded per-head block permutations on ``device``, built and copied once per (n, sizes, seed, layer)."""
    return torch.as_tensor(np.stack([block_permutation(n, b, seed, layer) for b in sizes]), device=device)


def _check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"variant: expected one of {', '.join(VARIANTS)}, got {variant!r}")
    return variant


class StochasticAttention(AttentionProjections):
    """Multi-head Stochastic Attention with window ``window`` (keys per query, itself included).

    ``variant="sa-ms"``: multi-scale SA (issue 13), every head permutes within blocks of its own size
    (:func:`multiscale_permutations`), the same band and cost per head as SA."""

    def __init__(
        self, d_model, n_heads, window, *, n_kv_heads=None, causal=True, rope=True, seed=0, layer=1, variant="sa",
        blocks=None,
    ):  # fmt: skip
        super().__init__(d_model, n_heads, n_kv_heads, window, causal, rope)
        self.seed, self.layer = seed, layer
        self.variant, self.blocks = _check_variant(variant), blocks
        self.last_perm: torch.Tensor | None = None

    def sa_path(self, q, k, v, n):
        fixed = None if self.training else self.seed
        w = self.window_for(n)
        if self.variant == "sa-ms":
            perm = multiscale_permutations(n, q.shape[1], w, blocks=self.blocks, seed=fixed, layer=self.layer,
                                           device=q.device)  # fmt: skip
            return sa_attention(q, k, v, w, perm=perm, causal=self.causal, return_perm=True, validate=False)
        return sa_attention(q, k, v, w, causal=self.causal, seed=fixed, layer=self.layer, return_perm=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x)
        y, self.last_perm = self.sa_path(q, k, v, x.shape[1])
        return self.merge(y)


class GatedSASWA(AttentionProjections):
    """Both paths on the same q, k, v: ``Y = sigmoid(x W_sa) * Y_sa + sigmoid(x W_swa) * Y_swa`` with per-token,
    per-head gates (two independent sigmoids, reported better than a softmax gate)."""

    def __init__(
        self,
        d_model,
        n_heads,
        window,
        *,
        n_kv_heads=None,
        causal=True,
        rope=True,
        seed=0,
        layer=1,
        window_swa: int | None = None,
        variant: str = "sa",
        blocks=None,
    ):
        super().__init__(d_model, n_heads, n_kv_heads, window, causal, rope)
        self.seed, self.layer = seed, layer
        self.variant, self.blocks = _check_variant(variant), blocks
        self.window_swa = window if window_swa is None else window_swa
        self.gate_sa = nn.Linear(d_model, n_heads)
        self.gate_swa = nn.Linear(d_model, n_heads)
        self.last_perm: torch.Tensor | None = None

    @property
    def extra_parameters(self) -> int:
        """Parameters the gates add to a plain attention layer: ``2 (d_model n_heads + n_heads)``."""
        return sum(p.numel() for p in (*self.gate_sa.parameters(), *self.gate_swa.parameters()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x)
        n = x.shape[1]
        y_sa, self.last_perm = StochasticAttention.sa_path(self, q, k, v, n)
        swa_window = min(self.window_swa, max_window(n, self.causal, False))
        y_swa = swa_attention(q, k, v, swa_window, causal=self.causal)
        g_sa = torch.sigmoid(self.gate_sa(x)).transpose(1, 2)[..., None]
        g_swa = torch.sigmoid(self.gate_swa(x)).transpose(1, 2)[..., None]
        return self.merge(g_sa * y_sa + g_swa * y_swa)
