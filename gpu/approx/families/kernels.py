"""Kernel feature maps and leverage scores: Performer FAVOR+ (Choromanski et al. 2021, ICLR; arXiv 2009.14794),
PolySketchFormer (Kacham, Mirrokni & Zhong 2024, ICML; arXiv 2310.01655) and LevAttention (Kannan, Bhattacharyya,
Kacham & Woodruff 2024, arXiv 2410.05462).
"""

from __future__ import annotations

import math

import torch

from gpu.approx.costs import SOFTMAX, listed_numbers, per_head_cost
from gpu.approx.families.common import LIST_CHUNK, generator, randn, wide
from gpu.attention.neighbour import neighbour_attention, scale_of
from gpu.validation import check_int

PREFIX_CHUNK = 128  # positions per block of the causal prefix sums


def haar_orthogonal(d: int, g: torch.Generator) -> torch.Tensor:
    """A Haar-distributed ``d x d`` orthogonal matrix, in float64.

    ``Q diag(sign(diag R))`` of the QR of a Gaussian matrix (Mezzadri [1]_; without the sign correction LAPACK's
    ``Q`` is not Haar, e.g. ``E[Q_00] != 0``).

    Parameters
    ----------
    d : int
        Size.
    g : torch.Generator
        CPU generator of the Gaussian matrix.

    Returns
    -------
    torch.Tensor
        ``(d, d)`` float64, orthogonal.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.kernels import haar_orthogonal
    >>> Q = haar_orthogonal(4, torch.Generator().manual_seed(0))
    >>> torch.allclose(Q.T @ Q, torch.eye(4, dtype=torch.float64))
    True

    References
    ----------
    .. [1] Mezzadri, "How to generate random matrices from the classical compact groups", Notices of the AMS
       54(5), 2007, arXiv:math-ph/0609050.
    """
    ortho, upper = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    return ortho * torch.sign(torch.diagonal(upper))[None, :]


def orthogonal_gaussian(rows: int, d: int, seed: int, like: torch.Tensor) -> torch.Tensor:
    """``rows x d`` orthogonal random features (Performer's ORF [1]_), drawn from ``seed``.

    Blocks of ``d`` orthonormal rows, each block the ``Q`` of a Gaussian matrix with the QR sign correction
    ``Q diag(sign(diag R))`` (Haar-distributed, Mezzadri [2]_), rows rescaled to ``chi(d)`` lengths so that every
    row is marginally ``N(0, I_d)``.

    Parameters
    ----------
    rows : int
        Number of features ``m``.
    d : int
        Dimension of each feature.
    seed : int
        Seed of the draw (made on the CPU in float64).
    like : torch.Tensor
        Tensor whose device and dtype the result takes.

    Returns
    -------
    torch.Tensor
        ``(rows, d)``; rows of the same block are orthogonal.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.kernels import orthogonal_gaussian
    >>> w = orthogonal_gaussian(6, 4, 0, torch.zeros(1, dtype=torch.float64))
    >>> w.shape
    torch.Size([6, 4])
    >>> gram = w[:4] @ w[:4].T
    >>> torch.allclose(gram, torch.diag(gram.diagonal()))
    True

    References
    ----------
    .. [1] Choromanski et al., "Rethinking Attention with Performers", ICLR 2021, arXiv:2009.14794.
    .. [2] Mezzadri, "How to generate random matrices from the classical compact groups", Notices of the AMS
       54(5), 2007, arXiv:math-ph/0609050.
    """
    g = generator(seed)
    blocks = []
    for _ in range(-(-rows // d)):
        ortho = haar_orthogonal(d, g)
        norms = torch.randn(d, d, generator=g, dtype=torch.float64).norm(dim=1)
        blocks.append(ortho.T * norms[:, None])  # rows of Q^T: orthonormal rows
    return torch.cat(blocks)[:rows].to(like.device, like.dtype)


def positive_features(x: torch.Tensor, w: torch.Tensor, stab: torch.Tensor | float = 0.0, proj=None) -> torch.Tensor:
    """FAVOR+ positive random features [1]_ of ``x = input / d^(1/4)``.

    ``phi(x) = exp(w x - ||x||^2 / 2 - stab) / sqrt(m)``, with ``E[phi(q) . phi(k)] = exp(q . k / sqrt d)
    exp(-2 stab)`` (Choromanski et al. 2021, Lemma 1).

    Parameters
    ----------
    x : torch.Tensor
        Queries or keys, ``(..., d)``.
    w : torch.Tensor
        ``(m, d)`` random features (:func:`orthogonal_gaussian`).
    stab : torch.Tensor or float, optional
        Stabiliser subtracted in the exponent (broadcast against ``(..., m)``).
    proj : torch.Tensor or None, optional
        ``x w^T`` of the scaled ``x`` if already computed.

    Returns
    -------
    torch.Tensor
        ``(..., m)``, positive.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.kernels import orthogonal_gaussian, positive_features
    >>> x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    >>> phi = positive_features(x, orthogonal_gaussian(64, 4, 0, x))
    >>> phi.shape, bool((phi > 0).all())
    (torch.Size([3, 64]), True)

    References
    ----------
    .. [1] Choromanski et al., "Rethinking Attention with Performers", ICLR 2021, arXiv:2009.14794.
    """
    x = x * x.shape[-1] ** -0.25
    proj = x @ w.T if proj is None else proj
    return torch.exp(proj - (x * x).sum(-1, keepdim=True) / 2 - stab) / math.sqrt(w.shape[0])


def _causal_linear(fq, fk, v, level=None):
    """``out_i = fq_i (sum_{j<=i} fk_j^T v_j) / fq_i (sum_{j<=i} fk_j^T)`` by blocked prefix sums: a running state
    ``S = sum fk^T v`` of ``m x d`` across blocks and a lower-triangular product inside each; memory
    ``O(m d + PREFIX_CHUNK^2)`` per head. ``level`` (``(b, h, n)``, non-decreasing along the sequence) says that
    ``fk_j`` was divided by ``exp(level_j)``: query ``i`` then sums every key at the common scale
    ``exp(-level_i)`` (factors ``exp(level_j - level_i) <= 1``), so nothing after ``i`` enters its output."""
    b, h, n, m = fq.shape
    if level is None:
        level = fq.new_zeros(b, h, n)
    state = fq.new_zeros(b, h, m, v.shape[-1])
    norm = fq.new_zeros(b, h, m, 1)
    last = fq.new_zeros(b, h)
    out = torch.empty_like(v)
    for start in range(0, n, PREFIX_CHUNK):
        rows = slice(start, min(n, start + PREFIX_CHUNK))
        a, c, vv, lv = fq[:, :, rows], fk[:, :, rows], v[:, :, rows], level[:, :, rows]
        inner = (a @ c.transpose(-1, -2) * torch.exp((lv[..., None, :] - lv[..., :, None]).clamp_max(0))).tril()
        carry = torch.exp(last[..., None] - lv)[..., None]  # state scale exp(-last) -> exp(-level_i)
        numerator = inner @ vv + (a @ state) * carry
        denominator = inner.sum(-1, keepdim=True) + (a @ norm) * carry
        out[:, :, rows] = numerator / denominator.clamp_min(torch.finfo(v.dtype).tiny)
        end = lv[..., -1]
        shrink = torch.exp(lv - end[..., None])[..., None]  # keys of this block at scale exp(-end)
        decay = torch.exp(last - end)[..., None, None]
        state = state * decay + c.transpose(-1, -2) @ (vv * shrink)
        norm = norm * decay + c.transpose(-1, -2) @ shrink
        last = end
    return out


def performer(q, k, v, m, seed, causal=False):
    """Performer FAVOR+ attention [1]_ with ``m`` positive orthogonal random features.

    ``softmax(qk^T/sqrt d) v ~ phi(q) (phi(k)^T v)`` normalised by ``phi(q) (phi(k)^T 1)``. Causal: the same sums
    over ``j <= i`` by prefix sums (Choromanski et al. 2021, Sec. 2.4). The key stabiliser cancels: the maximum over
    all keys (bidirectional) or the running maximum over keys ``j <= i`` rescaled exactly per query (causal, so that
    no future key sets it).

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Number of random features.
    seed : int
        Seed of the features.
    causal : bool, optional
        Causal attention by blocked prefix sums.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.kernels import performer
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> out = performer(q, k, v, 256, seed=0)
    >>> out.shape
    torch.Size([1, 1, 8, 4])
    >>> relative_error(out, exact_attention(q, k, v)) < 0.5
    True

    References
    ----------
    .. [1] Choromanski et al., "Rethinking Attention with Performers", ICLR 2021, arXiv:2009.14794.
    """
    d = q.shape[-1]
    w = orthogonal_gaussian(m, d, seed, q)
    proj_q = (q * d**-0.25) @ w.T
    fq = positive_features(q, w, proj_q.amax(dim=-1, keepdim=True), proj_q)
    proj_k = (k * d**-0.25) @ w.T
    if causal:
        level = torch.cummax(proj_k.amax(dim=-1), dim=-1).values  # running maximum: no future key sets it
        return _causal_linear(fq, positive_features(k, w, level[..., None], proj_k), v, level)
    fk = positive_features(k, w, proj_k.amax(dim=(-1, -2), keepdim=True), proj_k)
    numerator = fq @ (fk.transpose(-1, -2) @ v)
    denominator = fq @ fk.sum(dim=-2, keepdim=True).transpose(-1, -2)
    return numerator / denominator.clamp_min(torch.finfo(q.dtype).tiny)


def performer_cost(n, d, m, heads, causal, element_bytes):
    """Cost of Performer FAVOR+ [1]_ with ``m`` positive random features.

    Features of ``q`` and ``k`` (``2 n m d`` and the exponentials each), ``phi(k)^T v`` and ``phi(q)`` times it,
    and the normaliser; causal adds the in-block products of the blocked prefix sums (blocks of 128). The decoder
    keeps the prefix state of ``m (d + 1)`` numbers per head, not a cache.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Number of random features.
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
    >>> from gpu.approx.families.kernels import performer_cost
    >>> performer_cost(64, 8, 16, 2, False, 4)
    Cost(flops=151552.0, peak_bytes=33920.0, kv_cache_bytes_per_token=18.0)

    References
    ----------
    .. [1] Choromanski et al., "Rethinking Attention with Performers", ICLR 2021, arXiv:2009.14794.
    """
    f = 2 * (2 * n * m * d + 3 * n * m) + 2 * n * m * d + 2 * n * m * d + 2 * n * m * 2
    if causal:  # blocked prefix sums: the in-block products of 128 x 128
        c = min(n, 128)
        f += 2 * n * c * m + 2 * n * c * d
    mem = 2 * n * m + m * (d + 1) + (128 * 128 if causal else 0)
    return per_head_cost(f, mem, m * (d + 1) / n, n, d, heads, element_bytes)


def polynomial_attention(q, k, v, degree: int, causal: bool = False) -> torch.Tensor:
    """The exact attention PolySketch [1]_ estimates: weights ``(1 + s_ij / p)^p``, normalised per row.

    ``s = q k^T / sqrt d`` and ``p`` even, so the weights are non-negative; the degree-``p`` truncation of
    ``exp(s) = lim (1 + s/p)^p``.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    degree : int
        The even degree ``p``.
    causal : bool, optional
        Keep only keys ``j <= i``.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.kernels import polynomial_attention
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(polynomial_attention(q, k, v, 16), exact_attention(q, k, v)) < 0.05
    True

    References
    ----------
    .. [1] Kacham, Mirrokni & Zhong, "PolySketchFormer: Fast Transformers via Sketching Polynomial Kernels",
       ICML 2024, arXiv:2310.01655.
    """
    weights = (1 + q @ k.transpose(-1, -2) * scale_of(q) / degree) ** degree
    if causal:
        weights = weights.tril()
    return (weights @ v) / weights.sum(-1, keepdim=True)


def tensor_sketch(x: torch.Tensor, degree: int, r: int, seed: int) -> torch.Tensor:
    """A Gaussian product sketch [1]_ of the tensor power ``x'^(p/2)``, with ``r`` columns.

    ``psi(x) = prod_{t=1}^{p/2} (G_t x') / sqrt(r)`` (entrywise product over the ``p/2`` sketches) with
    ``x' = [1, x / (p^(1/2) d^(1/4))]`` and independent ``(d + 1) x r`` standard Gaussian ``G_t`` drawn from
    ``seed``: ``E[psi(x) . psi(y)] = (x' . y')^(p/2) = (1 + x . y / (p sqrt d))^(p/2)`` (a Gaussian product sketch
    of the tensor power, Ahle et al. 2020).

    Parameters
    ----------
    x : torch.Tensor
        Queries or keys, ``(..., d)``.
    degree : int
        The even degree ``p``.
    r : int
        Sketch columns.
    seed : int
        Seed of the ``G_t``.

    Returns
    -------
    torch.Tensor
        ``(..., r)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.kernels import tensor_sketch
    >>> tensor_sketch(torch.ones(2, 5, 4), degree=4, r=8, seed=0).shape
    torch.Size([2, 5, 8])

    References
    ----------
    .. [1] Ahle et al., "Oblivious Sketching of High-Degree Polynomial Kernels", SODA 2020,
       arXiv:1909.01410.
    """
    d = x.shape[-1]
    g = generator(seed)
    x1 = torch.cat([torch.ones_like(x[..., :1]), x * (degree**0.5 * d**0.25) ** -1], dim=-1)
    psi = torch.ones(*x.shape[:-1], r, dtype=x.dtype, device=x.device)
    for _ in range(degree // 2):
        psi = psi * (x1 @ randn(g, d + 1, r, like=x))
    return psi / math.sqrt(r)


def polysketch(q, k, v, m, seed, causal=False, degree: int = 4):
    """PolySketchFormer-style attention [1]_ of even ``degree`` p with sketched features.

    The kernel is ``(x' . y')^p = (1 + s / p)^p`` on ``x' = [1, x / (p^(1/2) d^(1/4))]``; a Gaussian product sketch
    of the tensor power ``x'^(p/2)`` (:func:`tensor_sketch` [2]_, ``E[psi(x) . psi(y)] = (x' . y')^(p/2)``) is
    squared as in the paper's non-negative construction:
    ``(psi(q) . psi(k))^2 = (psi(q) (x) psi(q)) . (psi(k) (x) psi(k))``, features of dimension ``r^2 = m``
    (``r = floor(sqrt m)``), linear attention on them. Kacham et al. train with the polynomial kernel itself;
    training-free it approximates softmax through ``(1 + s/p)^p -> e^s``: two errors, degree
    (:func:`polynomial_attention` vs softmax) and sketch. Causal by prefix sums.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Feature budget: ``floor(sqrt m)^2`` features.
    seed : int
        Seed of the sketches.
    causal : bool, optional
        Causal attention by blocked prefix sums.
    degree : int, optional
        The even degree ``p >= 2``.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Raises
    ------
    TypeError
        If ``degree`` is not an integer.
    ValueError
        If ``degree`` is below 2 or odd.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.kernels import polysketch
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> out = polysketch(q, k, v, 64, seed=0, causal=True)
    >>> out.shape, bool(out.isfinite().all())
    (torch.Size([1, 1, 8, 4]), True)
    >>> polysketch(q, k, v, 64, seed=0, degree=3)
    Traceback (most recent call last):
        ...
    ValueError: degree: expected an even integer >= 2 (non-negative weights), got 3

    References
    ----------
    .. [1] Kacham, Mirrokni & Zhong, "PolySketchFormer: Fast Transformers via Sketching Polynomial Kernels",
       ICML 2024, arXiv:2310.01655.
    .. [2] Ahle et al., "Oblivious Sketching of High-Degree Polynomial Kernels", SODA 2020,
       arXiv:1909.01410.
    """
    degree = check_int("degree", degree, 2)
    if degree % 2:
        raise ValueError(f"degree: expected an even integer >= 2 (non-negative weights), got {degree}")
    r = max(1, math.isqrt(m))

    def features(x):
        psi = tensor_sketch(x, degree, r, seed)
        return (psi[..., :, None] * psi[..., None, :]).flatten(-2)

    fq, fk = features(q), features(k)
    if causal:
        return _causal_linear(fq, fk, v)
    return (fq @ (fk.transpose(-1, -2) @ v)) / (fq @ fk.sum(-2)[..., None]).clamp_min(torch.finfo(q.dtype).tiny)


def polysketch_cost(n, d, m, heads, causal, element_bytes, degree=4):
    """Cost of PolySketchFormer-style attention [1]_ with ``floor(sqrt m)^2`` sketched features.

    ``degree / 2`` Gaussian sketches of ``(d + 1) x r`` for ``q`` and ``k``, their self tensor product to ``r^2``
    features, then linear attention on them (causal: blocked prefix sums, blocks of 128).

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Feature budget; ``r = floor(sqrt m)`` sketch columns give ``r^2`` features.
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    element_bytes : int
        Bytes per number (2 for bfloat16, 4 for float32).
    degree : int, optional
        Even degree ``p`` of the polynomial kernel.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx.families.kernels import polysketch_cost
    >>> polysketch_cost(64, 8, 16, 2, False, 4)
    Cost(flops=116736.0, peak_bytes=33920.0, kv_cache_bytes_per_token=18.0)

    References
    ----------
    .. [1] Kacham, Mirrokni & Zhong, "PolySketchFormer: Fast Transformers via Sketching Polynomial Kernels",
       ICML 2024, arXiv:2310.01655.
    """
    r = max(1, math.isqrt(m))
    feat = r * r
    f = 2 * n * (degree // 2) * (2 * (d + 1) * r + r) + 2 * n * feat + 2 * n * feat * d * 2 + 2 * n * feat * 2
    if causal:
        c = min(n, 128)
        f += 2 * n * c * feat + 2 * n * c * d
    return per_head_cost(f, 2 * n * feat + feat * (d + 1), feat * (d + 1) / n, n, d, heads, element_bytes)


def leverage_scores(keys: torch.Tensor) -> torch.Tensor:
    """Statistical leverage [1]_ of every key row: ``l_j = k_j^T (K^T K)^+ k_j``.

    The scores sum to ``rank K``. Half types are widened to float32 for the pseudo-inverse.

    Parameters
    ----------
    keys : torch.Tensor
        ``(..., n, d)``.

    Returns
    -------
    torch.Tensor
        ``(..., n)``, each in ``[0, 1]``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.kernels import leverage_scores
    >>> keys = torch.randn(8, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    >>> round(float(leverage_scores(keys).sum()), 6)
    4.0

    References
    ----------
    .. [1] Drineas, Magdon-Ismail, Mahoney & Woodruff, "Fast approximation of matrix coherence and statistical
       leverage", JMLR 13, 2012, arXiv:1109.3843.
    """
    keys = wide(keys)
    gram = keys.transpose(-1, -2) @ keys
    return ((keys @ torch.linalg.pinv(gram, hermitian=True)) * keys).sum(-1)


def levattention(q, k, v, m, seed, causal=False):
    """LevAttention [1]_: exact softmax attention on the ``m`` keys of largest leverage score.

    The ``m`` keys of largest leverage score in ``K`` (:func:`leverage_scores`) form a universal set shared by every
    query (the paper shows that large attention weights of any query fall on large-leverage keys, for polynomial
    kernels), exact softmax attention on them. Exact at ``m >= n``. Cost ``O(n d^2 + n m d)``.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Keys kept (at most ``n``).
    seed : int
        Unused: the method is deterministic.
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
    >>> from gpu.approx.families.kernels import levattention
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(levattention(q, k, v, 8, seed=0), exact_attention(q, k, v)) < 1e-12
    True

    References
    ----------
    .. [1] Kannan, Bhattacharyya, Kacham & Woodruff, "LevAttention: Time, Space, and Streaming Efficient
       Algorithm for Heavy Attentions", 2024, arXiv:2410.05462.
    """
    n = q.shape[2]
    m = min(m, n)
    chosen = leverage_scores(k).topk(m, dim=-1).indices  # (b, h, m)
    return neighbour_attention(q, k, v, chosen[:, :, None, :].expand(-1, -1, n, -1), method="gather", chunk=LIST_CHUNK)


def levattention_cost(n, d, m, heads, causal, element_bytes):
    """Cost of LevAttention [1]_: the ``m`` keys of largest leverage score, shared by every query.

    The Gram matrix ``K^T K`` (``2 n d^2``), its pseudo-inverse (``22 d^3``), the leverage scores and exact
    attention over the ``m`` chosen keys.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys kept (at most ``n``).
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
    >>> from gpu.approx.families.kernels import levattention_cost
    >>> levattention_cost(64, 8, 16, 2, False, 4)
    Cost(flops=133120.0, peak_bytes=184832.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Kannan, Bhattacharyya, Kacham & Woodruff, "LevAttention: Time, Space, and Streaming Efficient
       Algorithm for Heavy Attentions", 2024, arXiv:2410.05462.
    """
    m = min(m, n)
    f = 2 * n * d * d + 22 * d**3 + 2 * n * d * d + 2 * n * d + 4 * n * m * d + SOFTMAX * n * m
    return per_head_cost(f, n * d + d * d + listed_numbers(n, m, d), 2 * d, n, d, heads, element_bytes)
