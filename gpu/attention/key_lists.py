"""Softmax attention of each query over its own list of keys (torch form, any device, under autograd), and the helpers
of key lists: the default scale and the removal of repeated keys.

References
----------
Vaswani et al. (2017). Attention is all you need. NeurIPS.
"""

from __future__ import annotations

import math

import torch

QUERY_CHUNK = 256  # queries per block in :func:`indexed_attention` (memory O(chunk * keys * d))


def scale_of(q: torch.Tensor) -> float:
    """The softmax temperature ``1 / sqrt(d)`` of queries ``q`` (``d`` their last axis).

    Parameters
    ----------
    q : torch.Tensor
        Queries, head dimension last.

    Returns
    -------
    float
        ``1 / sqrt(q.shape[-1])``.

    Examples
    --------
    >>> import torch
    >>> from gpu.attention.key_lists import scale_of
    >>> scale_of(torch.zeros(4, 16))
    0.25

    References
    ----------
    .. [1] Vaswani et al., "Attention Is All You Need", NeurIPS 2017, arXiv:1706.03762, Eq. 1 (scaled dot
       product).
    """
    return 1.0 / math.sqrt(q.shape[-1])


def dedupe(idx: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``valid`` with every repeated index of a row (last axis) switched off but its first occurrence.

    Parameters
    ----------
    idx : torch.Tensor
        Integer indices, rows along the last axis.
    valid : torch.Tensor
        Bool, same shape: the entries in use (switched-off entries are not counted as repeats).

    Returns
    -------
    torch.Tensor
        Bool, same shape: ``valid`` and not a repeat of an earlier valid entry of the row.

    Examples
    --------
    >>> import torch
    >>> from gpu.attention.key_lists import dedupe
    >>> idx = torch.tensor([[3, 1, 3, 0]])
    >>> dedupe(idx, torch.ones_like(idx, dtype=torch.bool))
    tensor([[ True,  True, False,  True]])
    """
    big = torch.iinfo(idx.dtype).max
    keyed = idx.masked_fill(~valid, big)
    order = keyed.argsort(dim=-1, stable=True)
    ranked = keyed.gather(-1, order)
    repeat = torch.zeros_like(valid)
    repeat[..., 1:] = ranked[..., 1:] == ranked[..., :-1]
    return valid & ~torch.zeros_like(valid).scatter(-1, order, repeat)


def indexed_attention(q, k, v, idx: torch.Tensor, valid: torch.Tensor | None = None, causal: bool = False,
                      scores_bias: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
    """Exact softmax attention of query ``i`` over its own list of keys ``idx[..., i, :]``.

    ``idx`` holds ``(batch, heads, n, K)`` indices into the keys; ``valid`` switches entries off; ``causal`` also
    drops keys after the query. Repeated indices must be switched off by the caller (:func:`dedupe`) or they count
    twice. ``scores_bias`` is added to the scores. Queries are processed in blocks of ``QUERY_CHUNK``: memory
    ``O(QUERY_CHUNK K d)`` per head. A row without a valid key gives zeros.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    idx : torch.Tensor
        Integer ``(batch, heads, n, K)``: the keys of every query.
    valid : torch.Tensor or None, optional
        Bool, same shape as ``idx``; ``None`` means every entry.
    causal : bool, optional
        Also drop keys ``idx > i`` of query ``i``.
    scores_bias : torch.Tensor or None, optional
        ``(batch, heads, n, K)`` added to the scaled scores (e.g. log importance weights).

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx import exact_attention
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 4, 2, generator=g) for _ in range(3))
    >>> every = torch.arange(4).expand(1, 1, 4, 4)
    >>> torch.allclose(indexed_attention(q, k, v, every, causal=True), exact_attention(q, k, v, causal=True))
    True
    """
    b, h, n, d = q.shape
    if valid is None:
        valid = torch.ones_like(idx, dtype=torch.bool)
    if causal:
        valid = valid & (idx <= torch.arange(n, device=q.device)[:, None])
    out = torch.empty_like(q[..., : v.shape[-1]]) if v.shape[-1] == d else q.new_empty(b, h, n, v.shape[-1])
    scale = scale_of(q)
    acc = torch.promote_types(q.dtype, torch.float32)  # scores and softmax in at least float32, as SDPA
    for start in range(0, n, QUERY_CHUNK):
        rows = slice(start, min(n, start + QUERY_CHUNK))
        ix = idx[:, :, rows]
        flat = ix.reshape(b, h, -1)
        kk = torch.gather(k, 2, flat[..., None].expand(-1, -1, -1, d)).view(*ix.shape, d)
        vv = torch.gather(v, 2, flat[..., None].expand(-1, -1, -1, v.shape[-1])).view(*ix.shape, v.shape[-1])
        scores = torch.einsum("bhqd,bhqkd->bhqk", q[:, :, rows].to(acc) * scale, kk.to(acc))
        if scores_bias is not None:
            scores = scores + scores_bias[:, :, rows]
        ok = valid[:, :, rows]
        scores = scores.masked_fill(~ok, float("-inf"))
        top = scores.amax(dim=-1, keepdim=True).clamp_min(torch.finfo(scores.dtype).min)
        weights = torch.exp(scores - top) * ok
        total = weights.sum(-1, keepdim=True)
        probs = weights / total.clamp_min(torch.finfo(acc).tiny)
        out[:, :, rows] = torch.einsum("bhqk,bhqkd->bhqd", probs, vv.to(acc)).to(out.dtype)
    return out
