"""Softmax attention of each query over its own short list of keys on the CPU, without materialising the gathered
keys: the inference kernel of the generation-form patterns.

:func:`gpu.approx.families.common.indexed_attention` gathers a ``(heads, q, K, d)`` copy of the keys and another of
the values before two ``einsum``\\ s: at SmolLM2's sizes (9 heads, ``d = 64``, ``K = 128``, ``n = 2048``) that is
1.2 GB of float32 written and read again per layer, so the forward is bound by memory traffic. Here a numba
kernel walks each query's list, reads each key row where it lies (one head's keys are 512 KiB at ``n = 2048``: they
stay in the cache), keeps its ``K`` scores in a small buffer, then sums the weighted value rows into one output row:
``4 q K d`` FLOPs and ``O(q K)`` index reads, nothing written but the output. It runs without autograd; training uses
the torch form.

References
----------
Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit, prange

from gpu.attention.key_lists import indexed_attention

#: Queries per parallel task of the kernel.
QUERY_BLOCK = 64


@njit(parallel=True, cache=True, fastmath={"reassoc", "contract", "nsz"})
def _gathered(q, k, v, idx, valid, scale, out):  # pragma: no cover - compiled
    """``out[b, h, i] = softmax_j(q[b, h, i] . k[b, h // g, idx[b, h, i, j]] * scale) v[...]`` over the valid ``j``
    (the index of batch row or head 0 where the key sets are shared); two passes over each list, scores kept."""
    batch, heads, n_q, d = q.shape
    groups = heads // k.shape[1]
    width = idx.shape[3]
    one_row, one_head = idx.shape[0] == 1, idx.shape[1] == 1
    blocks = (n_q + QUERY_BLOCK - 1) // QUERY_BLOCK
    for task in prange(batch * heads * blocks):
        b = task // (heads * blocks)
        h = (task // blocks) % heads
        hk = h // groups
        bi, hi = (0 if one_row else b), (0 if one_head else h)
        scores = np.empty(width, dtype=q.dtype)
        acc = np.empty(v.shape[3], dtype=q.dtype)
        for i in range((task % blocks) * QUERY_BLOCK, min(n_q, (task % blocks + 1) * QUERY_BLOCK)):
            row = q[b, h, i]
            top = -np.inf
            for j in range(width):
                if valid[bi, hi, i, j]:
                    key = k[b, hk, idx[bi, hi, i, j]]
                    s = 0.0
                    for c in range(d):
                        s += row[c] * key[c]
                    s *= scale
                    scores[j] = s
                    top = max(top, s)
            acc[:] = 0.0
            total = 0.0
            if top > -np.inf:
                for j in range(width):
                    if valid[bi, hi, i, j]:
                        p = math.exp(scores[j] - top)
                        total += p
                        value = v[b, hk, idx[bi, hi, i, j]]
                        for c in range(acc.shape[0]):
                            acc[c] += p * value[c]
                for c in range(acc.shape[0]):
                    acc[c] /= total
            out[b, h, i] = acc


def gathered_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, idx: torch.Tensor,
                       valid: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """Softmax attention of query ``i`` of head ``h`` over the keys ``idx[b, h, i]`` where ``valid`` holds, with grouped
    key heads; the key sets may be shared by the batch rows or the heads.

    On CPU tensors of float32 or float64 with no gradient to record, the numba kernel; otherwise (a GPU, autograd,
    another dtype) :func:`gpu.approx.families.common.indexed_attention` on the repeated key heads, which computes the
    same function. A query without a valid key gives zeros.

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, q, d)`` queries.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)`` and ``(batch, kv_heads, n, d_v)``; ``kv_heads`` divides ``heads`` (head ``h``
        reads key head ``h // (heads / kv_heads)``).
    idx : torch.Tensor
        ``(batch or 1, heads or 1, q, K)`` int64 key indices below ``n`` (an axis of size 1 is shared).
    valid : torch.Tensor
        Bool, the shape of ``idx``: which entries hold a key. Repeated valid indices count twice.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, q, d_v)``, the dtype of ``q``.

    Raises
    ------
    ValueError
        If the shapes disagree or a valid index is out of range.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention
    >>> q, k, v = torch.randn(3, 1, 2, 5, 4, dtype=torch.float64).unbind(0)
    >>> every = torch.arange(5).expand(1, 1, 5, 5)
    >>> causal = every <= torch.arange(5)[:, None]
    >>> torch.allclose(gathered_attention(q, k, v, every, causal), exact_attention(q, k, v, causal=True))
    True

    References
    ----------
    Vaswani et al. (2017). Attention is all you need. NeurIPS.
    """
    batch, heads, n_q, d = q.shape
    if k.dim() != 4 or k.shape[0] != batch or k.shape[3] != d or heads % k.shape[1] or v.shape[:3] != k.shape[:3]:
        raise ValueError(f"k, v: expected (batch, kv_heads, n, d) with kv_heads dividing {heads}, got "
                         f"{tuple(k.shape)} and {tuple(v.shape)}")  # fmt: skip
    shape_ok = idx.dim() == 4 and idx.shape[0] in (1, batch) and idx.shape[1] in (1, heads) and idx.shape[2] == n_q
    if not shape_ok or valid.shape != idx.shape:
        raise ValueError(f"idx, valid: expected ({batch} or 1, {heads} or 1, {n_q}, K), got {tuple(idx.shape)} and "
                         f"{tuple(valid.shape)}")  # fmt: skip
    if bool(((idx < 0) | (idx >= k.shape[2]))[valid].any()):
        raise ValueError(f"idx: a valid index lies outside 0..{k.shape[2] - 1}")
    tensors = (q, k, v)
    fast = (
        all(x.device.type == "cpu" and x.dtype == q.dtype for x in tensors)
        and q.dtype in (torch.float32, torch.float64)
        and not (torch.is_grad_enabled() and any(x.requires_grad for x in tensors))
    )
    if not fast:
        groups = heads // k.shape[1]
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        return indexed_attention(q, k, v, idx.expand(batch, heads, -1, -1), valid.expand(batch, heads, -1, -1))
    out = torch.empty(batch, heads, n_q, v.shape[3], dtype=q.dtype)
    arrays = [x.detach().contiguous().numpy() for x in (q, k, v)]
    index = idx.to(torch.int64).contiguous().numpy()
    _gathered(*arrays, index, valid.contiguous().numpy(), 1.0 / math.sqrt(d), out.numpy())
    return out
