"""Attention over explicit key lists, so a model attends exactly the (query, key) pairs of any ``receptive`` pattern.

:func:`neighbour_attention` computes, for query ``i`` with key list ``K(i)`` (``keys[..., i, :]``, ``-1`` = padding),
``y_i = sum_{j in K(i)} softmax_j(q_i . k_j scale + bias_ij) v_j`` (0 for a row of padding, never NaN), by one of
three paths (``resolved_method``): a numba kernel for inference on the CPU that reads each listed row where it
lies (the path of the generation forms, :mod:`gpu.attention.generation_patterns`), the gather of the listed rows in
blocks of queries (torch: any device, autograd), and a dense masked product where the lists cover a large share of
the keys. :func:`pattern_keys` builds the padded table of a pattern's layer from its adjacency (query ``i`` attends
to key ``j``: :meth:`receptive.patterns.base.Pattern.adjacency`), so ``receptive.coverage`` analyses exactly the
model's pairs. :class:`PatternAttention` is the ``nn.Module`` for training models with the
causal variants (``sa-ms``, ``kleinberg``, ``dilated``, ``+swa``, ``-eq``): one softmax over the layer's union of
keys, every head the same (:class:`gpu.StochasticAttentionLayer` ``(variant=...)`` runs them head by head instead,
:mod:`gpu.attention.variants`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
from numba import njit, prange

from gpu.attention.projections import AttentionProjections
from gpu.validation import check_bool, check_choice, check_int, check_real, check_tensor
from receptive.patterns.causal_variants import make_variant, variant_names

__all__ = [
    "METHODS",
    "PatternAttention",
    "dedupe",
    "neighbour_attention",
    "pattern_keys",
    "resolved_method",
    "scale_of",
    "variant_window",
]

#: the paths of :func:`neighbour_attention`
METHODS = ("auto", "kernel", "gather", "dense")
#: gathered elements (of k, and of v) per block of queries on the CPU, 16 MiB in float32: the block stays in cache
#: and memory is O(block K d) instead of O(n K d)
GATHER_BUDGET = 1 << 22
#: the same on an accelerator, where fewer, larger blocks keep the launches few (1 GiB in float32)
GATHER_BUDGET_DEVICE = 1 << 28
#: queries per parallel task of the kernel
QUERY_BLOCK = 64


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

    :func:`neighbour_attention` counts a key listed twice twice; key sets built by concatenation (a window and a
    sink, several hash rounds) pass through here first.

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


def resolved_method(n: int, width: int, method: str = "auto", kernel: bool = False) -> str:
    """The path :func:`neighbour_attention` takes for ``n`` keys with key lists ``width`` wide.

    ``method`` itself; for ``auto``, ``kernel`` where the kernel runs (``kernel``: CPU tensors of float32 or
    float64 with no gradient to record; it reads ``K`` rows per query, and at the widest lists, ``K`` near ``n``,
    it is as fast as the dense path), else ``dense`` when ``n <= 32 width`` (matrix products over all ``n`` keys
    beat gathering ``width`` of them there), else ``gather``.

    Parameters
    ----------
    n : int
        The number of keys, ``>= 0``.
    width : int
        The width ``K`` of the key lists, ``>= 0``.
    method : {"auto", "kernel", "gather", "dense"}, default "auto"
        The requested path.
    kernel : bool, default False
        Whether the numba kernel can run on the call's tensors.

    Returns
    -------
    str
        ``"kernel"``, ``"gather"`` or ``"dense"``.

    Raises
    ------
    TypeError
        If ``n`` or ``width`` is not an integer, ``method`` is not a string, or ``kernel`` is not a bool.
    ValueError
        If ``method`` is not one of :data:`METHODS`, or ``n`` or ``width`` is negative.

    Examples
    --------
    >>> resolved_method(256, 8), resolved_method(257, 8), resolved_method(256, 8, "gather")
    ('dense', 'gather', 'gather')
    >>> resolved_method(256, 8, kernel=True)
    'kernel'
    """
    method = check_choice("method", method, METHODS)
    n, width = check_int("n", n, 0), check_int("width", width, 0)
    kernel = check_bool("kernel", kernel)
    if method != "auto":
        return method
    if kernel:
        return "kernel"
    return "dense" if n <= 32 * width else "gather"


def _check_qkv(q, k, v) -> None:
    """q ``(batch, heads, m, d)``, k ``(batch, kv_heads, n, d)``, v ``(batch, kv_heads, n, d_v)``: one floating
    dtype and one device, ``kv_heads`` dividing ``heads``."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, t)
        if t.dim() != 4:
            raise ValueError(f"{name}: expected a (batch, heads, seq, head_dim) tensor, got shape {tuple(t.shape)}")
    if k.shape[:3] != v.shape[:3] or k.shape[0] != q.shape[0] or k.shape[3] != q.shape[3]:
        raise ValueError(
            f"k, v: expected (batch, kv_heads, n, d) and (batch, kv_heads, n, d_v) matching q "
            f"{tuple(q.shape)}, got {tuple(k.shape)} and {tuple(v.shape)}"
        )
    if k.shape[1] < 1 or q.shape[1] % k.shape[1]:
        raise ValueError(f"k: kv_heads = {k.shape[1]} must divide the query heads {q.shape[1]} (GQA)")
    if not (q.dtype == k.dtype == v.dtype) or not q.dtype.is_floating_point:
        raise ValueError(f"q, k, v: expected one floating dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v: expected one device, got {q.device}, {k.device}, {v.device}")


def _check_keys(keys, batch: int, heads: int, m: int, device) -> torch.Tensor:
    """``keys`` as a ``(batch or 1, heads or 1, m, K)`` view."""
    if not isinstance(keys, torch.Tensor):
        raise TypeError(
            f"keys: expected an int64 tensor of shape (m, K), (heads, m, K) or (batch, heads, m, K), got "
            f"{type(keys).__name__}"
        )
    if keys.dtype != torch.int64:
        raise TypeError(f"keys: expected dtype int64, got {keys.dtype}")
    lead = keys.shape[:-2]
    ok = 2 <= keys.dim() <= 4 and keys.shape[-2] == m
    ok = ok and (keys.dim() < 3 or lead[-1] in (1, heads)) and (keys.dim() < 4 or lead[0] in (1, batch))
    if not ok:
        raise ValueError(
            f"keys: expected shape ({m}, K), ({heads}, {m}, K) or ({batch} or 1, {heads} or 1, {m}, K), "
            f"got {tuple(keys.shape)}"
        )
    if keys.device != device:
        raise ValueError(f"keys: expected a tensor on {device}, got one on {keys.device}")
    return keys.view((1,) * (4 - keys.dim()) + tuple(keys.shape))


def _check_bias(bias, keys: torch.Tensor, device) -> torch.Tensor | None:
    """``bias`` (keys' shape) as a view of keys' 4-d shape."""
    if bias is None:
        return None
    check_tensor("bias", bias)
    if not bias.dtype.is_floating_point:
        raise TypeError(f"bias: expected a floating tensor, got dtype {bias.dtype}")
    if bias.shape != keys.shape:
        raise ValueError(f"bias: expected the shape of keys {tuple(keys.shape)}, got {tuple(bias.shape)}")
    if bias.device != device:
        raise ValueError(f"bias: expected a tensor on {device}, got one on {bias.device}")
    return bias.view((1,) * (4 - bias.dim()) + tuple(bias.shape))


def _kernel_runs(q, k, v, bias) -> bool:
    """Whether the numba kernel can run: CPU tensors of float32 or float64 with no gradient to record."""
    tensors = (q, k, v) if bias is None else (q, k, v, bias)
    return (
        q.device.type == "cpu"
        and q.dtype in (torch.float32, torch.float64)
        and not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors))
    )


def neighbour_attention(
    q,
    k,
    v,
    keys: torch.Tensor,
    *,
    scale: float | None = None,
    bias: torch.Tensor | None = None,
    validate: bool = True,
    method: str = "auto",
    chunk: int | None = None,
):
    """``softmax(q_i . k_j scale + bias)`` over ``j`` in ``keys[..., i, :]`` (``-1`` = padding), applied to ``v``.

    GQA: query head ``h`` reads kv head ``h // (heads / kv_heads)``. The ``m`` queries may be fewer than the ``n``
    keys (a decode step: the lists say which keys each reads). A key listed twice counts twice (:func:`pattern_keys`
    lists each key once, ``dedupe`` switches repeats off). Scores and softmax run in at least float32.

    ``method`` (``resolved_method``): ``kernel`` is a numba kernel for CPU tensors of float32 or float64 with
    no gradient to record: ``4 m K d`` FLOPs, the listed key and value rows read where they lie, nothing written
    but the output; ``gather`` gathers the listed keys and values, ``chunk`` queries at a time (default: as many
    as ``GATHER_BUDGET`` elements allow; memory ``O(chunk K d)`` per block), on any device and under autograd;
    ``dense`` scatters the lists into an ``(m, n)`` weight matrix ``C`` (the times a key is listed, times
    ``exp(bias)``) and computes ``softmax(q k^T scale + log C) v`` (``log 0 = -inf``: the same result, duplicates
    included, at ``O(m n)`` cost through matrix products); ``auto`` takes ``kernel`` where it runs, else ``dense``
    when ``n <= 32 K``, else ``gather``.

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, m, d)``, floating point.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)`` and ``(batch, kv_heads, n, d_v)``, q's dtype and device; ``kv_heads`` divides
        ``heads``.
    keys : torch.Tensor
        int64 ``(m, K)``, ``(heads or 1, m, K)`` or ``(batch or 1, heads or 1, m, K)`` on q's device: key indices
        in ``0..n-1``, ``-1`` = padding; an axis of size 1 is shared.
    scale : float or None, default None
        The scores' factor, ``> 0``; ``None``: ``1 / sqrt(d)`` (``scale_of``).
    bias : torch.Tensor or None, default None
        Floating, keys' shape, on q's device: added to the scaled score of each listed key.
    validate : bool, default True
        Check that every key is in ``-1..n-1`` (reads one boolean back from the device: pass ``False`` in a
        training loop with keys from :func:`pattern_keys`). The kernel path always checks: it reads memory at the
        listed positions.
    method : {"auto", "kernel", "gather", "dense"}, default "auto"
        The path (see above).
    chunk : int or None, default None
        Queries per block of the gather path, ``>= 1``; ``None``: from ``GATHER_BUDGET``.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, m, d_v)``; rows with only padding are 0.

    Raises
    ------
    TypeError
        If a tensor is missing, ``keys`` is not int64, ``bias`` is not floating, or ``scale`` or ``chunk`` has the
        wrong type.
    ValueError
        If the shapes, dtypes or devices do not match, a key is out of range, ``scale`` or ``chunk`` is out of
        range, ``method`` is unknown, or ``method="kernel"`` is asked of tensors it cannot run on.

    References
    ----------
    - A. Vaswani et al., "Attention Is All You Need", 2017, arXiv:1706.03762 (scaled dot-product attention).

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 6, 4, generator=g) for _ in range(3))
    >>> causal = torch.tensor([[j if j <= i else -1 for j in range(6)] for i in range(6)])
    >>> full = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    >>> all(bool(torch.allclose(neighbour_attention(q, k, v, causal, method=path), full, atol=1e-6))
    ...     for path in ("kernel", "gather", "dense"))
    True
    >>> last = neighbour_attention(q[:, :, -1:], k, v, causal[-1:])  # one query (a decode step), all six keys
    >>> bool(torch.allclose(last, full[:, :, -1:], atol=1e-6))
    True
    >>> neighbour_attention(q, k, v, torch.full((6, 1), -1))[0, 0, 0].tolist()  # no keys: 0
    [0.0, 0.0, 0.0, 0.0]
    """
    _check_qkv(q, k, v)
    b, h, m, d = q.shape
    n = k.shape[2]
    keys4 = _check_keys(keys, b, h, m, q.device)
    bias = _check_bias(bias, keys, q.device)
    scale = 1.0 / math.sqrt(d) if scale is None else check_real("scale", scale, 0.0, low_open=True)
    if chunk is not None:
        chunk = check_int("chunk", chunk, 1)
    validate = check_bool("validate", validate)
    method = check_choice("method", method, METHODS)
    kernel = _kernel_runs(q, k, v, bias)
    if method == "kernel" and not kernel:
        recording = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
        raise ValueError(
            f"method: 'kernel' runs on CPU float32 or float64 tensors with no gradient to record, got "
            f"{q.dtype} on {q.device}{', recording gradients' if recording else ''}"
        )
    path = resolved_method(n, keys4.shape[-1], method, kernel)
    if (validate or path == "kernel") and keys4.numel() and not bool(((keys4 >= -1) & (keys4 < n)).all()):
        raise ValueError(f"keys: expected key indices in [0, {n - 1}] or -1 (padding)")
    if path == "kernel":
        return _kernel(q, k, v, keys4, bias, scale)
    if path == "dense":
        return _dense(q, k, v, keys4, bias, scale)
    if chunk is None:
        per_row = b * (k.shape[1] if keys4.shape[1] == 1 else h) * keys4.shape[-1] * d  # gathered elements per query
        chunk = max(1, (GATHER_BUDGET if q.device.type == "cpu" else GATHER_BUDGET_DEVICE) // max(per_row, 1))
    if chunk >= m:
        return _gather(q, k, v, keys4, bias, scale)
    k, v = k.contiguous(), v.contiguous()  # once, not per block (the blocks view k and v as (batch, heads n, d))
    # blocks of queries (not single tokens): the gathered keys and values stay within the budget
    return torch.cat(
        [
            _gather(
                q[:, :, s : s + chunk],
                k,
                v,
                keys4[..., s : s + chunk, :],
                None if bias is None else bias[..., s : s + chunk, :],
                scale,
            )
            for s in range(0, m, chunk)
        ],
        dim=2,
    )


@njit(parallel=True, cache=True, fastmath={"reassoc", "contract", "nsz"})
def _listed(q, k, v, keys, bias, has_bias, scale, out):  # pragma: no cover - compiled
    """``out[b, h, i] = softmax_j(q[b, h, i] . k[b, h // g, keys[b, h, i, j]] scale + bias[...]) v[...]`` over the
    ``j`` with ``keys >= 0`` (the lists of batch row or head 0 where they are shared); two passes over each list,
    the scores kept in a buffer of ``K``."""
    batch, heads, n_q, d = q.shape
    groups = heads // k.shape[1]
    width = keys.shape[3]
    one_row, one_head = keys.shape[0] == 1, keys.shape[1] == 1
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
                if keys[bi, hi, i, j] >= 0:
                    key = k[b, hk, keys[bi, hi, i, j]]
                    s = 0.0
                    for c in range(d):
                        s += row[c] * key[c]
                    s *= scale
                    if has_bias:
                        s += bias[bi, hi, i, j]
                    scores[j] = s
                    top = max(top, s)
            acc[:] = 0.0
            if top > -np.inf:
                total = 0.0
                for j in range(width):
                    if keys[bi, hi, i, j] >= 0:
                        p = math.exp(scores[j] - top)
                        total += p
                        value = v[b, hk, keys[bi, hi, i, j]]
                        for c in range(acc.shape[0]):
                            acc[c] += p * value[c]
                for c in range(acc.shape[0]):
                    acc[c] /= total
            out[b, h, i] = acc


@njit(parallel=True, cache=True, fastmath={"reassoc", "contract", "nsz"})
def _shared_lists(q, k, v, keys, scale, out):  # pragma: no cover - compiled
    """:func:`_listed` for lists shared by the heads (``keys``: ``(batch or 1, 1, m, K)``) and no bias: one task per
    key head and block of queries, each listed key and value row read once for the query heads of its group (GQA
    reads each row ``heads / kv_heads`` times in :func:`_listed`); the dot products and the weighted values in the
    inputs' dtype, the softmax's maximum and sum in float64."""
    batch, heads, n_q, d = q.shape
    kv = k.shape[1]
    groups = heads // kv
    width = keys.shape[3]
    dv = v.shape[3]
    one_row = keys.shape[0] == 1
    blocks = (n_q + QUERY_BLOCK - 1) // QUERY_BLOCK
    for task in prange(batch * kv * blocks):
        b = task // (kv * blocks)
        hk = (task // blocks) % kv
        bi = 0 if one_row else b
        scores = np.empty((groups, width), dtype=q.dtype)
        acc = np.empty((groups, dv), dtype=q.dtype)
        top = np.empty(groups, dtype=np.float64)
        total = np.empty(groups, dtype=np.float64)
        for i in range((task % blocks) * QUERY_BLOCK, min(n_q, (task % blocks + 1) * QUERY_BLOCK)):
            top[:] = -np.inf
            for j in range(width):
                kj = keys[bi, 0, i, j]
                if kj >= 0:
                    key = k[b, hk, kj]
                    for g in range(groups):
                        row = q[b, hk * groups + g, i]
                        s = row[0] * key[0]
                        for c in range(1, d):
                            s += row[c] * key[c]
                        scaled = s * scale
                        scores[g, j] = scaled
                        top[g] = max(top[g], scaled)
            acc[:] = 0
            total[:] = 0.0
            for j in range(width):
                kj = keys[bi, 0, i, j]
                if kj >= 0:
                    value = v[b, hk, kj]
                    for g in range(groups):
                        p = math.exp(scores[g, j] - top[g])
                        total[g] += p
                        scores[g, j] = p  # the weight in the inputs' dtype
                        weight = scores[g, j]
                        row_acc = acc[g]
                        for c in range(dv):
                            row_acc[c] += weight * value[c]
            for g in range(groups):
                if top[g] > -np.inf:
                    inverse = 1.0 / total[g]
                    for c in range(dv):
                        out[b, hk * groups + g, i, c] = acc[g, c] * inverse
                else:
                    out[b, hk * groups + g, i, :] = 0


def _in_place(t: torch.Tensor) -> np.ndarray:
    """Keys or values ``t`` as a C-contiguous array on their memory: a contiguous tensor as it is; the first ``n``
    positions of a contiguous ``(batch, heads, N, d)`` tensor (a static cache's filled slots) widened back to all
    ``N`` (the kernel reads the listed positions only, all below ``n``; never the queries, whose shape it reads);
    anything else copied."""
    t = t.detach()
    if t.is_contiguous():
        return t.numpy()
    b, h, _, d = t.shape
    s0, s1, s2, s3 = t.stride()
    rows = s1 // d if d else 0
    if s3 == 1 and s2 == d and rows >= t.shape[2] and s1 == rows * d and (b == 1 or s0 == h * s1):
        end = t.storage_offset() + b * h * s1  # elements up to the end of the widened view
        if end * t.element_size() <= t.untyped_storage().nbytes():
            return t.as_strided((b, h, rows, d), (h * s1, s1, d, 1)).numpy()
    return t.contiguous().numpy()


def _kernel(q, k, v, keys, bias, scale):
    """The kernel path: :func:`_listed` on the tensors' memory (copied only where not contiguous, a prefix of the
    positions read in place)."""
    b, h, m, _ = q.shape
    out = torch.empty(b, h, m, v.shape[3], dtype=q.dtype)
    arrays = [q.detach().contiguous().numpy(), _in_place(k), _in_place(v)]  # the kernel reads q's shape
    if bias is None and keys.shape[1] == 1 and q.shape[3]:  # lists shared by the heads: a row read once per key head
        _shared_lists(*arrays, keys.contiguous().numpy(), scale, out.numpy())
        return out
    extra = np.zeros((1, 1, 1, 1), arrays[0].dtype) if bias is None else bias.detach().to(q.dtype).contiguous().numpy()
    _listed(*arrays, keys.contiguous().numpy(), extra, bias is not None, scale, out.numpy())
    return out


def _gather(q, k, v, keys, bias, scale):
    """The gather path for the queries of ``q`` (``m`` of them; ``keys``, ``bias``: ``(batch or 1, heads or 1, m,
    K)``) against all ``n`` keys and values."""
    b, h, m, d = q.shape
    hk, n, dv = k.shape[1], k.shape[2], v.shape[3]
    acc = torch.promote_types(q.dtype, torch.float32)  # scores and softmax in at least float32, as SDPA
    pad = keys < 0
    width = keys.shape[-1]
    shared = keys.shape[1] == 1  # one list per query for every head: gather once per kv head
    lists = hk if shared else h
    kv_head = torch.arange(lists, device=q.device) // (1 if shared else h // hk)
    # one index_select over the flattened (batch, head, position) axis moves whole rows of d values
    flat = keys.clamp(min=0) + kv_head[:, None, None] * n
    if keys.shape[0] == 1:  # lists shared by the batch rows
        index = flat.expand(1, lists, m, width).reshape(-1)
        kg = k.reshape(b, hk * n, d).index_select(1, index).view(b, lists, m, width, d)
        vg = v.reshape(b, hk * n, dv).index_select(1, index).view(b, lists, m, width, dv)
    else:
        index = (flat + torch.arange(b, device=q.device)[:, None, None, None] * (hk * n)).reshape(-1)
        kg = k.reshape(b * hk * n, d).index_select(0, index).view(b, lists, m, width, d)
        vg = v.reshape(b * hk * n, dv).index_select(0, index).view(b, lists, m, width, dv)
    if shared:  # broadcast over the query heads of each kv head's group
        qs = (q.to(acc) * scale).reshape(b, hk, h // hk, m, d)
        scores = torch.einsum("bcgmd,bcmjd->bcgmj", qs, kg.to(acc)).reshape(b, h, m, width)
    else:
        scores = torch.einsum("bhmd,bhmjd->bhmj", q.to(acc) * scale, kg.to(acc))
    if bias is not None:
        scores = scores + bias.to(acc)
    scores = scores.masked_fill(pad, torch.finfo(acc).min)
    probs = torch.softmax(scores, dim=-1).masked_fill(pad, 0.0)  # finite fill: an all-padding row is 0, not NaN
    if shared:
        out = torch.einsum("bcgmj,bcmjd->bcgmd", probs.view(b, hk, h // hk, m, width), vg.to(acc))
        return out.reshape(b, h, m, dv).to(q.dtype)
    return torch.einsum("bhmj,bhmjd->bhmd", probs, vg.to(acc)).to(q.dtype)


def _dense(q, k, v, keys, bias, scale):
    """``softmax(q k^T scale + log C) v`` with ``C[i, j]`` the sum of ``exp(bias)`` (1 without a bias) over the
    slots where ``j`` is listed for ``i``; rows without a key give 0."""
    b, h, m, d = q.shape
    hk, n, dv = k.shape[1], k.shape[2], v.shape[3]
    rows, lists = keys.shape[0], keys.shape[1]
    groups = h // hk
    acc = torch.promote_types(q.dtype, torch.float32)  # scores and softmax in at least float32, as SDPA
    present = keys >= 0
    flat = torch.arange(m, device=q.device)[:, None] * n + keys.clamp(min=0)
    flat = flat + torch.arange(rows * lists, device=q.device).view(rows, lists, 1, 1) * (m * n)
    shift = None
    if bias is None:
        weight = present.to(acc)
    else:  # exp(bias - its row maximum): no overflow; log C adds the maximum back
        scaled = bias.to(acc).masked_fill(~present, float("-inf"))
        shift = scaled.amax(-1, keepdim=True).clamp(min=torch.finfo(acc).min)
        weight = torch.exp(scaled - shift)
    count = torch.zeros(rows * lists * m * n, device=q.device, dtype=acc)
    count = count.index_put((flat.reshape(-1),), weight.reshape(-1), accumulate=True).view(rows, lists, m, n)
    # the (m, n) bias is built once per call and broadcast over the batch (or the heads): log C, or the most
    # negative finite value for absent pairs (exp underflows to 0 next to any present key); a row without keys gets
    # uniform weights, and its output (and so its gradient) is zeroed afterwards
    listed = count > 0
    log_c = torch.log(count.masked_fill(~listed, 1.0))  # log of 1 where absent: no 0 / 0 in a bias's gradient
    log_c = (log_c if shift is None else log_c + shift).masked_fill(~listed, torch.finfo(acc).min)
    has_key = present.any(-1, keepdim=True).to(acc)
    # one product per kv head with its query heads stacked along the rows: k and v are never repeated
    per_head = (rows, hk, groups) if lists == h else (rows, 1, 1)
    scores = torch.matmul(q.to(acc).reshape(b, hk, groups * m, d) * scale, k.to(acc).transpose(-1, -2))
    scores = scores.view(b, hk, groups, m, n) + log_c.view(*per_head, m, n)
    probs = torch.softmax(scores, dim=-1).view(b, hk, groups * m, n)
    out = torch.matmul(probs, v.to(acc)).view(b, hk, groups, m, dv) * has_key.view(*per_head, m, 1)
    return out.reshape(b, h, m, dv).to(q.dtype)


def keys_table(indptr: np.ndarray, indices: np.ndarray, n: int) -> np.ndarray:
    """CSR rows (row ``i``: ``indices[indptr[i]:indptr[i+1]]``) as an ``(n, K)`` int64 table padded with ``-1``,
    ``K`` the longest row (at least 1)."""
    counts = np.diff(indptr)
    width = max(1, int(counts.max()) if counts.size else 1)
    table = np.full((n, width), -1, dtype=np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    slots = np.arange(indices.size, dtype=np.int64) - np.repeat(indptr[:-1], counts)
    table[rows, slots] = indices
    return table


def pattern_keys(pattern, layer: int, device=None) -> torch.Tensor:
    """The padded key table ``(n, K)`` of ``pattern``'s layer ``layer``, for :func:`neighbour_attention`.

    Row ``i`` lists, in increasing order, the keys ``j`` with ``pattern.adjacency(layer)[i, j]`` set (query ``i``
    attends to key ``j``), then ``-1``; ``K`` is the longest row.

    Parameters
    ----------
    pattern : receptive.patterns.base.Pattern
        Anything with ``.n`` and ``.adjacency(layer)`` (a scipy sparse matrix).
    layer : int
        The layer, ``>= 1``.
    device : torch.device or str or None, default None
        Where the table lives (``None``: the CPU).

    Returns
    -------
    torch.Tensor
        int64 ``(n, K)``.

    Raises
    ------
    TypeError
        If ``pattern`` has no ``.n`` or ``.adjacency``, or ``layer`` is not an integer.
    ValueError
        If ``layer < 1``.

    Examples
    --------
    >>> from receptive.patterns.causal_variants import make_variant
    >>> pattern_keys(make_variant("dilated", 8, 2, True, seed=0), 1)[3:5].tolist()
    [[1, 2, 3, -1], [0, 2, 3, 4]]
    """
    if not hasattr(pattern, "adjacency") or not hasattr(pattern, "n"):
        raise TypeError(f"pattern: expected a receptive pattern (.n, .adjacency), got {type(pattern).__name__}")
    layer = check_int("layer", layer, 1)
    adj = pattern.adjacency(layer).tocsr()
    adj.sort_indices()
    table = keys_table(adj.indptr.astype(np.int64), adj.indices.astype(np.int64), pattern.n)
    return torch.from_numpy(table).to(device if device is not None else "cpu")


@functools.lru_cache(maxsize=256)
def _seeded_keys(variant: str, n: int, w: int, causal: bool, seed: int, layer: int, device: torch.device):
    return pattern_keys(make_variant(variant, n, w, causal, seed=seed), layer, device)


def variant_window(n: int, w: int) -> int:
    """The window a causal-variant pattern uses at length ``n``: ``min(w, n)`` (the patterns take ``w <= n``).

    Parameters
    ----------
    n : int
        Sequence length, ``>= 1``.
    w : int
        The requested window, ``>= 1``.

    Returns
    -------
    int
        ``min(w, n)``.

    Raises
    ------
    TypeError
        If ``n`` or ``w`` is not an integer.
    ValueError
        If ``n`` or ``w`` is below 1.

    Examples
    --------
    >>> variant_window(8, 4), variant_window(3, 4)
    (4, 3)
    """
    n, w = check_int("n", n, 1), check_int("w", w, 1)
    return min(w, n)


class PatternAttention(AttentionProjections):
    """Attention over the key lists of a causal-variant pattern (:func:`receptive.patterns.causal_variants.make_variant`
    ``(variant, n, min(w, n), causal, seed)``, layer ``layer``), every head on the layer's union of keys.

    Pattern semantics: one softmax per head over all the keys the pattern's layer lists (its heads, and for the
    ``+swa`` forms the sliding window, merged into one list; no gates), so the model's reachability through ``L``
    such layers is exactly the pattern's. In eval mode the pattern has seed ``seed``; in training every forward of
    a random variant (``sa-ms``, ``kleinberg``) draws a fresh pattern seed from torch's global generator, as SA
    draws fresh permutations (``dilated`` is deterministic and draws nothing). ``last_keys`` holds the table used.

    Parameters
    ----------
    d_model : int
        Model width, a multiple of ``heads``.
    heads : int
        Query heads.
    w : int
        The pattern's window (clipped to ``n`` per forward).
    variant : str
        One of :func:`receptive.patterns.causal_variants.variant_names`.
    kv_heads : int or None, default None
        Key/value heads (GQA), a divisor of ``heads``; ``None`` means ``heads``.
    causal : bool, default False
        Whether a query attends only to keys at or before its own position.
    rope : bool, default True
        Whether to apply :func:`gpu.attention.projections.rotary` to q and k.
    seed : int, default 0
        The pattern's seed in eval mode, ``>= 0``.
    layer : int, default 1
        The pattern's layer whose keys are attended, ``>= 1``.

    Raises
    ------
    TypeError
        If ``variant`` is not a string or an integer argument is not an integer.
    ValueError
        If ``variant`` is unknown or an integer argument is out of range.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> layer = PatternAttention(8, 2, 2, variant="dilated", causal=True).eval()
    >>> tuple(layer(torch.randn(1, 8, 8)).shape)
    (1, 8, 8)
    >>> layer.last_keys[4].tolist()
    [0, 2, 3, 4]
    """

    def __init__(self, d_model, heads, w, *, variant, kv_heads=None, causal=False, rope=True, seed=0, layer=1):
        super().__init__(d_model, heads, kv_heads, w, causal, rope)
        self.variant = check_choice("variant", variant, variant_names())
        self.seed, self.layer = check_int("seed", seed, 0), check_int("layer", layer, 1)
        self.random = not variant.startswith("dilated")
        self.last_keys: torch.Tensor | None = None

    def keys_for(self, n: int, device) -> torch.Tensor:
        w = variant_window(n, self.w)
        seed = self.seed
        if self.training and self.random:
            seed = int(torch.randint(0, 2**31 - 1, (1,)).item())
            return pattern_keys(make_variant(self.variant, n, w, self.causal, seed=seed), self.layer, device)
        return _seeded_keys(self.variant, n, w, self.causal, seed, self.layer, torch.device(device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x)
        self.last_keys = self.keys_for(x.shape[1], q.device)
        return self.merge(neighbour_attention(q, k, v, self.last_keys, validate=False))
