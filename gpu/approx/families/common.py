"""Shared pieces of the methods: exact attention (the reference), the error measure, attention over a per-query
list of key indices, seeded generators and option checks."""

from __future__ import annotations

import math

import torch

QUERY_CHUNK = 256  # queries per block in :func:`indexed_attention` (memory O(chunk * keys * d))


def scale_of(q: torch.Tensor) -> float:
    return 1.0 / math.sqrt(q.shape[-1])


def causal_mask(n: int, device) -> torch.Tensor:
    """``mask[i, j] = j <= i``."""
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def exact_attention(q, k, v, causal: bool = False) -> torch.Tensor:
    """``softmax(q k^T / sqrt(d) + M) v`` with ``M = 0`` (bidirectional) or ``-inf`` above the diagonal (causal)."""
    scores = q @ k.transpose(-1, -2) * scale_of(q)
    if causal:
        scores = scores.masked_fill(~causal_mask(q.shape[-2], q.device), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def relative_error(approx: torch.Tensor, exact: torch.Tensor) -> float:
    """``||O - O_hat||_F / ||O||_F``."""
    return float(torch.linalg.norm((approx - exact).double()) / torch.linalg.norm(exact.double()))


def masked_attention(q, k, v, mask: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Softmax over the keys where ``mask`` (broadcast to ``(..., n, n)``) holds; with ``causal`` also ``j <= i``.
    Dense ``O(n^2)`` scores: used by the oracles and MoBA's block mask."""
    if causal:
        mask = mask & causal_mask(q.shape[-2], q.device)
    scores = (q @ k.transpose(-1, -2) * scale_of(q)).masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def generator(seed: int) -> torch.Generator:
    """A CPU generator: every random draw is made on the CPU in float64, so a seed gives the same method on any
    device."""
    return torch.Generator().manual_seed(int(seed))


def randn(g: torch.Generator, *shape, like: torch.Tensor) -> torch.Tensor:
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(like.device, like.dtype)


def dedupe(idx: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``valid`` with every repeated index of a row (last axis) switched off but its first occurrence."""
    big = torch.iinfo(idx.dtype).max
    keyed = idx.masked_fill(~valid, big)
    order = keyed.argsort(dim=-1, stable=True)
    ranked = keyed.gather(-1, order)
    repeat = torch.zeros_like(valid)
    repeat[..., 1:] = ranked[..., 1:] == ranked[..., :-1]
    return valid & ~torch.zeros_like(valid).scatter(-1, order, repeat)


def indexed_attention(q, k, v, idx: torch.Tensor, valid: torch.Tensor | None = None, causal: bool = False,
                      scores_bias: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
    """Exact softmax attention of query ``i`` over its keys ``idx[..., i, :]`` (``(batch, heads, n, K)`` indices into
    the keys; ``valid`` switches entries off; ``causal`` also drops keys after the query). Repeated indices must be
    switched off by the caller (:func:`dedupe`) or they count twice. ``scores_bias`` is added to the scores.
    Queries are processed in blocks of ``QUERY_CHUNK``: memory ``O(QUERY_CHUNK K d)`` per head. A row without a
    valid key gives zeros."""
    b, h, n, d = q.shape
    if valid is None:
        valid = torch.ones_like(idx, dtype=torch.bool)
    if causal:
        valid = valid & (idx <= torch.arange(n, device=q.device)[:, None])
    out = torch.empty_like(q[..., : v.shape[-1]]) if v.shape[-1] == d else q.new_empty(b, h, n, v.shape[-1])
    scale = scale_of(q)
    for start in range(0, n, QUERY_CHUNK):
        rows = slice(start, min(n, start + QUERY_CHUNK))
        ix = idx[:, :, rows]
        flat = ix.reshape(b, h, -1)
        kk = torch.gather(k, 2, flat[..., None].expand(-1, -1, -1, d)).view(*ix.shape, d)
        vv = torch.gather(v, 2, flat[..., None].expand(-1, -1, -1, v.shape[-1])).view(*ix.shape, v.shape[-1])
        scores = torch.einsum("bhqd,bhqkd->bhqk", q[:, :, rows], kk) * scale
        if scores_bias is not None:
            scores = scores + scores_bias[:, :, rows]
        ok = valid[:, :, rows]
        scores = scores.masked_fill(~ok, float("-inf"))
        top = scores.amax(dim=-1, keepdim=True).clamp_min(torch.finfo(scores.dtype).min)
        weights = torch.exp(scores - top) * ok
        total = weights.sum(-1, keepdim=True)
        out[:, :, rows] = torch.einsum("bhqk,bhqkd->bhqd", weights / total.clamp_min(torch.finfo(q.dtype).tiny), vv)
    return out


def wide(x: torch.Tensor) -> torch.Tensor:
    """``x`` in float32 if it is a half type: the CPU decompositions (``eigh``, ``svd``, ``pinv``) need it."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
