"""Oracles: they read the whole ``n x n`` attention to pick the best approximation of their kind, so they bound what
a method of that kind can reach, at the full ``O(n^2 d)`` cost."""

from __future__ import annotations

import torch

from gpu.approx.costs import SOFTMAX, dense_flops, per_head_cost
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


def top_k_cost(n, d, m, heads, causal, element_bytes):
    """Cost of the top-k oracle [1]_: all ``n^2`` scores, then softmax attention over the ``m`` largest per row.

    ``2 n^2 d`` scores and ``n^2`` comparisons (half when causal) plus ``4 n m d + 5 n m`` on the kept keys;
    the lab masks a dense matrix, so it holds ``2 n^2`` numbers.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys kept per query (at most ``n``).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    element_bytes : int
        Bytes per number (2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx.families.oracles import top_k_cost
    >>> top_k_cost(64, 8, 16, 2, False, 4)
    Cost(flops=182272.0, peak_bytes=81920.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Gupta et al., "Memory-efficient Transformers via Top-k Attention", 2021, arXiv:2106.06899.
    """
    m = min(m, n)
    div = 2 if causal else 1
    f = (2 * n * n * d + n * n) / div + 2 * n * m * d + SOFTMAX * n * m
    return per_head_cost(f, 2 * n * n, 2 * d, n, d, heads, element_bytes)


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


def truncated_svd_cost(n, d, m, heads, causal, element_bytes):
    # scores, softmax, a full SVD (Golub-Van Loan: about 22 n^3 for U, S, V), then A_m v by the factors
    """Cost of the rank-``m`` SVD oracle: the dense attention matrix, its full SVD, then ``A_m v`` by the factors.

    The SVD of an ``n x n`` matrix is counted as about ``22 n^3`` FLOPs for ``U, S, V`` (Golub & Van Loan [1]_);
    the best rank-``m`` approximation in the Frobenius norm is the truncated SVD (Eckart & Young [2]_).

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Rank of the approximation.
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    element_bytes : int
        Bytes per number (2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx.families.oracles import truncated_svd_cost
    >>> truncated_svd_cost(64, 8, 16, 2, False, 4)
    Cost(flops=11902976.0, peak_bytes=114688.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Golub & Van Loan, "Matrix Computations", 4th ed., Johns Hopkins University Press, 2013, Sec. 8.6.
    .. [2] Eckart & Young, "The approximation of one matrix by another of lower rank", Psychometrika 1, 1936.
    """
    return per_head_cost(dense_flops(n, d) + 22 * n**3 + 4 * n * m * d, 3 * n * n, 2 * d, n, d, heads, element_bytes)
