"""Low rank along the sequence: Linformer (Wang, Li, Khabsa, Fang & Ma 2020, arXiv 2006.04768) and Nystromformer
(Xiong et al. 2021, AAAI); the PSD-kernel methods Skyformer (Chen, Zeng, Ji & Yang 2021, NeurIPS) and pivoted
(incomplete) Cholesky (e.g. Harbrecht, Peters & Schneider 2012); and Loki's low-rank keys (Singhania, Singh, He,
Feizi & Bhatele 2024, NeurIPS; arXiv 2406.02542).

The PSD-kernel methods see the softmax numerator as the off-diagonal block of a PSD matrix on the ``2n`` points
``[Q; K]``: Skyformer through the Gaussian kernel ``kappa(x, y) = exp(-|x - y|^2 / 2 sqrt d)``, with
``exp(q . k / sqrt d) = exp(|q|^2 / 2 sqrt d) kappa(q, k) exp(|k|^2 / 2 sqrt d)``; pivoted Cholesky through the
exponential kernel ``exp(x . y / sqrt d)`` itself. A low-rank ``C ~ L L^T`` gives ``exp(s_ij) ~ (L_Q L_K^T)_ij``
(times the diagonal scalings for the Gaussian kernel).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from gpu.approx.families.common import LIST_CHUNK, generator, padded_keys, randn, wide
from gpu.attention.neighbour import neighbour_attention, scale_of
from gpu.validation import check_int


def segment_matrix(n: int, m: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(P, sizes)``: the ``m x n`` mean-pooling matrix over ``m`` contiguous segments and their sizes.

    The segment edges are ``round(linspace(0, n, m + 1))``; the pooling is Linformer's untrained projection [1]_.

    Parameters
    ----------
    n : int
        Sequence length.
    m : int
        Number of segments (``1 <= m <= n``).
    like : torch.Tensor
        Tensor whose device and dtype the results take.

    Returns
    -------
    P : torch.Tensor
        ``(m, n)``: row ``s`` averages the positions of segment ``s``.
    sizes : torch.Tensor
        ``(m,)``: the number of positions in each segment.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.lowrank import segment_matrix
    >>> P, sizes = segment_matrix(5, 2, torch.zeros(1))
    >>> sizes
    tensor([2., 3.])
    >>> P.sum(-1)
    tensor([1., 1.])

    References
    ----------
    .. [1] Wang, Li, Khabsa, Fang & Ma, "Linformer: Self-Attention with Linear Complexity", 2020,
       arXiv:2006.04768.
    """
    edges = np.linspace(0, n, m + 1).round().astype(int)
    sizes = torch.as_tensor(np.diff(edges), dtype=like.dtype, device=like.device)
    seg = torch.as_tensor(np.repeat(np.arange(m), np.diff(edges)), device=like.device)
    pool = torch.zeros(m, n, dtype=like.dtype, device=like.device)
    pool[seg, torch.arange(n, device=like.device)] = 1.0
    return pool / sizes[:, None], sizes


def segment_means(x: torch.Tensor, m: int) -> torch.Tensor:
    """The means of ``x`` over ``m`` contiguous segments of the sequence, ``O(n d)`` by ``index_add``.

    The rows of :func:`segment_matrix` applied to ``x``: Nystromformer's landmarks [1]_.

    Parameters
    ----------
    x : torch.Tensor
        ``(..., n, d)``.
    m : int
        Number of segments (``1 <= m <= n``).

    Returns
    -------
    torch.Tensor
        ``(..., m, d)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.lowrank import segment_means
    >>> segment_means(torch.arange(5.0)[:, None], 2)
    tensor([[0.5000],
            [3.0000]])

    References
    ----------
    .. [1] Xiong et al., "Nystromformer: A Nystrom-Based Algorithm for Approximating Self-Attention",
       AAAI 2021, arXiv:2102.03902.
    """
    n = x.shape[-2]
    edges = np.linspace(0, n, m + 1).round().astype(int)
    seg = torch.as_tensor(np.repeat(np.arange(m), np.diff(edges)), device=x.device)
    sizes = torch.as_tensor(np.diff(edges), dtype=x.dtype, device=x.device)
    sums = x.new_zeros(*x.shape[:-2], m, x.shape[-1]).index_add_(-2, seg, x)
    return sums / sizes[:, None]


def linformer(q, k, v, m, seed, causal=False):
    """Linformer [1]_ with the paper's untrained mean-pooling projections ``E = F = P``.

    ``P`` is ``m x n``, segment means of ``n / m`` keys: ``softmax(q (P k)^T / sqrt d + log sizes) (P v)``. The
    ``log sizes`` term weights a pooled key by the number of keys it stands for (a constant shift when the segments
    are equal). Exact at ``m = n``.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Projected length (at most ``n``).
    seed : int
        Unused: the projection is deterministic.
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
    >>> from gpu.approx.families.lowrank import linformer
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(linformer(q, k, v, 8, seed=0), exact_attention(q, k, v)) < 1e-12
    True

    References
    ----------
    .. [1] Wang, Li, Khabsa, Fang & Ma, "Linformer: Self-Attention with Linear Complexity", 2020,
       arXiv:2006.04768.
    """
    n = q.shape[-2]
    pool, sizes = segment_matrix(n, min(m, n), q)
    scores = q @ (pool @ k).transpose(-1, -2) * scale_of(q) + torch.log(sizes)
    return torch.softmax(scores, dim=-1) @ (pool @ v)


def linformer_jl(q, k, v, m, seed, causal=False):
    """Linformer [1]_ with separate random Johnson-Lindenstrauss [2]_ projections ``E, F``.

    ``E, F`` are ``m x n`` with independent ``N(0, 1/m)`` entries: ``softmax(q (E k)^T / sqrt d) (F v)``. Untrained
    random projections mix keys with signs; the paper trains them. Not an estimator of softmax attention: reported
    to show that.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Projected length.
    seed : int
        Seed of ``E`` and ``F``.
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
    >>> from gpu.approx.families.lowrank import linformer_jl
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> linformer_jl(q, k, v, 4, seed=0).shape
    torch.Size([1, 1, 8, 4])

    References
    ----------
    .. [1] Wang, Li, Khabsa, Fang & Ma, "Linformer: Self-Attention with Linear Complexity", 2020,
       arXiv:2006.04768.
    .. [2] Johnson & Lindenstrauss, "Extensions of Lipschitz mappings into a Hilbert space", Contemporary
       Mathematics 26, 1984.
    """
    n = q.shape[-2]
    g = generator(seed)
    e, f = (randn(g, m, n, like=q) / math.sqrt(m) for _ in range(2))
    return torch.softmax(q @ (e @ k).transpose(-1, -2) * scale_of(q), dim=-1) @ (f @ v)


def _newton_schulz_pinv(a: torch.Tensor, iterations: int = 6) -> torch.Tensor:
    """Iterative Moore-Penrose inverse of Nystromformer (Xiong et al. 2021, Eq. 13)."""
    z = a.transpose(-1, -2) / (a.abs().sum(-1).amax(-1)[..., None, None] * a.abs().sum(-2).amax(-1)[..., None, None])
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    for _ in range(iterations):
        az = a @ z
        z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
    return z


def nystromformer(q, k, v, m, seed, causal=False):
    """Nystromformer [1]_: ``m`` landmarks as segment means of q and k.

    ``A ~ softmax(Q Kt^T) pinv(softmax(Qt Kt^T)) softmax(Qt K^T)`` with 6 Newton-Schulz iterations (the paper's) for
    the pseudo-inverse.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Number of landmarks (at most ``n``).
    seed : int
        Unused: the landmarks are deterministic.
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
    >>> from gpu.approx.families.lowrank import nystromformer
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(nystromformer(q, k, v, 8, seed=0), exact_attention(q, k, v)) < 0.05
    True

    References
    ----------
    .. [1] Xiong et al., "Nystromformer: A Nystrom-Based Algorithm for Approximating Self-Attention",
       AAAI 2021, arXiv:2102.03902.
    """
    m = min(m, q.shape[-2])
    ql, kl = segment_means(q, m), segment_means(k, m)
    s = scale_of(q)
    f = torch.softmax(q @ kl.transpose(-1, -2) * s, dim=-1)
    core = _newton_schulz_pinv(torch.softmax(ql @ kl.transpose(-1, -2) * s, dim=-1))
    b = torch.softmax(ql @ k.transpose(-1, -2) * s, dim=-1)
    return f @ (core @ (b @ v))


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
    >>> from gpu.approx.families.lowrank import skyformer
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
    >>> from gpu.approx.families.lowrank import pivoted_cholesky
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


def pca_basis(keys: torch.Tensor, rank: int) -> torch.Tensor:
    """The top-``rank`` principal directions of the keys, pooled over the batch (Loki's basis [1]_).

    Uncentred, as Loki's: the eigenvectors of the second-moment matrix ``K^T K`` of largest eigenvalue, first.

    Parameters
    ----------
    keys : torch.Tensor
        ``(b, h, N, d)``.
    rank : int
        Number of directions (``1 <= rank <= d``).

    Returns
    -------
    torch.Tensor
        ``(1, h, d, rank)`` with orthonormal columns, in ``keys.dtype``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.lowrank import pca_basis
    >>> keys = torch.randn(1, 1, 8, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    >>> basis = pca_basis(keys, 2)
    >>> basis.shape
    torch.Size([1, 1, 4, 2])
    >>> torch.allclose(basis[0, 0].T @ basis[0, 0], torch.eye(2, dtype=torch.float64))
    True

    References
    ----------
    .. [1] Singhania, Singh, He, Feizi & Bhatele, "Loki: Low-Rank Keys for Efficient Sparse Attention",
       NeurIPS 2024, arXiv:2406.02542.
    """
    second = torch.einsum("bhnd,bhne->hde", wide(keys), wide(keys))
    _, vectors = torch.linalg.eigh(second)
    return vectors[..., -rank:].flip(-1)[None].to(keys.dtype)


def loki(q, k, v, m, seed, causal=False, rank: int | None = None, calibration: torch.Tensor | None = None):
    """Loki [1]_: approximate scores in the keys' top principal directions select keys for exact attention.

    Keys projected on their top ``rank`` principal directions (default ``d / 4``, the paper's setting), approximate
    scores ``(q P)(k P)^T`` pick each query's top ``m`` keys (causal: among keys ``j <= i``), and exact attention
    runs on those. The PCA basis comes from ``calibration`` keys ``(b', h, N', d)`` (the paper computes it offline on
    other text); without them, from the first half of the given keys (bidirectional only: a causal basis must not
    see the sequence itself). Exact at ``m >= n``; the selection costs ``O(n^2 r)``.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Keys kept per query (at most ``n``).
    seed : int
        Unused: the selection is deterministic.
    causal : bool, optional
        Causal attention (needs ``calibration``).
    rank : int or None, optional
        PCA dimensions in ``1..d``; ``None`` means ``max(1, d // 4)``.
    calibration : torch.Tensor or None, optional
        Keys ``(b', heads, N', d)`` from other text for the basis.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Raises
    ------
    TypeError
        If ``rank`` is not an integer.
    ValueError
        If ``rank`` is outside ``1..d``, ``causal`` is set without ``calibration``, or ``calibration`` has the wrong
        shape.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.lowrank import loki
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(loki(q, k, v, 8, seed=0, causal=True, calibration=k), exact_attention(q, k, v, True)) < 1e-12
    True
    >>> loki(q, k, v, 4, seed=0, causal=True)
    Traceback (most recent call last):
        ...
    ValueError: calibration: causal loki needs calibration keys (b, heads, N, d) from other text

    References
    ----------
    .. [1] Singhania, Singh, He, Feizi & Bhatele, "Loki: Low-Rank Keys for Efficient Sparse Attention",
       NeurIPS 2024, arXiv:2406.02542.
    """
    _, h, n, d = q.shape
    rank = check_int("rank", max(1, d // 4) if rank is None else rank, 1, d)
    if calibration is None:
        if causal:
            raise ValueError("calibration: causal loki needs calibration keys (b, heads, N, d) from other text")
        calibration = k[:, :, : max(1, n // 2)]
    if calibration.dim() != 4 or calibration.shape[1] != h or calibration.shape[-1] != d:
        raise ValueError(f"calibration: expected keys of shape (batch, {h}, N, {d}), got {tuple(calibration.shape)}")
    m = min(m, n)
    basis = pca_basis(calibration.to(q.dtype), rank)
    approx = (q @ basis) @ (k @ basis).transpose(-1, -2)
    if causal:
        approx = approx.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    idx = approx.topk(m, dim=-1).indices
    return neighbour_attention(q, k, v, padded_keys(idx, causal=causal), method="gather", chunk=LIST_CHUNK)
