"""Banded attention in pure torch: every query attends to the keys ``p-left .. p+right`` of its own order.

Queries are cut into blocks of ``bq``; block ``b`` needs the keys ``b*bq - left .. (b+1)*bq - 1 + right``, a span of
``bq + left + right`` rows taken from the padded keys with ``unfold`` (a view). Scores are ``(bq, span)`` per block,
so memory is ``O(n (bq + w))`` per head instead of ``O(n^2)``. Masked scores get the dtype's most negative finite
value and their probabilities are zeroed, so no row can produce NaN (every row has its own key in any case).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F


def _block_size(n: int, left: int, right: int) -> int:
    width = left + right + 1
    return max(16, min(1 << max(4, math.ceil(math.log2(width))), 1 << math.ceil(math.log2(max(n, 1)))))


def banded_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    left: int,
    right: int,
    extra_mask: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """``softmax(q k^T * scale + mask) v`` with the band ``-left <= key - query <= right`` (keys in ``0..n-1``).

    ``q, k, v``: ``(batch, heads, n, d)`` with the same number of heads. ``extra_mask(qpos, kpos)`` may restrict the
    band further: given query positions ``(nb, bq)`` and key positions ``(nb, span)`` (out-of-range ones clamped) it
    returns a boolean mask broadcastable to ``(batch, heads, nb, bq, span)``.
    """
    b, h, n, d = q.shape
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    bq = _block_size(n, left, right)
    nb = -(-n // bq)
    padded = nb * bq
    span = bq + left + right
    kp = F.pad(k, (0, 0, left, padded - n + right))
    vp = F.pad(v, (0, 0, left, padded - n + right))
    k_spans = kp.unfold(2, span, bq).transpose(-1, -2)  # (b, h, nb, span, d)
    v_spans = vp.unfold(2, span, bq).transpose(-1, -2)
    qb = F.pad(q, (0, 0, 0, padded - n)).view(b, h, nb, bq, d)
    scores = torch.einsum("bhnqd,bhnkd->bhnqk", qb, k_spans) * scale
    device = q.device
    qpos = torch.arange(padded, device=device).view(nb, bq)
    kpos = torch.arange(nb, device=device)[:, None] * bq - left + torch.arange(span, device=device)[None, :]
    rel = kpos[:, None, :] - qpos[:, :, None]
    valid = (rel >= -left) & (rel <= right) & ((kpos >= 0) & (kpos < n))[:, None, :]
    if extra_mask is not None:
        valid = valid & extra_mask(qpos, kpos.clamp(0, n - 1))
    scores = scores.masked_fill(~valid, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1) * valid
    out = torch.einsum("bhnqk,bhnkd->bhnqd", probs, v_spans)
    return out.reshape(b, h, padded, d)[:, :, :n]
