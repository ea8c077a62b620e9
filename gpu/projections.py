"""The part every attention module shares: the q / kv / out projections (GQA), RoPE at original positions, and the
window clipped to the sequence (:class:`AttentionProjections`), and :func:`rotary` itself. ``gpu.modules`` and
``gpu.neighbour_attention`` build on it (re-exported by :mod:`gpu.modules`)."""

from __future__ import annotations

import torch
from torch import nn

from receptive.validation import check_int
from receptive.windows import max_window


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
