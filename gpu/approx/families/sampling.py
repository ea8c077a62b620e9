"""Importance sampling: HyperAttention (Han, Jayaram, Karbasi, Mirrokni, Woodruff & Zandieh 2024, ICLR; arXiv
2310.05869) and a KDEformer-style sampler (Zandieh, Han, Daliri & Karbasi 2023, ICML; arXiv 2302.02451).

Both estimate the unnormalised numerator ``N_i = sum_j exp(s_ij) v_j`` and the normaliser ``D_i = sum_j exp(s_ij)``
(``s = q k^T / sqrt d``) by sums over sampled columns, unbiased for a fixed row shift, and return ``N / D`` (a ratio
estimator: consistent, not unbiased). :func:`hyper_estimates` and :func:`kde_estimates` give ``(N, D)`` for a
given shift so that the unbiasedness can be tested.
"""

from __future__ import annotations

import math

import torch

from gpu.approx.costs import SOFTMAX, per_head_cost
from gpu.approx.families.common import generator, randn
from gpu.attention.functional import inverse_permutation
from gpu.attention.neighbour import scale_of


def _gray_rank(bits: torch.Tensor) -> torch.Tensor:
    """Position of the Gray code ``bits`` (last axis, most significant first) in the Gray sequence, so that
    neighbouring ranks differ in one hyperplane: HyperAttention's Hamming-sorted LSH."""
    binary = torch.cumsum(bits.long(), dim=-1) % 2  # b_i = g_0 xor ... xor g_i
    weights = 2 ** torch.arange(bits.shape[-1] - 1, -1, -1, device=bits.device)
    return (binary * weights).sum(-1)


def hyper_estimates(q, k, v, m, seed, shift=None, return_shift: bool = False):
    """HyperAttention's [1]_ estimates ``(N, D)`` of the shifted numerator and normaliser.

    With ``b = ceil(m / 2)`` keys found by sortLSH and ``s = m - b`` uniformly sampled columns: queries and keys are
    hashed by ``r`` random hyperplanes (``2^r ~ n / b`` buckets), the keys sorted by the Gray rank of their buckets
    and cut into blocks of ``b``; query ``i`` meets the key block in the middle of its own bucket's keys (mask
    ``M``; found by a binary search, so that no query's keys depend on the other queries, which the causal recursion
    needs; the paper sorts the queries too and pairs the ``i``-th query block with the ``i``-th key block). The rest
    is estimated from ``s`` columns ``j_1..j_s`` drawn uniformly with replacement, weighted ``n / s``:
    ``N_i = sum_{j: M_ij} e^{s_ij - c_i} v_j + (n / s) sum_t (1 - M_{i j_t}) e^{s_{i j_t} - c_i} v_{j_t}`` and
    ``D_i`` likewise with ``v = 1`` (the paper's approximate row normaliser). Unbiased for
    ``sum_j e^{s_ij - c_i} v_j`` given ``c`` (``shift``: ``(b, h, n)``; default the row maximum of the computed
    scores; ``return_shift`` returns it third).

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n_q, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d)``.
    m : int
        Keys per query: ``ceil(m / 2)`` by sortLSH, the rest sampled.
    seed : int
        Seed of the hyperplanes and the samples.
    shift : torch.Tensor or None, optional
        The row shift ``c``, ``(batch, heads, n)``; ``None``: the row maximum of the computed scores.
    return_shift : bool, optional
        Also return the shift used.

    Returns
    -------
    N : torch.Tensor
        ``(batch, heads, n_q, d)``, the numerator estimate.
    D : torch.Tensor
        ``(batch, heads, n_q)``, the normaliser estimate.
    shift : torch.Tensor
        ``(batch, heads, n_q)``, only with ``return_shift``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.sampling import hyper_estimates
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> N, D = hyper_estimates(q, k, v, 16, seed=0)  # one block holds every key: exact
    >>> torch.allclose(N / D[..., None], exact_attention(q, k, v))
    True

    References
    ----------
    .. [1] Han, Jayaram, Karbasi, Mirrokni, Woodruff & Zandieh, "HyperAttention: Long-context Attention in
       Near-Linear Time", ICLR 2024, arXiv:2310.05869.
    """
    bsz, h, n_q, d = q.shape
    n = k.shape[2]  # keys; the causal recursion pairs n - n/2 queries with n/2 keys
    block = min(n, max(1, -(-m // 2)))
    samples = max(1, m - block)
    g = generator(seed)
    planes = max(1, math.ceil(math.log2(max(2, n / block))))
    hyper = randn(g, d, planes, like=q)
    rank_q, rank_k = _gray_rank(q @ hyper > 0), _gray_rank(k @ hyper > 0)
    pos = torch.arange(n, device=q.device)
    order_k = torch.argsort(rank_k * n + pos, dim=-1)
    block_k = inverse_permutation(order_k) // block
    sorted_rank = torch.gather(rank_k, -1, order_k).contiguous()
    lo = torch.searchsorted(sorted_rank, rank_q.contiguous(), right=False)
    hi = torch.searchsorted(sorted_rank, rank_q.contiguous(), right=True)
    block_q = ((lo + hi) // 2).clamp_max(n - 1) // block  # the key block in the middle of the query's bucket
    blocks = -(-n // block)
    padded = torch.nn.functional.pad(order_k, (0, blocks * block - n), value=-1).view(bsz, h, blocks, block)
    heavy = torch.gather(padded, 2, block_q[..., None].expand(-1, -1, -1, block))  # (b, h, n, block)
    heavy_ok = heavy >= 0
    heavy = heavy.clamp_min(0)
    cols = torch.randint(n, (samples,), generator=g).to(q.device)
    scale = scale_of(q)
    kh = torch.gather(k, 2, heavy.reshape(bsz, h, -1, 1).expand(-1, -1, -1, d)).view(bsz, h, n_q, block, d)
    vh = torch.gather(v, 2, heavy.reshape(bsz, h, -1, 1).expand(-1, -1, -1, d)).view(bsz, h, n_q, block, d)
    s_heavy = torch.einsum("bhnd,bhnkd->bhnk", q, kh) * scale
    s_heavy = s_heavy.masked_fill(~heavy_ok, float("-inf"))
    s_cols = q @ k[:, :, cols].transpose(-1, -2) * scale  # (b, h, n, s)
    outside = block_k[:, :, None, cols] != block_q[..., None]
    s_cols = s_cols.masked_fill(~outside, float("-inf"))
    if shift is None:
        shift = torch.maximum(s_heavy.amax(-1), s_cols.amax(-1))
    w_heavy = torch.exp(s_heavy - shift[..., None])
    w_cols = torch.exp(s_cols - shift[..., None]) * (n / samples)
    numerator = torch.einsum("bhnk,bhnkd->bhnd", w_heavy, vh) + w_cols @ v[:, :, cols]
    if return_shift:
        return numerator, w_heavy.sum(-1) + w_cols.sum(-1), shift
    return numerator, w_heavy.sum(-1) + w_cols.sum(-1)


def hyperattention(q, k, v, m, seed, causal=False):
    """HyperAttention [1]_: ``N / D`` of :func:`hyper_estimates`.

    ``m`` keys per query: ``m / 2`` by sortLSH, ``m / 2`` sampled columns shared by all queries. Causal: the paper's
    recursion (Han et al. 2024, Sec. 3.2): the causal matrix splits into two causal diagonal halves (recursively) and
    one full off-diagonal block that the bidirectional estimator handles; the parts merge exactly by log-sum-exp.
    Diagonal blocks of at most ``B = m / 2`` positions are exact; each of the ``L = ceil(log2(n / B))`` off-diagonal
    levels a query meets gets ``(m - B) / L`` keys, so a query sees at most ``m`` keys.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Keys per query.
    seed : int
        Seed of the hyperplanes and the samples.
    causal : bool, optional
        Causal attention by the recursion.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.sampling import hyperattention
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> hyperattention(q, k, v, 4, seed=0).shape
    torch.Size([1, 1, 8, 4])
    >>> relative_error(hyperattention(q, k, v, 16, seed=0, causal=True), exact_attention(q, k, v, causal=True)) < 1e-12
    True

    References
    ----------
    .. [1] Han, Jayaram, Karbasi, Mirrokni, Woodruff & Zandieh, "HyperAttention: Long-context Attention in
       Near-Linear Time", ICLR 2024, arXiv:2310.05869.
    """
    if causal:
        n = q.shape[2]
        base = max(1, m // 2)
        levels = max(1, math.ceil(math.log2(max(1.0, n / base))))
        out, _ = _causal_hyper(q, k, v, base, max(2, (m - base) // levels), seed)
        return out
    numerator, denominator = hyper_estimates(q, k, v, m, seed)
    return numerator / denominator[..., None]


def _causal_hyper(q, k, v, base, m_off, seed):
    """``(output, log-normaliser)`` of causal HyperAttention on ``q, k, v`` (see :func:`hyperattention`)."""
    n = q.shape[2]
    if n <= base:
        scores = q @ k.transpose(-1, -2) * scale_of(q)
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        return torch.softmax(scores, dim=-1) @ v, torch.logsumexp(scores, dim=-1)
    half = n // 2
    first, lse_first = _causal_hyper(q[:, :, :half], k[:, :, :half], v[:, :, :half], base, m_off, seed)
    diag, lse_diag = _causal_hyper(q[:, :, half:], k[:, :, half:], v[:, :, half:], base, m_off, seed)
    num, den, shift = hyper_estimates(q[:, :, half:], k[:, :, :half], v[:, :, :half], m_off, seed, return_shift=True)
    lse_off = shift + torch.log(den)
    lse = torch.logaddexp(lse_diag, lse_off)
    second = diag * torch.exp(lse_diag - lse)[..., None] + (num / den[..., None]) * torch.exp(lse_off - lse)[..., None]
    return torch.cat([first, second], dim=2), torch.cat([lse_first, lse], dim=2)


def hyperattention_cost(n, d, m, heads, causal, element_bytes):
    """Cost of HyperAttention [1]_: ``m / 2`` sortLSH block keys plus ``m / 2`` uniformly sampled columns.

    Bidirectional: ``log2(n / block)`` hyperplanes for ``q`` and ``k``, then attention over ``block + samples``
    keys. Causal: the paper's recursion, exact diagonal blocks of ``m / 2`` and per level ``n / 2`` queries
    against the bidirectional method on the off-diagonal blocks.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys per query (half by sortLSH, half sampled).
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
    >>> from gpu.approx.families.sampling import hyperattention_cost
    >>> hyperattention_cost(64, 8, 16, 2, False, 4)
    Cost(flops=88064.0, peak_bytes=98304.0, kv_cache_bytes_per_token=136.0)
    >>> hyperattention_cost(64, 8, 16, 2, True, 4).flops
    60288.0

    References
    ----------
    .. [1] Han et al., "HyperAttention: Long-context Attention in Near-Linear Time", ICLR 2024,
       arXiv:2310.05869.
    """
    if causal:  # exact diagonal blocks of B = m/2, then per level n/2 queries against (m - B) / L keys
        base = max(1, m // 2)
        levels = max(1, math.ceil(math.log2(max(1.0, n / base))))
        m_off = max(2, (m - base) // levels)
        size, f, mem = n, 0.0, 0.0
        for _ in range(levels):
            size //= 2
            if size < 1:
                break
            inner = hyperattention_cost(size, d, m_off, 1, False, 1)
            f += (n // (2 * size)) * inner.flops
            mem = max(mem, inner.peak_bytes)
        f += n * min(base, n) * (2 * d + SOFTMAX)  # the exact causal diagonal blocks (half of b x b each)
        return per_head_cost(f, mem + n * base, 2 * d + 1, n, d, heads, element_bytes)
    block = min(n, max(1, -(-m // 2)))
    samples = max(1, m - block)
    planes = max(1, math.ceil(math.log2(max(2, n / block))))
    keys = block + samples
    f = 2 * 2 * n * d * planes + 4 * n * keys * d + SOFTMAX * n * keys
    return per_head_cost(f, 2 * n * block * d + 2 * n * keys, 2 * d + 1, n, d, heads, element_bytes)


def kde_estimates(q, k, v, m, seed, shift=None, uniform_share: float = 0.1):
    """KDEformer-style [1]_ importance-sampling estimates ``(N, D)`` from ``m`` sampled columns.

    The sampling distribution follows the paper's ``p_j ~ ||A_{:,j}|| ||v_j||`` (``A = D^-1 exp(s)``) with the
    column norms estimated on ``m`` uniformly sampled queries ``S``: ``||A_{:,j}||^2 ~ sum_{i in S} exp(2 s_ij) /
    D_i^2``, the probe rows' ``D_i`` computed exactly from the same ``m x n`` scores (the paper estimates the
    densities with a KDE data structure), mixed with a ``uniform_share`` of the uniform distribution so that no column
    has probability 0 (defensive importance sampling [2]_). With ``j_1..j_m ~ p``:
    ``N_i = (1/m) sum_t e^{s_{i j_t} - c_i} v_{j_t} / p_{j_t}``, ``D_i`` likewise with ``v = 1``; unbiased for
    ``sum_j e^{s_ij - c_i} v_j`` given ``c`` (``shift``, default the row maximum of the sampled scores). The paper's
    LSH step for the heaviest entries is left out (HyperAttention has one).

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Sampled columns (and probe queries).
    seed : int
        Seed of the probes and the samples.
    shift : torch.Tensor or None, optional
        The row shift ``c``, ``(batch, heads, n)``; ``None``: the row maximum of the sampled scores.
    uniform_share : float, optional
        Weight of the uniform distribution in the mixture, in ``(0, 1]``.

    Returns
    -------
    N : torch.Tensor
        ``(batch, heads, n, d_v)``, the numerator estimate.
    D : torch.Tensor
        ``(batch, heads, n)``, the normaliser estimate.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.sampling import kde_estimates
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> N, D = kde_estimates(q, k, v, 4, seed=0)
    >>> N.shape, D.shape
    (torch.Size([1, 1, 8, 4]), torch.Size([1, 1, 8]))

    References
    ----------
    .. [1] Zandieh, Han, Daliri & Karbasi, "KDEformer: Accelerating Transformers via Kernel Density
       Estimation", ICML 2023, arXiv:2302.02451.
    .. [2] Owen & Zhou, "Safe and Effective Importance Sampling", Journal of the American Statistical
       Association 95(449), 2000 (defensive mixtures).
    """
    b, h, n, d = q.shape
    g = generator(seed)
    scale = scale_of(q)
    probe = torch.randint(n, (m,), generator=g).to(q.device)
    probe_scores = (q[:, :, probe] @ k.transpose(-1, -2)) * scale  # (b, h, m, n)
    log_a = probe_scores - torch.logsumexp(probe_scores, dim=-1, keepdim=True)  # log A_ij of the probe rows
    log_col = 0.5 * torch.logsumexp(2 * log_a, dim=-2) + torch.log(v.norm(dim=-1).clamp_min(1e-30))
    p = torch.softmax(log_col.double(), dim=-1) * (1 - uniform_share) + uniform_share / n  # (b, h, n)
    cols = torch.multinomial(p.reshape(-1, n).cpu(), m, replacement=True, generator=g).view(b, h, m).to(q.device)
    weight = 1.0 / (m * torch.gather(p, -1, cols).to(q.dtype))  # (b, h, m)
    ks = torch.gather(k, 2, cols[..., None].expand(-1, -1, -1, d))
    vs = torch.gather(v, 2, cols[..., None].expand(-1, -1, -1, v.shape[-1]))
    scores = q @ ks.transpose(-1, -2) * scale  # (b, h, n, m)
    if shift is None:
        shift = scores.amax(-1)
    w = torch.exp(scores - shift[..., None]) * weight[:, :, None, :]
    return w @ vs, w.sum(-1)


def kdeformer(q, k, v, m, seed, causal=False):
    """KDEformer-style sampler [1]_: ``N / D`` of :func:`kde_estimates` with ``m`` columns shared by all queries.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Sampled columns (and probe queries).
    seed : int
        Seed of the probes and the samples.
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
    >>> from gpu.approx.families.sampling import kde_estimates, kdeformer
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> N, D = kde_estimates(q, k, v, 4, seed=0)
    >>> torch.allclose(kdeformer(q, k, v, 4, seed=0), N / D[..., None])
    True

    References
    ----------
    .. [1] Zandieh, Han, Daliri & Karbasi, "KDEformer: Accelerating Transformers via Kernel Density
       Estimation", ICML 2023, arXiv:2302.02451.
    """
    numerator, denominator = kde_estimates(q, k, v, m, seed)
    return numerator / denominator[..., None]


def kdeformer_cost(n, d, m, heads, causal, element_bytes):
    """Cost of KDEformer [1]_: ``m`` columns sampled by kernel-density importance, estimated with ``m`` probe queries.

    The probes' scores against every key (``2 m n d + 5 m n``), then attention over the ``m`` sampled columns.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Sampled columns (and probe queries).
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
    >>> from gpu.approx.families.sampling import kdeformer_cost
    >>> kdeformer_cost(64, 8, 16, 2, False, 4)
    Cost(flops=118784.0, peak_bytes=40960.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Zandieh, Han, Daliri & Karbasi, "KDEformer: Accelerating Transformers via Kernel Density
       Estimation", ICML 2023, arXiv:2302.02451.
    """
    f = 2 * m * n * d + SOFTMAX * m * n + 4 * n * m * d + SOFTMAX * n * m
    return per_head_cost(f, m * n + 2 * n * m, 2 * d, n, d, heads, element_bytes)
