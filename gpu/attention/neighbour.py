"""Attention over explicit key lists, so a model attends exactly the (query, key) pairs of any ``receptive`` pattern.

:func:`neighbour_attention` computes, for query ``i`` with key list ``K(i)`` (``keys[i]``, ``-1`` = padding),

    ``y_i = sum_{j in K(i)} softmax_j(q_i . k_j / sqrt(d)) v_j``

(a row whose list is all padding gives ``y_i = 0``, never NaN). :func:`pattern_keys` builds the padded table of a
pattern's layer from its adjacency (``pattern.adjacency(layer)[i, j]``: query ``i`` attends to key ``j``, see
:meth:`receptive.patterns.base.Pattern.adjacency`), so ``receptive.coverage`` analyses exactly the model's pairs.
:class:`PatternAttention` is the ``nn.Module`` (the projections and RoPE of
:class:`gpu.attention.modules.AttentionProjections`) that the training study (``analysis.training``) uses for the
causal variants (``sa-ms``, ``kleinberg``, ``dilated``, ``+swa``, ``-eq``): one softmax over the layer's union of keys,
every head the same. :class:`gpu.StochasticAttentionLayer` ``(variant=...)`` runs the same variants head by head instead
(:mod:`gpu.attention.variants`: banded ``sa-ms`` and ``dilated``, gathered ``kleinberg``). Memory and time
``O(batch heads n K d)``: the keys and values of every list are gathered.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from gpu.attention.projections import AttentionProjections
from gpu.validation import check_choice, check_int, check_qkv, check_real
from receptive.patterns.causal_variants import make_variant, variant_names

__all__ = ["PatternAttention", "neighbour_attention", "pattern_keys", "resolved_method", "variant_window"]


def _check_keys(keys, n: int, heads: int, device, validate: bool) -> torch.Tensor:
    if not isinstance(keys, torch.Tensor):
        raise TypeError(f"keys: expected an int64 tensor of shape (n, K) or (heads, n, K), got {type(keys).__name__}")
    if keys.dtype != torch.int64:
        raise TypeError(f"keys: expected dtype int64, got {keys.dtype}")
    if keys.dim() not in (2, 3) or keys.shape[-2] != n or (keys.dim() == 3 and keys.shape[0] != heads):
        raise ValueError(f"keys: expected shape ({n}, K) or ({heads}, {n}, K), got {tuple(keys.shape)}")
    if keys.device != device:
        raise ValueError(f"keys: expected a tensor on {device}, got one on {keys.device}")
    if validate and keys.numel() and not bool(((keys >= -1) & (keys < n)).all()):
        raise ValueError(f"keys: expected key indices in [0, {n - 1}] or -1 (padding)")
    return keys


METHODS = ("auto", "gather", "dense")


def resolved_method(n: int, width: int, method: str = "auto") -> str:
    """The path :func:`neighbour_attention` takes for ``n`` queries with key tables ``width`` wide.

    ``method`` itself, and for ``auto`` ``dense`` when ``n <= 32 width``, else ``gather``.

    Parameters
    ----------
    n : int
        The number of queries, ``>= 0``.
    width : int
        The width ``K`` of the key table, ``>= 0``.
    method : {"auto", "gather", "dense"}, default "auto"
        The requested path.

    Returns
    -------
    str
        ``"gather"`` or ``"dense"``.

    Raises
    ------
    TypeError
        If ``n`` or ``width`` is not an integer, or ``method`` is not a string.
    ValueError
        If ``method`` is not one of :data:`METHODS`, or ``n`` or ``width`` is negative.

    Examples
    --------
    >>> resolved_method(256, 8), resolved_method(257, 8), resolved_method(256, 8, "gather")
    ('dense', 'gather', 'gather')
    """
    method = check_choice("method", method, METHODS)
    n, width = check_int("n", n, 0), check_int("width", width, 0)
    if method != "auto":
        return method
    return "dense" if n <= 32 * width else "gather"


#: gathered elements (of k, and of v) per block of queries on the CPU, 16 MiB in float32: the block stays in cache
#: and memory is O(block K d) instead of O(n K d)
GATHER_BUDGET = 1 << 22
#: the same on an accelerator, where fewer, larger blocks keep the launches few (1 GiB in float32)
GATHER_BUDGET_DEVICE = 1 << 28


def neighbour_attention(q, k, v, keys: torch.Tensor, scale: float | None = None, validate: bool = True,
                        method: str = "auto", chunk: int | None = None):  # fmt: skip
    """``softmax(q_i . k_j * scale)`` over ``j`` in ``keys[i]`` (``-1`` = padding), applied to ``v``.

    ``q``: ``(batch, heads, n, d)``; ``k, v``: ``(batch, kv_heads, n, d)`` with ``kv_heads`` dividing ``heads`` (GQA:
    query head ``h`` reads kv head ``h // (heads / kv_heads)``); ``keys``: int64 ``(n, K)`` shared by the heads or
    ``(heads, n, K)`` per query head, on q's device. A key listed twice counts twice (:func:`pattern_keys` lists
    each key once). ``scale`` defaults to ``1 / sqrt(d)``. ``validate`` checks the key values (reads one boolean
    back from the device: pass ``False`` in a training loop with keys from :func:`pattern_keys`). Returns
    ``(batch, heads, n, d)``; rows with only padding are 0.

    ``method``: ``gather`` gathers the listed keys and values, ``chunk`` queries at a time (default: as many as
    :data:`GATHER_BUDGET` elements allow; memory ``O(chunk K d)`` per block); ``dense`` scatters the lists
    into an ``(n, n)`` count matrix ``C`` and computes ``softmax(q k^T scale + log C) v`` (``log 0 = -inf``: the
    same result, duplicates included, at ``O(n^2)`` cost through matrix products); ``auto`` takes ``dense`` when
    ``n <= 32 K`` (:func:`resolved_method`).

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, n, d)``, floating point.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)``, same dtype and device; ``kv_heads`` divides ``heads``.
    keys : torch.Tensor
        int64 ``(n, K)`` or ``(heads, n, K)`` on q's device: key indices in ``0..n-1``, ``-1`` = padding.
    scale : float or None, default None
        The scores' factor, ``> 0``; ``None``: ``1 / sqrt(d)``.
    validate : bool, default True
        Check that every key is in ``-1..n-1``.
    method : {"auto", "gather", "dense"}, default "auto"
        The path (see above).
    chunk : int or None, default None
        Queries per block of the gather path, ``>= 1``; ``None``: from :data:`GATHER_BUDGET`.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d)``; rows with only padding are 0.

    Raises
    ------
    TypeError
        If a tensor is missing, ``keys`` is not int64, or ``scale`` or ``chunk`` has the wrong type.
    ValueError
        If the shapes, dtypes or devices do not match, a key is out of range, or ``scale`` or ``chunk`` is out of
        range.

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
    >>> bool(torch.allclose(neighbour_attention(q, k, v, causal, method="gather"), full, atol=1e-6))
    True
    >>> bool(torch.allclose(neighbour_attention(q, k, v, causal, method="dense"), full, atol=1e-6))
    True
    >>> neighbour_attention(q, k, v, torch.full((6, 1), -1))[0, 0, 0].tolist()  # no keys: 0
    [0.0, 0.0, 0.0, 0.0]
    """
    check_qkv(q, k, v)
    b, h, n, d = q.shape
    hk = k.shape[1]
    keys = _check_keys(keys, n, h, q.device, validate)
    if scale is not None:
        scale = check_real("scale", scale, 0.0, low_open=True)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if chunk is not None:
        chunk = check_int("chunk", chunk, 1)
    if resolved_method(n, keys.shape[-1], method) == "dense":
        return _dense(q, k, v, keys, scale)
    if chunk is None:
        per_row = b * (hk if keys.dim() == 2 else h) * keys.shape[-1] * d  # gathered elements per query, k or v
        chunk = max(1, (GATHER_BUDGET if q.device.type == "cpu" else GATHER_BUDGET_DEVICE) // max(per_row, 1))
    if chunk >= n:
        return _gather(q, k, v, keys, scale)
    k, v = k.contiguous(), v.contiguous()  # once, not per block (the blocks view k and v as (batch, heads n, d))
    # blocks of queries (not single tokens): the gathered keys and values stay within the budget
    return torch.cat([_gather(q[:, :, s : s + chunk], k, v, keys[..., s : s + chunk, :], scale)
                      for s in range(0, n, chunk)], dim=2)  # fmt: skip


def _gather(q, k, v, keys, scale):
    """The gather path for the queries of ``q`` (``m`` of them, ``keys``: ``(m, K)`` or ``(heads, m, K)``) against all
    ``n`` keys and values."""
    b, h, m, d = q.shape
    hk, n = k.shape[1], k.shape[2]
    acc = torch.promote_types(q.dtype, torch.float32)  # scores and softmax in at least float32, as SDPA
    pad = keys < 0
    idx = keys.clamp(min=0)
    big = keys.shape[-1]
    if keys.dim() == 2:  # shared lists: gather once per kv head, broadcast over the query heads of its group
        g = h // hk
        # one index_select over the flattened (head, position) axis moves whole rows of d values (as gpu.attention)
        flat = (idx + torch.arange(hk, device=q.device)[:, None, None] * n).reshape(-1)
        kg = k.reshape(b, hk * n, d).index_select(1, flat).view(b, hk, m, big, d)
        vg = v.reshape(b, hk * n, d).index_select(1, flat).view(b, hk, m, big, d)
        qs = (q.to(acc) * scale).reshape(b, hk, g, m, d)
        scores = torch.einsum("bcgnd,bcnjd->bcgnj", qs, kg.to(acc)).reshape(b, h, m, big)
    else:  # per-head lists: every query head gathers from its kv head over the flattened (head, position) axis
        kv_head = torch.arange(h, device=q.device) // (h // hk)
        flat = (idx + kv_head[:, None, None] * n).reshape(-1)
        kg = k.reshape(b, hk * n, d).index_select(1, flat).view(b, h, m, big, d)
        vg = v.reshape(b, hk * n, d).index_select(1, flat).view(b, h, m, big, d)
        scores = torch.einsum("bhnd,bhnjd->bhnj", q.to(acc) * scale, kg.to(acc))
    scores = scores.masked_fill(pad, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1).masked_fill(pad, 0.0)  # finite fill: an all-padding row is 0, not NaN
    if keys.dim() == 2:
        out = torch.einsum("bcgnj,bcnjd->bcgnd", probs.view(b, hk, h // hk, m, big), vg.to(acc)).reshape(b, h, m, d)
        return out.to(q.dtype)
    return torch.einsum("bhnj,bhnjd->bhnd", probs, vg.to(acc)).to(q.dtype)


def _dense(q, k, v, keys, scale):
    """``softmax(q k^T scale + log C) v`` with ``C[i, j]`` the times ``j`` is listed for ``i``; empty rows give 0."""
    h, n = q.shape[1], q.shape[2]
    groups = h // k.shape[1]
    if groups > 1:
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    lead = keys.shape[:-2]
    rows = torch.arange(n, device=keys.device)[:, None].expand(keys.shape)
    flat = rows * n + keys.clamp(min=0)
    if lead:
        flat = flat + torch.arange(h, device=keys.device)[:, None, None] * (n * n)
    acc = torch.promote_types(q.dtype, torch.float32)  # scores and softmax in at least float32, as SDPA
    count = torch.zeros((*lead, n, n), device=q.device, dtype=acc)
    count.view(-1).index_put_((flat.reshape(-1),), (keys >= 0).reshape(-1).to(acc), accumulate=True)
    # the (n, n) bias is built once per call and broadcast over the batch: log C, or the most negative finite value
    # for absent pairs (exp underflows to 0 next to any present key); a row without keys gets uniform weights,
    # and its output (and so its gradient) is zeroed afterwards
    bias = torch.log(count).clamp(min=torch.finfo(acc).min)
    has_key = (count.sum(-1, keepdim=True) > 0).to(acc)
    probs = torch.softmax(torch.matmul(q.to(acc) * scale, k.to(acc).transpose(-1, -2)) + bias, dim=-1)
    return (torch.matmul(probs, v.to(acc)) * has_key).to(q.dtype)


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
