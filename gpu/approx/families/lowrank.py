"""Low rank along the sequence: Linformer (Wang, Li, Khabsa, Fang & Ma 2020, arXiv 2006.04768) and Nystromformer
(Xiong et al. 2021, AAAI); and Loki's low-rank keys (Singhania, Singh, He, Feizi & Bhatele 2024, NeurIPS; arXiv
2406.02542). The low-rank factorisations of a PSD kernel on ``[Q; K]`` are :mod:`gpu.approx.families.psd_lowrank`.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from gpu.approx.costs import SOFTMAX, listed_numbers, per_head_cost
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


def linformer_cost(n, d, m, heads, causal, element_bytes):
    """Cost of Linformer [1]_: keys and values projected to length ``m``, then attention over ``m`` columns.

    Two projections (``2 m n d`` each) and ``4 n m d + 5 n m``; the cache figure is what the ``m`` projected keys
    and values would take (``2 h m d / n``), for a method that does not decode.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Projected length (at most ``n``).
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
    >>> from gpu.approx.families.lowrank import linformer_cost
    >>> linformer_cost(64, 8, 16, 2, False, 4)
    Cost(flops=141312.0, peak_bytes=34816.0, kv_cache_bytes_per_token=32.0)

    References
    ----------
    .. [1] Wang, Li, Khabsa, Fang & Ma, "Linformer: Self-Attention with Linear Complexity", 2020,
       arXiv:2006.04768.
    """
    m = min(m, n)
    f = 2 * 2 * m * n * d + 4 * n * m * d + SOFTMAX * n * m
    return per_head_cost(f, m * n + 2 * m * d + n * m, 2 * m * d / n, n, d, heads, element_bytes)


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


def nystromformer_cost(n, d, m, heads, causal, element_bytes):
    """Cost of Nystromformer [1]_: ``m`` segment-mean landmarks, three softmax kernels and an iterative pseudo-inverse.

    The landmarks (``2 n d``), the kernels ``n x m``, ``m x m``, ``m x n`` with their softmaxes, six Newton-Schulz
    iterations of four ``m x m`` products for the pseudo-inverse, and the products with ``v``.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Number of landmarks (at most ``n``).
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
    >>> from gpu.approx.families.lowrank import nystromformer_cost
    >>> nystromformer_cost(64, 8, 16, 2, False, 4)
    Cost(flops=582144.0, peak_bytes=40960.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Xiong et al., "Nystromformer: A Nystrom-Based Algorithm for Approximating Self-Attention",
       AAAI 2021, arXiv:2102.03902.
    """
    m = min(m, n)
    pinv = 6 * 4 * 2 * m**3 + 2 * m**3  # 6 Newton-Schulz iterations of 4 products, and the initial scaling
    f = 2 * n * d + 2 * (2 * n * m * d + SOFTMAX * n * m) + 2 * m * m * d + SOFTMAX * m * m + pinv
    f += 2 * m * n * d + 2 * m * m * d + 2 * n * m * d
    return per_head_cost(f, 2 * n * m + 3 * m * m + 2 * m * d, 2 * d, n, d, heads, element_bytes)


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


def loki_cost(n, d, m, heads, causal, element_bytes, rank=None):
    """Cost of Loki [1]_: scores in ``r`` PCA dimensions of the keys pick the top ``m`` keys, exact attention on them.

    Projecting ``q`` and ``k`` (``2 n d r`` each), the reduced ``n^2`` scores (half when causal) and their
    selection, then attention over ``m`` keys; the cache adds the ``h r`` reduced keys.

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
    rank : int, optional
        PCA dimensions ``r``; ``None`` means ``max(1, d // 4)``.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx.families.lowrank import loki_cost
    >>> loki_cost(64, 8, 16, 2, False, 4)
    Cost(flops=124928.0, peak_bytes=215040.0, kv_cache_bytes_per_token=144.0)
    >>> loki_cost(64, 8, 16, 2, False, 4, rank=8).flops > loki_cost(64, 8, 16, 2, False, 4).flops
    True

    References
    ----------
    .. [1] Singhania, Singh, He, Feizi & Bhatele, "Loki: Low-Rank Keys for Efficient Sparse Attention",
       NeurIPS 2024, arXiv:2406.02542.
    """
    r = max(1, d // 4) if rank is None else rank
    m = min(m, n)
    f = 2 * 2 * n * d * r + 2 * n * n * r / (2 if causal else 1) + n * n + 4 * n * m * d + SOFTMAX * n * m
    return per_head_cost(f, n * n + 2 * n * r + listed_numbers(n, m, d), 2 * d + r, n, d, heads, element_bytes)
