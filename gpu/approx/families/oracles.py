"""Oracles: they read the whole ``n x n`` attention to pick the best approximation of their kind, so they bound what
a method of that kind can reach, at the full ``O(n^2 d)`` cost."""

from __future__ import annotations

import torch

from .common import causal_mask, scale_of, wide


def top_k(q, k, v, m, seed, causal=False):
    """Oracle: each row keeps its ``m`` largest scores (causal: among keys ``j <= i``), exact softmax over them."""
    scores = q @ k.transpose(-1, -2) * scale_of(q)
    if causal:
        scores = scores.masked_fill(~causal_mask(q.shape[-2], q.device), float("-inf"))
    keep = min(m, scores.shape[-1])
    threshold = scores.topk(keep, dim=-1).values[..., -1:]
    return torch.softmax(scores.masked_fill(scores < threshold, float("-inf")), dim=-1) @ v


def truncated_svd(q, k, v, m, seed, causal=False):
    """Oracle: the best rank-``m`` approximation ``A_m`` of the attention matrix ``A`` in any unitarily invariant
    norm (Eckart-Young-Mirsky), then ``A_m v``."""
    a = torch.softmax(q @ k.transpose(-1, -2) * scale_of(q), dim=-1)
    u, s, vh = torch.linalg.svd(wide(a))
    r = min(m, s.shape[-1])
    return ((u[..., :r] * s[..., None, :r]) @ (vh[..., :r, :] @ wide(v))).to(v.dtype)
