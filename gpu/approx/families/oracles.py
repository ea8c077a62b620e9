"""Oracles: they read the whole ``n x n`` attention to pick the best approximation of their kind, so they bound what
a method of that kind can reach, at the full ``O(n^2 d)`` cost."""

from __future__ import annotations

import torch

from gpu.approx.families.common import causal_mask, wide
from gpu.attention.neighbour import scale_of


def top_k(q, k, v, m, seed, causal=False):
    """Oracle [1]_: each row keeps its ``m`` largest scores (causal: among keys ``j <= i``), exact softmax over them.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Scores kept per row (ties with the ``m``-th are kept too).
    seed : int
        Unused: the oracle is deterministic.
    causal : bool, optional
        Causal attention.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.oracles import top_k
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(top_k(q, k, v, 8, seed=0, causal=True), exact_attention(q, k, v, causal=True)) < 1e-12
    True
    >>> relative_error(top_k(q, k, v, 2, seed=0), exact_attention(q, k, v)) > 0
    True

    References
    ----------
    .. [1] Gupta et al., "Memory-efficient Transformers via Top-k Attention", 2021, arXiv:2106.06899.
    """
    scores = q @ k.transpose(-1, -2) * scale_of(q)
    if causal:
        scores = scores.masked_fill(~causal_mask(q.shape[-2], q.device), float("-inf"))
    keep = min(m, scores.shape[-1])
    threshold = scores.topk(keep, dim=-1).values[..., -1:]
    return torch.softmax(scores.masked_fill(scores < threshold, float("-inf")), dim=-1) @ v


def truncated_svd(q, k, v, m, seed, causal=False):
    """Oracle: the best rank-``m`` approximation ``A_m`` of the attention matrix, then ``A_m v``.

    ``A_m`` is the best rank-``m`` approximation of ``A`` in any unitarily invariant norm (Eckart-Young-Mirsky
    [1]_, [2]_). The attention matrix is the bidirectional one.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Rank.
    seed : int
        Unused: the oracle is deterministic.
    causal : bool, optional
        Unused: ``A`` is the bidirectional attention matrix.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.oracles import truncated_svd
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(truncated_svd(q, k, v, 8, seed=0), exact_attention(q, k, v)) < 1e-12
    True

    References
    ----------
    .. [1] Eckart & Young, "The approximation of one matrix by another of lower rank", Psychometrika 1,
       1936.
    .. [2] Mirsky, "Symmetric gauge functions and unitarily invariant norms", Quarterly Journal of
       Mathematics 11, 1960.
    """
    a = torch.softmax(q @ k.transpose(-1, -2) * scale_of(q), dim=-1)
    u, s, vh = torch.linalg.svd(wide(a))
    r = min(m, s.shape[-1])
    return ((u[..., :r] * s[..., None, :r]) @ (vh[..., :r, :] @ wide(v))).to(v.dtype)
