"""Tensor methods: Tensor Product Attention (TPA, Zhang, Liu, Yuan et al. 2025, arXiv 2501.06425).

TPA writes every token's key matrix (heads x head dim) as a sum of ``R`` outer products,
``K_t = (1/R) sum_r a_r(t) (x) b_r(t)`` with ``a_r(t) in R^h``, ``b_r(t) in R^d`` computed from the token (and
values likewise), and caches only the factors: ``R (h + d)`` numbers per token for keys and as many for values
instead of ``2 h d``. Training-free, the best rank-``R`` factorisation of each token's given ``K_t`` and ``V_t`` is
its truncated SVD (Eckart-Young): an upper bound on what a trained TPA layer of rank ``R`` can represent per token.
It needs no other token, so it is causal as it stands.
"""

from __future__ import annotations

import torch

from .common import exact_attention, wide


def check_tpa_rank(r, h: int, d: int) -> int:
    top = min(h, d)
    if isinstance(r, bool) or not isinstance(r, int) or not 1 <= r <= top:
        raise ValueError(f"budget: the TPA rank R must be an integer in [1, min(heads, d) = {top}], got {r!r}")
    return int(r)


def per_token_rank(x: torch.Tensor, r: int) -> torch.Tensor:
    """``x`` (``(b, h, n, d)``) with every token's ``h x d`` matrix replaced by its best rank-``r`` approximation."""
    tokens = x.transpose(1, 2)  # (b, n, h, d)
    u, s, vh = torch.linalg.svd(wide(tokens), full_matrices=False)
    return ((u[..., :r] * s[..., None, :r]) @ vh[..., :r, :]).transpose(1, 2).to(x.dtype)


def tensor_product(q, k, v, m, seed, causal=False):
    """TPA at rank ``R = m``: keys and values replaced by their per-token rank-``R`` factorisations, then exact
    attention (causal: over ``j <= i``). Exact at ``R = min(h, d)``."""
    r = check_tpa_rank(m, k.shape[1], k.shape[3])
    return exact_attention(q, per_token_rank(k, r), per_token_rank(v, r), causal=causal)
