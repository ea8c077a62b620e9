"""Low rank of a PSD kernel on the ``2n`` points ``[Q; K]``: Skyformer (Chen, Zeng, Ji & Yang 2021, NeurIPS) and
pivoted (incomplete) Cholesky (e.g. Harbrecht, Peters & Schneider 2012).

Both see the softmax numerator as the off-diagonal block of a PSD matrix on ``[Q; K]``: Skyformer through the
Gaussian kernel ``kappa(x, y) = exp(-|x - y|^2 / 2 sqrt d)``, with
``exp(q . k / sqrt d) = exp(|q|^2 / 2 sqrt d) kappa(q, k) exp(|k|^2 / 2 sqrt d)``; pivoted Cholesky through the
exponential kernel ``exp(x . y / sqrt d)`` itself. A low-rank ``C ~ L L^T`` gives ``exp(s_ij) ~ (L_Q L_K^T)_ij``
(times the diagonal scalings for the Gaussian kernel).
"""

from __future__ import annotations

import math

import torch

from gpu.approx.costs import per_head_cost
from gpu.approx.families.common import generator, wide


def _gaussian(x, y, width):
    sq = (x * x).sum(-1)[..., :, None] + (y * y).sum(-1)[..., None, :] - 2 * x @ y.transpose(-1, -2)
    return torch.exp(-sq.clamp_min(0) / (2 * width))


def _kernel_attention(q, k, v, left, right):
    """``O = (a_i (L_Q L_K^T)_ij b_j) v / row sums`` with ``a, b`` the diagonal scalings of the Gaussian kernel and
    ``left = L_Q, right = L_K`` factors; ``b`` is shifted by its maximum (it cancels). Linear in ``n``."""
    width = math.sqrt(q.shape[-1])
    log_b = (k * k).sum(-1) / (2 * width)
    b = torch.exp(log_b - log_b.amax(-1, keepdim=True))[..., None]
    numerator = left @ (right.transpose(-1, -2) @ (b * v))
    denominator = left @ (right.transpose(-1, -2) @ b)
    tiny = torch.finfo(q.dtype).tiny
    return numerator / torch.where(denominator.abs() > tiny, denominator, torch.full_like(denominator, tiny))


def skyformer(q, k, v, m, seed, causal=False):
    """Skyformer's [1]_ Nystrom approximation [2]_ of the symmetrised Gaussian kernel on ``[Q; K]``.

    ``m`` landmarks drawn uniformly without replacement from the ``2n`` points ``[Q; K] / d^(1/4)``,
    ``C ~ C_{:,S} pinv(C_SS) C_{S,:}``, whose ``Q, K`` block gives the softmax numerator after the diagonal
    scalings (the row factor ``a_i`` cancels in the normalisation). Skyformer trains with the Gaussian kernel itself;
    training-free it approximates softmax attention. Exact (to the pseudo-inverse's conditioning) at ``m = 2n``.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Number of landmarks (at most ``2 n``).
    seed : int
        Seed of the landmark draw.
    causal : bool, optional
        Unused (a bidirectional method).

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.psd_lowrank import skyformer
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(skyformer(q, k, v, 16, seed=0), exact_attention(q, k, v)) < 1e-8
    True

    References
    ----------
    .. [1] Chen, Zeng, Ji & Yang, "Skyformer: Remodel Self-Attention with Gaussian Kernel and Nystrom
       Method", NeurIPS 2021, arXiv:2111.00035.
    .. [2] Williams & Seeger, "Using the Nystrom Method to Speed Up Kernel Machines", NeurIPS 13, 2001.
    """
    n = q.shape[-2]
    m = min(m, 2 * n)
    x = torch.cat([q, k], dim=2)
    pick = torch.randperm(2 * n, generator=generator(seed))[:m].to(q.device)
    width = math.sqrt(q.shape[-1])
    landmarks = x[:, :, pick]
    core = torch.linalg.pinv(wide(_gaussian(landmarks, landmarks, width)), hermitian=True).to(q.dtype)
    left = _gaussian(q, landmarks, width) @ core
    return _kernel_attention(q, k, v, left, _gaussian(k, landmarks, width))


def skyformer_cost(n, d, m, heads, causal, element_bytes):
    """Cost of Skyformer [1]_: Nystrom approximation with ``m`` landmarks of the PSD kernel on ``[Q; K]``.

    The kernel blocks ``C_SS, C_QS, C_KS`` (with their exponentials), a symmetric decomposition of ``C_SS``
    (``22 m^3``, Golub & Van Loan) and the products with ``v``.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Number of landmarks (at most ``2 n``).
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
    >>> from gpu.approx.families.psd_lowrank import skyformer_cost
    >>> skyformer_cost(64, 8, 16, 2, False, 4)
    Cost(flops=398848.0, peak_bytes=45056.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Chen, Zeng, Ji & Yang, "Skyformer: Remodel Self-Attention with Gaussian Kernel and Nystrom
       Method", NeurIPS 2021, arXiv:2111.00035.
    """
    m = min(m, 2 * n)
    kernel = 2 * m * m * d + 2 * (2 * n * m * d) + 3 * (m * m + 2 * n * m)  # C_SS, C_QS, C_KS (+ exp)
    pinv = 22 * m**3  # symmetric eigendecomposition / SVD
    f = kernel + pinv + 2 * n * m * m + 2 * (2 * n * m * d)
    return per_head_cost(f, 3 * n * m + 2 * m * m, 2 * d, n, d, heads, element_bytes)


def pivoted_cholesky(q, k, v, m, seed, causal=False, tolerance: float = 0.0):
    """Pivoted (incomplete) Cholesky [1]_ of the PSD softmax kernel on ``X = [Q; K]``.

    The kernel is ``C = exp(X X^T / sqrt d - M)`` on the ``2n`` points (PSD by the Schur product theorem [2]_;
    ``M`` = the largest ``||x||^2 / sqrt d`` keeps every entry <= 1 and cancels): ``m`` greedy steps, each pivoting
    on the largest residual diagonal entry, ``C ~ L L^T`` with ``L`` of ``2n x m``, so
    ``exp(s_ij - M) ~ (L_Q L_K^T)_ij`` and the output is ``L_Q (L_K^T v) / L_Q (L_K^T 1)``. Large-norm points (sinks)
    are pivoted first. Stops early when the residual trace is at most ``tolerance`` times the trace (0: only an
    exactly zero residual). Exact at ``m = 2n``; cost ``O(n m (m + d))``, only ``m`` columns of ``C`` are formed.
    (On the Gaussian kernel with diagonal scalings, the route of :func:`skyformer`, the same factorisation blew up
    on wide score ranges: the scalings amplify the low-rank error and the normaliser can cross zero.)

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Rank of the factor (at most ``2 n``).
    seed : int
        Unused: the pivoting is deterministic.
    causal : bool, optional
        Unused (a bidirectional method).
    tolerance : float, optional
        Relative residual trace at which to stop early.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.psd_lowrank import pivoted_cholesky
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(pivoted_cholesky(q, k, v, 16, seed=0), exact_attention(q, k, v)) < 1e-8
    True

    References
    ----------
    .. [1] Harbrecht, Peters & Schneider, "On the low-rank approximation by the pivoted Cholesky
       decomposition", Applied Numerical Mathematics 62(4), 2012.
    .. [2] Horn & Johnson, "Matrix Analysis", 2nd ed., Cambridge University Press, 2013 (Schur product theorem).
    """
    b, h, n, d = q.shape
    m = min(m, 2 * n)
    x = torch.cat([q, k], dim=2) * d**-0.25
    sq = (x * x).sum(-1)
    top = sq.amax(-1, keepdim=True)
    factor = x.new_zeros(b, h, 2 * n, m)
    residual = torch.exp(sq - top)
    trace = residual.sum(-1)
    for step in range(m):
        if bool((residual.sum(-1) <= tolerance * trace).all()):
            factor = factor[..., :step]
            break
        pivot = residual.argmax(-1)  # (b, h)
        px = torch.gather(x, 2, pivot[..., None, None].expand(-1, -1, 1, d))
        column = torch.exp((x @ px.transpose(-1, -2))[..., 0] - top)  # (b, h, 2n)
        done = torch.gather(factor[..., :step], 2, pivot[..., None, None].expand(-1, -1, 1, step))
        column = column - (factor[..., :step] @ done.transpose(-1, -2))[..., 0]
        diag = torch.gather(residual, 2, pivot[..., None]).clamp_min(torch.finfo(x.dtype).tiny)
        factor[..., step] = column / diag.sqrt()
        residual = (residual - factor[..., step] ** 2).clamp_min(0)
        residual.scatter_(2, pivot[..., None], 0.0)
    left, right = factor[:, :, :n], factor[:, :, n:]
    numerator = left @ (right.transpose(-1, -2) @ v)
    denominator = left @ right.sum(-2)[..., None]
    tiny = torch.finfo(q.dtype).tiny
    return numerator / torch.where(denominator.abs() > tiny, denominator, torch.full_like(denominator, tiny))


def pivoted_cholesky_cost(n, d, m, heads, causal, element_bytes):
    """Cost of a rank-``m`` pivoted Cholesky factor [1]_ of ``exp(X X^T / sqrt d)``, ``X = [Q; K]``.

    Per pivot one kernel column over ``2 n`` rows and the update of the factor, then the products with ``v``.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Rank of the factor (at most ``2 n``).
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
    >>> from gpu.approx.families.psd_lowrank import pivoted_cholesky_cost
    >>> pivoted_cholesky_cost(64, 8, 16, 2, False, 4)
    Cost(flops=208896.0, peak_bytes=33792.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Harbrecht, Peters & Schneider, "On the low-rank approximation by the pivoted Cholesky
       decomposition", Applied Numerical Mathematics 62(4), 2012.
    """
    m = min(m, 2 * n)
    f = m * (2 * (2 * n) * d + 3 * 2 * n) + 2 * (2 * n) * m * m / 2 + 2 * (2 * n * m * d)
    return per_head_cost(f, 2 * n * m + 2 * n, 2 * d, n, d, heads, element_bytes)
