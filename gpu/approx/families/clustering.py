"""Clustering and block routing: MoBA (Lu et al. 2025, arXiv 2502.13189) and the Routing Transformer (Roy, Saffar,
Vaswani & Grangier 2021, TACL 9:53)."""

from __future__ import annotations

import torch

from ...validation import check_int
from .common import generator, indexed_attention, masked_attention


def moba(q, k, v, m, seed, causal=False, blocks_per_query: int = 4):
    """MoBA: keys in blocks of ``B = m / blocks_per_query``; each query scores the blocks by ``q . mean(k_block)``,
    keeps the top ``blocks_per_query`` (its own block always) and attends to their keys. Causal (the paper's
    setting): only blocks before the query's own are scored, and the own block is causally masked.
    ``m = B * blocks_per_query``."""
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


def spherical_kmeans(x: torch.Tensor, clusters: int, seed: int, iterations: int = 10) -> torch.Tensor:
    """Lloyd's iterations on the unit sphere (cosine similarity) for every ``(batch, head)``: ``x`` of shape
    ``(b, h, N, d)``, ``clusters`` initial centroids drawn without replacement from ``x`` with ``seed``; returns the
    unit centroids ``(b, h, clusters, d)``. An empty cluster keeps its centroid."""
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
    """Routing Transformer: spherical k-means with ``c = ceil(n / m)`` centroids shared by queries and keys (fitted
    here by ``iterations`` Lloyd steps on the ``2n`` unit vectors, where the paper updates them online during
    training); each centroid takes its ``m`` nearest keys (the paper's balanced clusters: top-``m`` by similarity,
    so a key may serve several clusters or none) and each query attends to the keys of its nearest centroid.
    Exactly ``min(m, n)`` keys per query; exact when ``m >= n``."""
    iterations = check_int("iterations", iterations, 0)
    n = q.shape[2]
    m = min(m, n)
    clusters = -(-n // m)
    centroids = spherical_kmeans(torch.cat([q, k], dim=2), clusters, seed, iterations)
    members = (centroids @ k.transpose(-1, -2)).topk(m, dim=-1).indices  # (b, h, c, m) keys of each cluster
    home = (q @ centroids.transpose(-1, -2)).argmax(-1)  # (b, h, n)
    idx = torch.gather(members, 2, home[..., None].expand(-1, -1, -1, m))
    return indexed_attention(q, k, v, idx, causal=causal)
