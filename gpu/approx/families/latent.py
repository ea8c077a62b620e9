"""Latent attention: keys and values of all heads from one low-rank latent per token, the KV cache of Multi-head
Latent Attention (MLA, DeepSeek-AI 2024, DeepSeek-V2, arXiv 2405.04434, Sec. 2.1) and the training-free conversion
of per-head keys and values to such a latent (TransMLA, Meng, Tang, Zhang, Wu et al. 2025, arXiv 2502.07864).

Per token the ``h`` heads' keys and values are one row ``x_t = [k_t^1 .. k_t^h, v_t^1 .. v_t^h]`` of width
``2 h d``; MLA caches ``c_t = x_t W`` (``W``: ``2hd x r``, orthonormal columns) and reconstructs ``x_t ~ c_t W^T``
(DeepSeek's up-projections ``W^UK, W^UV``). Training-free, ``W`` is the top-``r`` right singular subspace of the
stacked rows (the PCA without centring, which minimises ``sum_t |x_t - x_t W W^T|^2``); exact at ``r = 2hd``.
DeepSeek's decoupled RoPE part is not modelled (the inputs carry no positional rotation here).
"""

from __future__ import annotations

import torch

from gpu.approx.costs import Cost, dense_flops
from gpu.approx.families.common import exact_attention, wide


def _rows(k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``(b, n, 2 h d)``: every token's keys and values of all heads in one row."""
    b, h, n, d = k.shape
    return torch.cat([k.transpose(1, 2).reshape(b, n, h * d), v.transpose(1, 2).reshape(b, n, h * d)], dim=-1)


def _split(x: torch.Tensor, h: int, d: int):
    b, n, _ = x.shape
    k, v = x[..., : h * d], x[..., h * d :]
    return (t.reshape(b, n, h, d).transpose(1, 2) for t in (k, v))


def check_rank(r, h: int, d: int, what: str) -> int:
    """Check a latent width: an integer in ``[1, 2 h d]``, else a one-line ``ValueError`` naming the budget.

    Parameters
    ----------
    r : int
        The latent width (the method's budget).
    h : int
        Number of heads.
    d : int
        Head dimension.
    what : str
        The method's name, for the message.

    Returns
    -------
    int
        ``r``.

    Raises
    ------
    ValueError
        If ``r`` is not an integer (booleans included) or lies outside ``[1, 2 h d]``.

    Examples
    --------
    >>> from gpu.approx.families.latent import check_rank
    >>> check_rank(3, 2, 2, "MLA")
    3
    >>> check_rank(9, 2, 2, "MLA")
    Traceback (most recent call last):
        ...
    ValueError: budget: the MLA latent width r must be an integer in [1, 2 heads d = 8], got 9
    """
    if isinstance(r, bool) or not isinstance(r, int) or not 1 <= r <= 2 * h * d:
        raise ValueError(
            f"budget: the {what} latent width r must be an integer in [1, 2 heads d = {2 * h * d}], got {r!r}"
        )
    return int(r)


def latent_basis(k: torch.Tensor, v: torch.Tensor, rank: int, balance: float = 1.0) -> torch.Tensor:
    """``W`` (``2hd x rank``): the top right singular vectors of the rows ``[k / balance, v]``.

    Pooled over the batch (eigenvectors of their second-moment matrix): the uncentred PCA that minimises the
    reconstruction error of the rows (Eckart & Young [1]_), as MLA's training-free conversion [2]_.

    Parameters
    ----------
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d)``.
    rank : int
        Latent width ``r`` (``1 <= rank <= 2 h d``).
    balance : float, optional
        Keys are divided by it before the decomposition (:func:`key_value_balance`).

    Returns
    -------
    torch.Tensor
        ``(2 h d, rank)`` with orthonormal columns, in ``k.dtype``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.latent import latent_basis
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 6, 2, generator=g, dtype=torch.float64) for _ in range(3))
    >>> W = latent_basis(k, v, 3)
    >>> W.shape, torch.allclose(W.T @ W, torch.eye(3, dtype=torch.float64))
    (torch.Size([8, 3]), True)

    References
    ----------
    .. [1] Eckart & Young, "The approximation of one matrix by another of lower rank", Psychometrika 1,
       1936.
    .. [2] DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model",
       2024, arXiv:2405.04434, Sec. 2.1.
    """
    x = wide(_rows(k / balance, v))
    second = torch.einsum("bni,bnj->ij", x, x)
    _, vectors = torch.linalg.eigh(second)
    return vectors[:, -rank:].flip(-1).to(k.dtype)


def _calibration(k, v, calibration, causal, name):
    if calibration is None:
        if causal:
            raise ValueError(
                f"calibration: causal {name} needs calibration=(k, v) from other text (its latent projection is a "
                "weight and must not see the sequence itself)"
            )
        return k, v
    if not isinstance(calibration, tuple | list) or len(calibration) != 2:
        raise ValueError("calibration: expected a pair (k, v) of (batch, heads, N, d) tensors")
    ck, cv = calibration
    if ck.dim() != 4 or ck.shape[1:2] + ck.shape[3:] != k.shape[1:2] + k.shape[3:] or cv.shape != ck.shape:
        raise ValueError(
            f"calibration: expected k, v of shape (batch, {k.shape[1]}, N, {k.shape[3]}), got "
            f"{tuple(ck.shape)} and {tuple(cv.shape)}"
        )
    return ck.to(k.dtype), cv.to(k.dtype)


def compress(k, v, basis: torch.Tensor, balance: float = 1.0):
    """``(k_hat, v_hat)``: keys and values reconstructed from the latent ``c_t = [k_t / balance, v_t] W`` [1]_.

    Parameters
    ----------
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d)``.
    basis : torch.Tensor
        ``W``, ``(2 h d, r)`` with orthonormal columns (:func:`latent_basis`).
    balance : float, optional
        The key scaling the basis was fitted with.

    Returns
    -------
    k_hat : torch.Tensor
        Reconstructed keys, shape of ``k``.
    v_hat : torch.Tensor
        Reconstructed values, shape of ``v``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.latent import compress, latent_basis
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 6, 2, generator=g, dtype=torch.float64) for _ in range(3))
    >>> k_hat, v_hat = compress(k, v, latent_basis(k, v, 8))  # full width: exact
    >>> torch.allclose(k_hat, k), torch.allclose(v_hat, v)
    (True, True)

    References
    ----------
    .. [1] DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model",
       2024, arXiv:2405.04434, Sec. 2.1.
    """
    h, d = k.shape[1], k.shape[3]
    x = _rows(k / balance, v)
    k_hat, v_hat = _split((x @ basis) @ basis.T, h, d)
    return k_hat * balance, v_hat


def mla(q, k, v, m, seed, causal=False, calibration=None):
    """MLA [1]_ with a latent of width ``r = m`` per token (KV cache ``r`` numbers per token instead of ``2 h d``).

    ``W`` from the SVD of ``[K V]`` of ``calibration=(k, v)`` or, bidirectional, of the given layer; exact attention
    on the reconstructed keys and values (causal: over ``j <= i``, exact at ``r = 2hd``).

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d)``.
    m : int
        Latent width ``r`` in ``[1, 2 h d]``.
    seed : int
        Unused: the basis is deterministic.
    causal : bool, optional
        Causal attention (needs ``calibration``).
    calibration : tuple of torch.Tensor or None, optional
        ``(k, v)`` of shape ``(batch', heads, N, d)`` from other text to fit the basis on; ``None``: the given layer
        (bidirectional only).

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d)``.

    Raises
    ------
    ValueError
        If ``m`` is not an integer in ``[1, 2 h d]``, ``causal`` is set without ``calibration``, or ``calibration``
        is not a pair of tensors of the keys' heads and dimension.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.latent import mla
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 6, 2, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(mla(q, k, v, 8, seed=0, causal=True, calibration=(k, v)), exact_attention(q, k, v, True)) < 1e-12
    True
    >>> mla(q, k, v, 4, seed=0).shape
    torch.Size([1, 2, 6, 2])

    References
    ----------
    .. [1] DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model",
       2024, arXiv:2405.04434, Sec. 2.1.
    """
    r = check_rank(m, k.shape[1], k.shape[3], "MLA")
    ck, cv = _calibration(k, v, calibration, causal, "mla")
    k_hat, v_hat = compress(k, v, latent_basis(ck, cv, r))
    return exact_attention(q, k_hat, v_hat, causal=causal)


def mla_cost(n, d, m, heads, causal, element_bytes):
    """Cost of multi-head latent attention (MLA [1]_) with a latent of width ``r = m`` per token.

    Per token the latent ``c = x W`` and back ``x W W^T`` (``2 (2hd) r`` FLOPs each), then exact attention: the
    full cost plus the projections; the saving is the cache. The basis (the second-moment matrix, ``2 n (2hd)^2``,
    and its eigendecomposition, ``22 (2hd)^3``) is the one-time conversion, like trained weights: not counted.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Latent width ``r`` (numbers cached per token).
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
    >>> from gpu.approx.families.latent import mla_cost
    >>> mla_cost(64, 8, 16, 2, False, 4)
    Cost(flops=434176.0, peak_bytes=65536.0, kv_cache_bytes_per_token=64.0)

    References
    ----------
    .. [1] DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model",
       2024, arXiv:2405.04434.
    """
    width = 2 * heads * d
    f = heads * dense_flops(n, d) / (2 if causal else 1) + 2 * (2 * n * width * m)
    mem = heads * (4 * n * d + n * n) + n * (width + m) + width * width
    return Cost(float(f), float(element_bytes * mem), float(element_bytes * m))


def key_value_balance(k: torch.Tensor, v: torch.Tensor) -> float:
    """TransMLA's [1]_ key-value balancing factor ``alpha = ||K||_F / ||V||_F``.

    Keys are divided by it before the joint PCA, so that the larger-norm keys do not take the whole latent.

    Parameters
    ----------
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d)``.

    Returns
    -------
    float
        ``alpha`` (computed in float64).

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.latent import key_value_balance
    >>> v = torch.ones(1, 2, 3, 4)
    >>> key_value_balance(2 * v, v)
    2.0

    References
    ----------
    .. [1] Meng et al., "TransMLA: Multi-Head Latent Attention Is All You Need", 2025,
       arXiv:2502.07864.
    """
    return float(torch.linalg.norm(k.double()) / torch.linalg.norm(v.double()).clamp_min(1e-300))


def transmla(q, k, v, m, seed, causal=False, calibration=None):
    """TransMLA-style [1]_ training-free conversion of per-head keys and values to a shared latent.

    The per-head keys and values of a pretrained layer become a shared latent of rank ``r = m`` by the SVD of the
    balanced rows ``[K / alpha, V]`` (``alpha`` = :func:`key_value_balance` of the calibration data), then exact
    attention on the reconstruction. TransMLA also rotates RoPE into few dimensions (RoRoPE) and fine-tunes
    afterwards; neither is done here.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d)``.
    m : int
        Latent width ``r`` in ``[1, 2 h d]``.
    seed : int
        Unused: the basis is deterministic.
    causal : bool, optional
        Causal attention (needs ``calibration``).
    calibration : tuple of torch.Tensor or None, optional
        ``(k, v)`` of shape ``(batch', heads, N, d)`` from other text to fit the basis on; ``None``: the given layer
        (bidirectional only).

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d)``.

    Raises
    ------
    ValueError
        If ``m`` is not an integer in ``[1, 2 h d]``, ``causal`` is set without ``calibration``, or ``calibration``
        is not a pair of tensors of the keys' heads and dimension.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.latent import transmla
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 6, 2, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(transmla(q, k, v, 8, seed=0), exact_attention(q, k, v)) < 1e-12
    True

    References
    ----------
    .. [1] Meng et al., "TransMLA: Multi-Head Latent Attention Is All You Need", 2025,
       arXiv:2502.07864.
    """
    r = check_rank(m, k.shape[1], k.shape[3], "TransMLA")
    ck, cv = _calibration(k, v, calibration, causal, "transmla")
    alpha = key_value_balance(ck, cv)
    k_hat, v_hat = compress(k, v, latent_basis(ck, cv, r, alpha), alpha)
    return exact_attention(q, k_hat, v_hat, causal=causal)


def latent_errors(k, v, ranks, balance: bool = True) -> list[dict]:
    """The conversion error against the rank, with (TransMLA [1]_) or without (plain MLA [2]_) balancing.

    For every ``r`` in ``ranks`` the relative Frobenius errors of the reconstructed keys and values,
    ``||K - K_hat||_F / ||K||_F`` and ``||V - V_hat||_F / ||V||_F``; the basis is fitted on the same ``k, v``.

    Parameters
    ----------
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d)``.
    ranks : iterable of int
        Latent widths, each in ``[1, 2 h d]``.
    balance : bool, optional
        Divide the keys by :func:`key_value_balance` before the decomposition.

    Returns
    -------
    list of dict
        One ``{"rank", "key_error", "value_error"}`` per rank.

    Raises
    ------
    ValueError
        If a rank is not an integer in ``[1, 2 h d]``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.latent import latent_errors
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 6, 2, generator=g, dtype=torch.float64) for _ in range(3))
    >>> rows = latent_errors(k, v, [4, 8])
    >>> [row["rank"] for row in rows], rows[1]["key_error"] < 1e-12
    ([4, 8], True)

    References
    ----------
    .. [1] Meng et al., "TransMLA: Multi-Head Latent Attention Is All You Need", 2025,
       arXiv:2502.07864.
    .. [2] DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model",
       2024, arXiv:2405.04434, Sec. 2.1.
    """
    h, d = k.shape[1], k.shape[3]
    alpha = key_value_balance(k, v) if balance else 1.0
    rows = []
    for r in ranks:
        r = check_rank(r, h, d, "TransMLA" if balance else "MLA")
        k_hat, v_hat = compress(k, v, latent_basis(k, v, r, alpha), alpha)
        rows.append(
            {
                "rank": r,
                "key_error": float(torch.linalg.norm((k - k_hat).double()) / torch.linalg.norm(k.double())),
                "value_error": float(torch.linalg.norm((v - v_hat).double()) / torch.linalg.norm(v.double())),
            }
        )
    return rows
