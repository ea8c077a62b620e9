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

from gpu.approx.costs import Cost, dense_flops
from gpu.approx.families.common import exact_attention, wide


def check_tpa_rank(r, h: int, d: int) -> int:
    """Check a TPA rank: an integer in ``[1, min(h, d)]``, else a one-line ``ValueError`` naming the budget.

    Parameters
    ----------
    r : int
        The rank ``R`` (the method's budget).
    h : int
        Number of heads.
    d : int
        Head dimension.

    Returns
    -------
    int
        ``r``.

    Raises
    ------
    ValueError
        If ``r`` is not an integer (booleans included) or lies outside ``[1, min(h, d)]``.

    Examples
    --------
    >>> from gpu.approx.families.tensor import check_tpa_rank
    >>> check_tpa_rank(2, 2, 4)
    2
    >>> check_tpa_rank(3, 2, 4)
    Traceback (most recent call last):
        ...
    ValueError: budget: the TPA rank R must be an integer in [1, min(heads, d) = 2], got 3
    """
    top = min(h, d)
    if isinstance(r, bool) or not isinstance(r, int) or not 1 <= r <= top:
        raise ValueError(f"budget: the TPA rank R must be an integer in [1, min(heads, d) = {top}], got {r!r}")
    return int(r)


def per_token_rank(x: torch.Tensor, r: int) -> torch.Tensor:
    """``x`` with every token's ``h x d`` matrix replaced by its best rank-``r`` approximation [1]_.

    The truncated SVD of each token's matrix, the factors a rank-``r`` TPA layer [2]_ would cache.

    Parameters
    ----------
    x : torch.Tensor
        Keys or values, ``(b, h, n, d)``.
    r : int
        Rank (``1 <= r <= min(h, d)``).

    Returns
    -------
    torch.Tensor
        ``(b, h, n, d)`` in ``x.dtype``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.tensor import per_token_rank
    >>> x = torch.randn(1, 2, 3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    >>> torch.allclose(per_token_rank(x, 2), x)
    True
    >>> torch.linalg.matrix_rank(per_token_rank(x, 1).transpose(1, 2))
    tensor([[1, 1, 1]])

    References
    ----------
    .. [1] Eckart & Young, "The approximation of one matrix by another of lower rank", Psychometrika 1,
       1936.
    .. [2] Zhang et al., "Tensor Product Attention Is All You Need", 2025, arXiv:2501.06425.
    """
    tokens = x.transpose(1, 2)  # (b, n, h, d)
    u, s, vh = torch.linalg.svd(wide(tokens), full_matrices=False)
    return ((u[..., :r] * s[..., None, :r]) @ vh[..., :r, :]).transpose(1, 2).to(x.dtype)


def tensor_product(q, k, v, m, seed, causal=False):
    """TPA [1]_ at rank ``R = m``: per-token rank-``R`` keys and values, then exact attention.

    Keys and values replaced by their per-token rank-``R`` factorisations (:func:`per_token_rank`), then exact
    attention (causal: over ``j <= i``). Exact at ``R = min(h, d)``.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d)``.
    m : int
        Rank ``R`` in ``[1, min(heads, d)]``.
    seed : int
        Unused: the factorisation is deterministic.
    causal : bool, optional
        Causal attention.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d)``.

    Raises
    ------
    ValueError
        If ``m`` is not an integer in ``[1, min(heads, d)]``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.tensor import tensor_product
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 6, 2, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(tensor_product(q, k, v, 2, seed=0, causal=True), exact_attention(q, k, v, causal=True)) < 1e-12
    True

    References
    ----------
    .. [1] Zhang et al., "Tensor Product Attention Is All You Need", 2025, arXiv:2501.06425.
    """
    r = check_tpa_rank(m, k.shape[1], k.shape[3])
    return exact_attention(q, per_token_rank(k, r), per_token_rank(v, r), causal=causal)


def tensor_product_cost(n, d, m, heads, causal, element_bytes):
    """Cost of tensor product attention (TPA [1]_) with per-token rank ``R = m`` of keys and values.

    Per token two ``h x d`` SVDs (about ``4 h d min(h, d) + 8 min(h,d)^3`` each, Golub-Van Loan's thin SVD),
    the rank-``R`` reconstruction, then exact attention; cache ``2 R (h + d)`` numbers per token.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Rank ``R`` of each token's key and value factors.
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
    >>> from gpu.approx.families.tensor import tensor_product_cost
    >>> tensor_product_cost(64, 8, 16, 2, False, 4)
    Cost(flops=393216.0, peak_bytes=57344.0, kv_cache_bytes_per_token=1280.0)

    References
    ----------
    .. [1] Zhang et al., "Tensor Product Attention Is All You Need", 2025, arXiv:2501.06425.
    """
    small = min(heads, d)
    svds = 2 * n * (4 * heads * d * small + 8 * small**3)
    f = heads * dense_flops(n, d) / (2 if causal else 1) + svds + 2 * 2 * n * heads * d * m
    peak = element_bytes * heads * (4 * n * d + n * n + 2 * n * d)
    return Cost(float(f), float(peak), float(element_bytes * 2 * m * (heads + d)))
