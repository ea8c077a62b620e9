"""Clustering and block routing: MoBA (Lu et al. 2025, arXiv 2502.13189) and the Routing Transformer (Roy, Saffar,
Vaswani & Grangier 2021, TACL 9:53)."""

from __future__ import annotations

import torch

from gpu.approx.costs import SOFTMAX, listed_numbers, per_head_cost
from gpu.approx.families.common import LIST_CHUNK, generator, padded_keys
from gpu.attention.neighbour import neighbour_attention
from gpu.attention.oracle import masked_attention
from gpu.validation import check_int


def moba(q, k, v, m, seed, causal=False, blocks_per_query: int = 4):
    """MoBA [1]_: each query attends to the keys of its top ``blocks_per_query`` blocks of keys.

    Keys in blocks of ``B = m / blocks_per_query``; each query scores the blocks by ``q . mean(k_block)``, keeps the
    top ``blocks_per_query`` (its own block always) and attends to their keys. Causal (the paper's setting): only
    blocks before the query's own are scored, and the own block is causally masked. ``m = B * blocks_per_query``.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Keys per query (``blocks_per_query`` blocks of ``m // blocks_per_query``).
    seed : int
        Unused: the routing is deterministic.
    causal : bool, optional
        Causal attention.
    blocks_per_query : int, optional
        Blocks each query attends to (``>= 1``).

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Raises
    ------
    TypeError
        If ``blocks_per_query`` is not an integer.
    ValueError
        If ``blocks_per_query`` is below 1.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.clustering import moba
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> out = moba(q, k, v, 8, seed=0, causal=True, blocks_per_query=2)  # every block: exact
    >>> relative_error(out, exact_attention(q, k, v, causal=True)) < 1e-12
    True

    References
    ----------
    .. [1] Lu et al., "MoBA: Mixture of Block Attention for Long-Context LLMs", 2025, arXiv:2502.13189.
    """
    blocks_per_query = check_int("blocks_per_query", blocks_per_query, 1)
    b, h, n, d = q.shape
    size = max(1, m // blocks_per_query)
    nb = -(-n // size)
    block_of = torch.arange(n, device=q.device) // size
    means = torch.zeros(b, h, nb, d, dtype=q.dtype, device=q.device).index_add_(2, block_of, k)
    means = means / torch.bincount(block_of, minlength=nb).to(q.dtype)[:, None]
    gate = q @ means.transpose(-1, -2)
    if causal:
        gate = gate.masked_fill(torch.arange(nb, device=q.device) > block_of[:, None], float("-inf"))
    gate[..., torch.arange(n, device=q.device), block_of] = float("inf")  # own block always kept
    chosen = gate.topk(min(blocks_per_query, nb), dim=-1).indices
    keep = torch.zeros(b, h, n, nb, dtype=torch.bool, device=q.device).scatter_(-1, chosen, True)
    return masked_attention(q, k, v, keep[..., block_of], causal=causal)


def moba_cost(n, d, m, heads, causal, element_bytes, blocks_per_query=4):
    """Cost of MoBA [1]_: ``blocks_per_query`` blocks of ``m / blocks_per_query`` keys chosen by the block means.

    Block means and their scores (``2 n (n / B) d``), then attention over the chosen blocks; the lab applies a
    dense block mask, so memory holds ``2 n^2`` numbers; the cache adds the block means (``h d / B``).

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys per query (``blocks_per_query`` blocks).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    element_bytes : int
        Bytes per number (2 for bfloat16, 4 for float32).
    blocks_per_query : int, optional
        Blocks each query attends to.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx.families.clustering import moba_cost
    >>> moba_cost(64, 8, 16, 2, False, 4)
    Cost(flops=111616.0, peak_bytes=90112.0, kv_cache_bytes_per_token=144.0)

    References
    ----------
    .. [1] Lu et al., "MoBA: Mixture of Block Attention for Long-Context LLMs", 2025, arXiv:2502.13189.
    """
    size = max(1, m // blocks_per_query)
    nb = -(-n // size)
    keys = min(n, size * blocks_per_query)
    f = n * d + 2 * n * nb * d + n * nb + 4 * n * keys * d + SOFTMAX * n * keys
    mem = n * nb + 2 * n * n  # the lab's dense block mask
    return per_head_cost(f, mem, 2 * d + d / size, n, d, heads, element_bytes)


def spherical_kmeans(x: torch.Tensor, clusters: int, seed: int, iterations: int = 10) -> torch.Tensor:
    """Lloyd's iterations [1]_ on the unit sphere (spherical k-means [2]_, cosine similarity).

    For every ``(batch, head)``: ``x`` of shape ``(b, h, N, d)``, ``clusters`` initial centroids drawn without
    replacement from ``x`` with ``seed``. An empty cluster keeps its centroid.

    Parameters
    ----------
    x : torch.Tensor
        Points ``(b, h, N, d)`` (normalised inside).
    clusters : int
        Number of centroids (at most ``N``).
    seed : int
        Seed of the initial draw.
    iterations : int, optional
        Lloyd steps.

    Returns
    -------
    torch.Tensor
        Unit centroids ``(b, h, clusters, d)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.clustering import spherical_kmeans
    >>> x = torch.randn(1, 1, 8, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    >>> centroids = spherical_kmeans(x, 3, seed=0)
    >>> centroids.shape, torch.allclose(centroids.norm(dim=-1), torch.ones(1, 1, 3, dtype=torch.float64))
    (torch.Size([1, 1, 3, 4]), True)

    References
    ----------
    .. [1] Lloyd, "Least squares quantization in PCM", IEEE Trans. Information Theory 28(2), 1982.
    .. [2] Dhillon & Modha, "Concept Decompositions for Large Sparse Text Data Using Clustering",
       Machine Learning 42, 2001.
    """
    total = x.shape[2]
    x = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-30)
    start = torch.randperm(total, generator=generator(seed))[:clusters].to(x.device)
    centroids = x[:, :, start]
    for _ in range(iterations):
        assign = (x @ centroids.transpose(-1, -2)).argmax(-1)  # (b, h, N)
        onehot = torch.nn.functional.one_hot(assign, clusters).to(x.dtype)
        sums = onehot.transpose(-1, -2) @ x
        norms = sums.norm(dim=-1, keepdim=True)
        centroids = torch.where(norms > 0, sums / norms.clamp_min(1e-30), centroids)
    return centroids


def routing(q, k, v, m, seed, causal=False, iterations: int = 10):
    """Routing Transformer [1]_: each query attends to the ``m`` keys of its nearest k-means centroid.

    Spherical k-means with ``c = ceil(n / m)`` centroids shared by queries and keys (fitted here by ``iterations``
    Lloyd steps on the ``2n`` unit vectors, where the paper updates them online during training); each centroid takes
    its ``m`` nearest keys (the paper's balanced clusters: top-``m`` by similarity, so a key may serve several
    clusters or none) and each query attends to the keys of its nearest centroid. Exactly ``min(m, n)`` keys per
    query; exact when ``m >= n``.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Keys per cluster.
    seed : int
        Seed of the k-means initialisation.
    causal : bool, optional
        Also drop keys after the query.
    iterations : int, optional
        Lloyd steps (``>= 0``).

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Raises
    ------
    TypeError
        If ``iterations`` is not an integer.
    ValueError
        If ``iterations`` is negative.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.clustering import routing
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> routing(q, k, v, 4, seed=0).shape
    torch.Size([1, 1, 8, 4])
    >>> relative_error(routing(q, k, v, 8, seed=0), exact_attention(q, k, v)) < 1e-12
    True

    References
    ----------
    .. [1] Roy, Saffar, Vaswani & Grangier, "Efficient Content-Based Sparse Attention with Routing
       Transformers", TACL 9, 2021, arXiv:2003.05997.
    """
    iterations = check_int("iterations", iterations, 0)
    n = q.shape[2]
    m = min(m, n)
    clusters = -(-n // m)
    centroids = spherical_kmeans(torch.cat([q, k], dim=2), clusters, seed, iterations)
    members = (centroids @ k.transpose(-1, -2)).topk(m, dim=-1).indices  # (b, h, c, m) keys of each cluster
    home = (q @ centroids.transpose(-1, -2)).argmax(-1)  # (b, h, n)
    idx = torch.gather(members, 2, home[..., None].expand(-1, -1, -1, m))
    return neighbour_attention(q, k, v, padded_keys(idx, causal=causal), method="gather", chunk=LIST_CHUNK)


def routing_cost(n, d, m, heads, causal, element_bytes, iterations=10):
    """Cost of the Routing Transformer [1]_: ``ceil(n / m)`` k-means clusters of ``m`` keys each.

    ``iterations`` rounds of assigning ``q`` and ``k`` to the centroids and updating them, the final assignment,
    then exact attention over each query's cluster.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys per cluster (at most ``n``).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    element_bytes : int
        Bytes per number (2 for bfloat16, 4 for float32).
    iterations : int, optional
        k-means iterations.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx.families.clustering import routing_cost
    >>> routing_cost(64, 8, 16, 2, False, 4)
    Cost(flops=419840.0, peak_bytes=184832.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Roy, Saffar, Vaswani & Grangier, "Efficient Content-Based Sparse Attention with Routing
       Transformers", TACL 2021, arXiv:2003.05997.
    """
    m = min(m, n)
    c = -(-n // m)
    f = iterations * (2 * 2 * n * c * d + 2 * 2 * n * c * d) + 2 * c * n * d + 2 * n * c * d
    f += 4 * n * m * d + SOFTMAX * n * m
    return per_head_cost(f, 2 * n * c + listed_numbers(n, m, d) + c * m, 2 * d, n, d, heads, element_bytes)
