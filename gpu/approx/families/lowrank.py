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

from ...validation import check_int
from .common import generator, indexed_attention, randn, scale_of, wide


def segment_matrix(n: int, m: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(P, sizes)``: the ``m x n`` mean-pooling matrix over ``m`` contiguous segments and their sizes."""
    edges = np.linspace(0, n, m + 1).round().astype(int)
    sizes = torch.as_tensor(np.diff(edges), dtype=like.dtype, device=like.device)
    seg = torch.as_tensor(np.repeat(np.arange(m), np.diff(edges)), device=like.device)
    pool = torch.zeros(m, n, dtype=like.dtype, device=like.device)
    pool[seg, torch.arange(n, device=like.device)] = 1.0
    return pool / sizes[:, None], sizes


def segment_means(x: torch.Tensor, m: int) -> torch.Tensor:
    """The means of ``x`` over ``m`` contiguous segments of the sequence (the rows of :func:`segment_matrix`),
    ``O(n d)`` by ``index_add``."""
    n = x.shape[-2]
    edges = np.linspace(0, n, m + 1).round().astype(int)
    seg = torch.as_tensor(np.repeat(np.arange(m), np.diff(edges)), device=x.device)
    sizes = torch.as_tensor(np.diff(edges), dtype=x.dtype, device=x.device)
    sums = x.new_zeros(*x.shape[:-2], m, x.shape[-1]).index_add_(-2, seg, x)
    return sums / sizes[:, None]


def linformer(q, k, v, m, seed, causal=False):
    """Linformer with the paper's untrained mean-pooling projections ``E = F = P`` (``m x n``, segment means of
    ``n / m`` keys): ``softmax(q (P k)^T / sqrt d + log sizes) (P v)``. The ``log sizes`` term weights a pooled
    key by the number of keys it stands for (a constant shift when the segments are equal). Exact at ``m = n``."""
    n = q.shape[-2]
    pool, sizes = segment_matrix(n, min(m, n), q)
    scores = q @ (pool @ k).transpose(-1, -2) * scale_of(q) + torch.log(sizes)
    return torch.softmax(scores, dim=-1) @ (pool @ v)


def linformer_jl(q, k, v, m, seed, causal=False):
    """Linformer with separate random Johnson-Lindenstrauss projections ``E, F`` (``m x n``, entries
    ``N(0, 1/m)``, independent): ``softmax(q (E k)^T / sqrt d) (F v)``. Untrained random projections mix keys
    with signs; the paper trains them. Not an estimator of softmax attention: reported to show that."""
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
    """Nystromformer: ``m`` landmarks as segment means of q and k,
    ``A ~ softmax(Q Kt^T) pinv(softmax(Qt Kt^T)) softmax(Qt K^T)`` with 6 Newton-Schulz iterations (the paper's)."""
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
    """Skyformer's Nystrom approximation of the symmetrised kernel: ``m`` landmarks drawn uniformly without
    replacement from the ``2n`` points ``[Q; K] / d^(1/4)``, ``C ~ C_{:,S} pinv(C_SS) C_{S,:}``, whose ``Q, K``
    block gives the softmax numerator after the diagonal scalings (the row factor ``a_i`` cancels in the
    normalisation). Skyformer trains with the Gaussian kernel itself; training-free it approximates softmax
    attention. Exact (to the pseudo-inverse's conditioning) at ``m = 2n``."""
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
    """Pivoted (incomplete) Cholesky of the PSD softmax kernel itself, ``C = exp(X X^T / sqrt d - M)`` on the
    ``2n`` points ``X = [Q; K]`` (PSD by the Schur product theorem; ``M`` = the largest ``|x|^2 / sqrt d`` keeps
    every entry <= 1 and cancels): ``m`` greedy steps, each pivoting on the largest residual diagonal entry,
    ``C ~ L L^T`` with ``L`` of ``2n x m``, so ``exp(s_ij - M) ~ (L_Q L_K^T)_ij`` and the output is
    ``L_Q (L_K^T v) / L_Q (L_K^T 1)``. Large-norm points (sinks) are pivoted first. Stops early when the residual
    trace is at most ``tolerance`` times the trace (0: only an exactly zero residual). Exact at ``m = 2n``; cost
    ``O(n m (m + d))``, only ``m`` columns of ``C`` are formed. (On the Gaussian kernel with diagonal scalings, the
    route of :func:`skyformer`, the same factorisation blew up on wide score ranges: the scalings amplify the
    low-rank error and the normaliser can cross zero.)"""
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
    """The top-``rank`` principal directions ``(b or 1, h, d, rank)`` of the keys ``(b, h, N, d)`` (uncentred, as
    Loki's: the second-moment matrix ``K^T K``), pooled over the batch."""
    second = torch.einsum("bhnd,bhne->hde", wide(keys), wide(keys))
    _, vectors = torch.linalg.eigh(second)
    return vectors[..., -rank:].flip(-1)[None].to(keys.dtype)


def loki(q, k, v, m, seed, causal=False, rank: int | None = None, calibration: torch.Tensor | None = None):
    """Loki: keys projected on their top ``rank`` principal directions (default ``d / 4``, the paper's setting),
    approximate scores ``(q P)(k P)^T`` pick each query's top ``m`` keys (causal: among keys ``j <= i``), and
    exact attention runs on those. The PCA basis comes from ``calibration`` keys ``(b', h, N', d)`` (the paper
    computes it offline on other text); without them, from the first half of the given keys (bidirectional only:
    a causal basis must not see the sequence itself). Exact at ``m >= n``; the selection costs ``O(n^2 r)``."""
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
    return indexed_attention(q, k, v, idx, causal=causal)
