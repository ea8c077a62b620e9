"""The float64 dense masked attention every backend is tested against, with masks from receptive's patterns."""

from __future__ import annotations

import math

import numpy as np
import torch

from receptive import StochasticAttention, make_pattern


def dense_reference(q, k, v, mask):
    """float64 softmax(q k^T / sqrt d) v with an explicit boolean (n, n) or (h, n, n) mask; GQA by repetition."""
    q, k, v = (t.cpu().double() for t in (q, k, v))
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~torch.as_tensor(mask), float("-inf"))
    return torch.softmax(scores, -1) @ v


def mask_of(pattern) -> np.ndarray:
    return pattern.adjacency(1).toarray()


def swa_mask(n: int, w: int, causal: bool) -> np.ndarray:
    return mask_of(make_pattern("swa", n, w, causal))


def sa_mask(perm, w: int, causal: bool, heads: int) -> np.ndarray:
    """(heads, n, n): one mask per head from a shared (n,) or per-head (heads, n) permutation."""
    perm = np.asarray(torch.as_tensor(perm).cpu())
    rows = perm if perm.ndim == 2 else np.broadcast_to(perm, (heads, perm.size))
    return np.stack([mask_of(StochasticAttention(perm.shape[-1], w, causal, permutations=[p])) for p in rows])
