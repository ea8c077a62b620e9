"""Banded attention in pure torch: every query attends to the keys ``p-left .. p+right`` of its own order.

Queries are cut into blocks of ``bq``; block ``b`` needs the keys ``b*bq - left .. (b+1)*bq - 1 + right``, a span of
``bq + left + right`` rows of the padded keys (key block ``b`` and the first ``left + right`` rows of block ``b + 1``,
joined). Scores are ``(bq, span)`` per block, so memory is ``O(n (bq + w))`` per head instead of ``O(n^2)``.
Scores and softmax are computed in float32 for float16 and bfloat16 inputs (scaled before the product, cast back at
the end, as ``scaled_dot_product_attention`` does), so a finite input never overflows to NaN. Masked scores get the
most negative finite value and their probabilities are zeroed, so no row can produce NaN (every row has its own key
in any case).

On the CPU the (batch * heads, query block) work runs in chunks of at most :data:`CHUNK_SCORES` score elements
(:func:`chunk_plan`), so that each chunk's scores, probabilities and masks stay in cache instead of materialising
``(batch, heads, nb, bq, span)`` for the whole sequence at once; elsewhere (CUDA) in one shot. The chunks
are cut with ``torch.split`` (whose backward is one concatenation), so autograd through the chunks costs
``O(n d)`` in all, not ``O(n d)`` per chunk as slicing the full tensors would.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from gpu.validation import check_int, check_qkv, check_real

#: score elements (batch * heads rows x query blocks x ``bq`` x ``span``) per chunk on the CPU: 2^18 (1 MiB of
#: float32 scores, small enough to stay in cache); ``benchmarks/bench_banded.py --chunk-exponents 16,18,20`` times these
#: sizes against one shot (its rows: ``benchmarks/results/banded.json``).
CHUNK_SCORES = 1 << 18


def _accumulator(dtype: torch.dtype) -> torch.dtype:
    """The dtype of the scores and the softmax: float32 for half precision (as SDPA), else ``dtype`` itself."""
    return torch.promote_types(dtype, torch.float32)


def _block_size(n: int, left: int, right: int) -> int:
    width = left + right + 1
    return max(16, min(1 << max(4, math.ceil(math.log2(width))), 1 << math.ceil(math.log2(max(n, 1)))))


def chunk_plan(rows: int, blocks: int, per_block: int, chunk_scores: int | None) -> tuple[int, int]:
    """``(rows per chunk, query blocks per chunk)`` so that a chunk holds at most ``chunk_scores`` score elements.

    The work is ``rows`` (batch * heads) x ``blocks`` units of ``per_block`` score elements each (``chunk_scores=None``:
    one chunk). All rows in one chunk when one block of every row fits (then as many blocks as fit); otherwise one
    block and as many rows as fit. A single unit larger than that runs alone.

    Parameters
    ----------
    rows : int
        The flattened (batch, heads) rows, ``>= 1``.
    blocks : int
        Query blocks per row, ``>= 1``.
    per_block : int
        Score elements of one block of one row, ``>= 1``.
    chunk_scores : int or None
        Score elements per chunk, ``>= 1``; ``None``: no limit.

    Returns
    -------
    tuple of int
        ``(rows per chunk, blocks per chunk)``.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If an argument is below 1.

    Examples
    --------
    >>> chunk_plan(8, 4, 100, None), chunk_plan(8, 4, 100, 1600)  # everything / all rows, two blocks at a time
    ((8, 4), (8, 2))
    >>> chunk_plan(8, 4, 100, 400), chunk_plan(8, 4, 1000, 100)  # one block, four rows / one unit over the limit
    ((4, 1), (1, 1))
    """
    rows = check_int("rows", rows, 1)
    blocks = check_int("blocks", blocks, 1)
    per_block = check_int("per_block", per_block, 1)
    if chunk_scores is not None:
        chunk_scores = check_int("chunk_scores", chunk_scores, 1)
    if chunk_scores is None or rows * blocks * per_block <= chunk_scores:
        return rows, blocks
    if rows * per_block <= chunk_scores:
        return rows, max(1, min(blocks, chunk_scores // (rows * per_block)))
    return max(1, chunk_scores // per_block), 1


def _rows_mask(mask: torch.Tensor, b: int, h: int, row0: int, rows: int) -> torch.Tensor:
    """``extra_mask``'s output (broadcastable to ``(b, h, c, bq, span)``) for the flattened rows
    ``row0 .. row0+rows-1`` of ``(b, h)``: ``(rows or 1, c, bq, span)``-broadcastable."""
    if mask.dim() > 5:
        raise ValueError(
            f"extra_mask: expected a mask broadcastable to (batch, heads, nb, bq, span), got {mask.dim()}-D"
        )
    mask = mask.reshape((1,) * (5 - mask.dim()) + tuple(mask.shape))
    mb, mh = mask.shape[0], mask.shape[1]
    if mb not in (1, b) or mh not in (1, h):
        raise ValueError(f"extra_mask: batch and head sizes {mb}, {mh} do not broadcast to ({b}, {h})")
    if mb == 1 and mh == 1:
        return mask[0, 0]
    if row0 == 0 and rows == b * h:  # every row: a view when the mask has both sizes
        return mask.expand(b, h, *mask.shape[2:]).reshape(b * h, *mask.shape[2:])
    idx = torch.arange(row0, row0 + rows, device=mask.device)
    bi = idx // h if mb > 1 else torch.zeros_like(idx)
    hi = idx % h if mh > 1 else torch.zeros_like(idx)
    return mask[bi, hi]


def _band_chunk(qc, k_spans, v_spans, first, n, left, right, scale, extra_mask, b, h, row0):
    """Banded attention of the query blocks ``first .. first+c-1`` of ``r`` flattened rows.

    ``qc``: ``(r, c, bq, d)``; ``k_spans, v_spans``: ``(r, c, span, d)``, the padded key rows
    ``(first + i) * bq .. (first + i) * bq + span - 1`` of block ``i`` (padded key row ``j`` is key ``j - left``).
    Returns ``(r, c, bq, dv)``."""
    r, c, bq, _ = qc.shape
    span = k_spans.shape[2]
    device = qc.device
    acc = _accumulator(qc.dtype)  # scores and probabilities in at least float32 (a float16 q.k overflows)
    scores = torch.einsum("rcqd,rckd->rcqk", qc.to(acc) * scale, k_spans.to(acc))
    qpos = torch.arange(first * bq, (first + c) * bq, device=device).view(c, bq)
    kpos = (torch.arange(first, first + c, device=device)[:, None] * bq - left) + torch.arange(span, device=device)
    rel = kpos[:, None, :] - qpos[:, :, None]
    valid = (rel >= -left) & (rel <= right) & ((kpos >= 0) & (kpos < n))[:, None, :]
    if extra_mask is not None:
        valid = valid & _rows_mask(torch.as_tensor(extra_mask(qpos, kpos.clamp(0, n - 1))), b, h, row0, r)
    probs = torch.softmax(scores.masked_fill(~valid, torch.finfo(scores.dtype).min), dim=-1)
    if extra_mask is not None:
        # a row whose keys are all masked would spread its weight over them: zero it (no NaN either way). Without
        # extra_mask every real query sees its own key, masked scores give exactly 0, and only the padding rows
        # past n - 1 (dropped, gradient 0) can be fully masked, so the product is skipped.
        probs = probs * valid
    return torch.einsum("rcqk,rckd->rcqd", probs, v_spans.to(acc)).to(qc.dtype)


def banded_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    left: int,
    right: int,
    extra_mask: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    scale: float | None = None,
    chunk_scores: int | None = None,
) -> torch.Tensor:
    """``softmax(q k^T * scale + mask) v`` with the band ``-left <= key - query <= right`` (keys in ``0..n-1``).

    ``q, k, v``: ``(batch, heads, n, d)`` with the same number of heads. ``extra_mask(qpos, kpos)`` may restrict the
    band further: given query positions ``(c, bq)`` and key positions ``(c, span)`` (out-of-range ones clamped) of
    ``c`` consecutive query blocks (one chunk; every block when the call runs in one shot) it returns a boolean
    mask broadcastable to ``(batch, heads, c, bq, span)``; query positions past ``n - 1`` (the padding of the last
    block) are passed unclamped.

    ``chunk_scores``: score elements per chunk (:func:`chunk_plan`); default :data:`CHUNK_SCORES` on the CPU and one
    shot elsewhere. The chunks give the same outputs and gradients as one shot (tested in float64).

    Parameters
    ----------
    q, k, v : torch.Tensor
        ``(batch, heads, n, d)`` (``v`` may have another last size), same heads, dtype and device.
    left, right : int
        The band's reach before and after the query, ``>= 0``.
    extra_mask : callable or None, default None
        ``extra_mask(qpos, kpos)``: a further boolean restriction (see above).
    scale : float or None, default None
        The scores' factor, ``> 0``; ``None``: ``1 / sqrt(d)``.
    chunk_scores : int or None, default None
        Score elements per chunk, ``>= 1``; ``None``: :data:`CHUNK_SCORES` on the CPU, one shot elsewhere.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, dv)``.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If the shapes do not match (``k`` with fewer heads than ``q``), ``left`` or ``right`` is negative, or
        ``scale`` or ``chunk_scores`` is out of range.

    References
    ----------
    - I. Beltagy, M. E. Peters, A. Cohan, "Longformer: The Long-Document Transformer", 2020, arXiv:2004.05150
      (sliding-window attention as a band).

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 40, 4, generator=g) for _ in range(3))
    >>> i = torch.arange(40)
    >>> band = (i[None, :] - i[:, None] >= -3) & (i[None, :] - i[:, None] <= 1)
    >>> ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=band)
    >>> bool(torch.allclose(banded_attention(q, k, v, 3, 1), ref, atol=1e-6))
    True
    >>> bool(torch.allclose(banded_attention(q, k, v, 3, 1, chunk_scores=64), ref, atol=1e-6))  # in chunks
    True
    """
    check_qkv(q, k, v)
    if k.shape[1] != q.shape[1]:
        raise ValueError(f"k: expected {q.shape[1]} heads like q (expand GQA heads first), got {k.shape[1]}")
    left = check_int("left", left, 0)
    right = check_int("right", right, 0)
    if scale is not None:
        scale = check_real("scale", scale, 0.0, low_open=True)
    if chunk_scores is not None:
        chunk_scores = check_int("chunk_scores", chunk_scores, 1)
    elif q.device.type == "cpu":
        chunk_scores = CHUNK_SCORES
    b, h, n, d = q.shape
    dv = v.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    bq = _block_size(n, left, right)
    nb = -(-n // bq)
    padded = nb * bq
    halo = left + right
    rows = b * h
    if nb == 1:  # one block: its span is the whole padded sequence (here halo may exceed bq)
        kf = F.pad(k, (0, 0, left, right + bq - n)).reshape(rows, 1, bq + halo, d)
        vf = F.pad(v, (0, 0, left, right + bq - n)).reshape(rows, 1, bq + halo, dv)
    else:  # nb + 1 blocks of bq padded keys (halo < bq here): block i's span is block i and halo rows of block i+1
        kf = F.pad(k, (0, 0, left, (nb + 1) * bq - n - left)).reshape(rows, nb + 1, bq, d)
        vf = F.pad(v, (0, 0, left, (nb + 1) * bq - n - left)).reshape(rows, nb + 1, bq, dv)
    qf = F.pad(q, (0, 0, 0, padded - n)).reshape(rows, nb, bq, d)
    per_rows, per_blocks = chunk_plan(rows, nb, bq * (bq + halo), chunk_scores)
    args = (n, left, right, scale, extra_mask, b, h)
    outs = []
    for i, (qr, kr, vr) in enumerate(zip(*(t.split(per_rows, 0) for t in (qf, kf, vf)), strict=True)):
        if nb == 1:
            outs.append(_band_chunk(qr, kr, vr, 0, *args, i * per_rows))
            continue
        # block j's span: key block j and the first halo rows of block j + 1, both split at the chunks' blocks
        # (torch.split's backward is one concatenation), joined per chunk by torch.cat (backward: slicing)
        kp, vp = (t[:, :nb].split(per_blocks, 1) for t in (kr, vr))
        kh, vh = (t[:, 1:, :halo].split(per_blocks, 1) for t in (kr, vr))
        blocks = []
        for j, qc in enumerate(qr.split(per_blocks, 1)):
            ks, vs = (torch.cat([p[j], t[j]], dim=2) if halo else p[j] for p, t in ((kp, kh), (vp, vh)))
            blocks.append(_band_chunk(qc, ks, vs, j * per_blocks, *args, i * per_rows))
        outs.append(blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=1))
    out = outs[0] if len(outs) == 1 else torch.cat(outs, dim=0)
    return out.reshape(b, h, padded, dv)[:, :, :n]
