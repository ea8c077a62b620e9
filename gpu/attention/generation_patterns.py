"""Causal patterns in generation form: the keys of query position ``i`` among the keys ``0..i`` before it, chosen
without looking at any later token, so one decode step with a KV cache reads exactly what the full-sequence forward
gives that position.

A pattern whose row ``i`` depends on later tokens cannot decode incrementally: the keys cached at step ``i`` would
differ from those of the full forward. The window methods of :mod:`gpu.approx` in their causal form are such rows
for SWA, sinks, MoBA and top-k, and this module gives the same keys. The lab's causal SA (``sa-band``) is not: it takes
its band in a permutation of the ``n`` tokens present and drops the later ones, so a row changes as tokens arrive.
SA's generation form fixes both ends (Jin & Sui 2026 define SA by a per-layer permutation ``sigma``):

* ``sigma`` is drawn once per layer over a stated ``max_length`` (``receptive.layer_permutation(max_length, seed,
  1)``), and the tokens present keep their relative order in it;
* query ``i`` takes the band of ``w`` slots (``receptive.window_offsets(w, False)``: ``left`` before, ``right``
  after) around itself in the permuted order of the keys ``0..i``, clipped at the ends of that order. Every query
  past the first ``w`` tokens reads about ``w`` keys, not the ``(w + 1) / 2`` the lab's causal SA keeps.

Methods (:data:`GENERATION_METHODS`), ``m`` keys per query (per head):

* ``swa``: keys ``i-m+1..i``; ``swa+sink``: keys ``i-m+2..i`` and key 0 (StreamingLLM's sink);
* ``sa``: SA's band of ``m`` in generation form; ``sa+sink``: the band of ``m - 1`` and key 0;
* ``sa+swa``: the mean of the two paths, SA's band of ``m/2`` and the window of ``m/2`` (the gated SA+SWA with equal
  gates); ``sa+swa-union``: one softmax over the union of the two key sets;
* ``swa+sink+sa``: local, sink and random shortcuts in one softmax: the window of ``m - m/4 - 1`` keys, key 0 and
  SA's band of ``m/4`` (a quarter of the budget spent on shortcuts);
* ``sa-ms``: multi-scale SA: head ``h`` takes SA's band of ``m`` in a permutation drawn within blocks of
  ``b_{h mod s}`` positions (``receptive.patterns.multiscale.default_blocks(max_length, m)``: ``m, m^2, ...,
  max_length``), so every distance scale has shortcuts;
* ``moba``: MoBA's top 4 blocks of ``m/4`` keys over the cache (the earlier blocks scored by ``q . mean(k)``, the own
  block causal), as :func:`gpu.approx.families.clustering.moba`;
* ``top-k``: the ``m`` largest scores among the keys before the query (an oracle that reads every key).

What each keeps in the KV cache: ``swa``, ``swa+sink`` need only the last ``m`` keys (and key 0): a sliding cache
(transformers' ``DynamicCache(config)`` with ``sliding_window``, or the static sliding layers) would do; the
indices here address the full ``DynamicCache`` of the model. SA and every SA variant read keys anywhere in the past:
their saving is compute (``m`` keys per query), not memory. MoBA reads the block means of the whole past, top-k every
key.

How they are computed: the position methods and MoBA attend through :func:`gpu.attention.neighbour.neighbour_attention`
(on the CPU without autograd its numba kernel: ``O(m)`` keys read per query where they lie, no gathered copy; the
torch forms elsewhere); top-k and ``exact`` through PyTorch's fused SDPA with a boolean mask (``is_causal`` for an
exact prefill).

References
----------
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
- Beltagy, Peters & Cohan (2020). Longformer. arXiv 2004.05150.
- Xiao et al. (2024). Efficient streaming language models with attention sinks. ICLR, arXiv 2309.17453.
- Lu et al. (2025). MoBA: mixture of block attention for long-context LLMs. arXiv 2502.13189.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gpu.attention.generation_keys import position_keys
from gpu.attention.neighbour import neighbour_attention, scale_of
from gpu.validation import check_choice, check_int
from receptive.patterns.names import check_names

#: MoBA's blocks per query (the paper's top-k blocks; :func:`gpu.approx.families.clustering.moba`).
MOBA_BLOCKS = 4


@dataclass(frozen=True)
class GenerationMethod:
    """A causal pattern in generation form.

    Parameters
    ----------
    name : str
        The key in :data:`GENERATION_METHODS`.
    meaning : str
        What the budget ``m`` means.
    randomized : bool
        Whether the seed changes the keys.
    kv_cache : str
        What the method must keep in the KV cache.
    data_dependent : bool
        Whether the keys depend on the queries and keys (MoBA, top-k) rather than on positions alone.

    Examples
    --------
    >>> GENERATION_METHODS["sa"].randomized, GENERATION_METHODS["swa"].kv_cache
    (True, 'the last m keys')
    """

    name: str
    meaning: str
    randomized: bool
    kv_cache: str
    data_dependent: bool = False


GENERATION_METHODS: dict[str, GenerationMethod] = {
    g.name: g
    for g in (
        GenerationMethod("swa", "window of m keys", False, "the last m keys"),
        GenerationMethod("swa+sink", "window of m - 1 keys and key 0", False, "the last m - 1 keys and key 0"),
        GenerationMethod("sa", "SA's band of m keys among the past", True, "every key"),
        GenerationMethod("sa+sink", "SA's band of m - 1 keys and key 0", True, "every key"),
        GenerationMethod("sa+swa", "mean of SA's band of m/2 and the window of m/2", True, "every key"),
        GenerationMethod("sa+swa-union", "one softmax over SA's band of m/2 and the window of m/2", True, "every key"),
        GenerationMethod("swa+sink+sa", "window of m - m/4 - 1 keys, key 0 and SA's band of m/4", True, "every key"),
        GenerationMethod("sa-ms", "per head, SA's band of m in block permutations", True, "every key"),
        GenerationMethod("moba", "4 blocks of m/4 keys (block means routed)", False, "every key", True),
        GenerationMethod("top-k", "the m largest scores", False, "every key", True),
        GenerationMethod("exact", "every key before the query", False, "every key"),
    )
}
check_names(GENERATION_METHODS, "gpu.attention.GENERATION_METHODS")


def _rows_attention(q, k, v, keep):
    """Softmax of ``q`` over the keys ``keep`` (``(b, h, q, n)`` or ``(q, n)``) holds, by the fused SDPA kernel (grouped
    key heads read in place); a row without a key gives zeros."""
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep, enable_gqa=_grouped(q, k))
    return out.masked_fill(~keep.any(-1, keepdim=True), 0.0)


def moba_keys(q, k, positions, budget):
    """MoBA's keys over the cache: each query's own block (causal) and the top earlier blocks by ``q . mean(k_block)``.

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, q, d)`` queries.
    k : torch.Tensor
        ``(batch, kv_heads, n, d)`` keys, ``kv_heads`` dividing ``heads`` (query head ``h`` routes by the block means
        of key head ``h // (heads / kv_heads)``).
    positions : torch.Tensor
        ``(q,)`` the queries' positions.
    budget : int
        Keys per query: :data:`MOBA_BLOCKS` blocks of ``budget // MOBA_BLOCKS`` keys.

    Returns
    -------
    idx, valid : torch.Tensor
        ``(batch, heads, q, K)`` key indices and which are at or before the query.

    Examples
    --------
    >>> import torch
    >>> idx, valid = moba_keys(torch.ones(1, 1, 1, 2), torch.ones(1, 1, 8, 2), torch.tensor([7]), 4)
    >>> sorted(idx[valid].tolist())  # blocks of one key: the own block and the three best earlier ones
    [4, 5, 6, 7]

    References
    ----------
    Lu et al. (2025). MoBA: mixture of block attention for long-context LLMs. arXiv 2502.13189.
    """
    b, h, n, d = k.shape
    size = max(1, budget // MOBA_BLOCKS)
    nb = -(-n // size)
    block_of = torch.arange(n) // size
    means = torch.zeros(b, h, nb, d, dtype=k.dtype).index_add_(2, block_of, k)
    means = means / torch.bincount(block_of, minlength=nb).to(k.dtype)[:, None]
    if q.shape[1] != h:  # grouped keys: each query head routes by its key head's block means
        means = means.repeat_interleave(q.shape[1] // h, dim=1)
    gate = q @ means.transpose(-1, -2)
    own = positions // size
    gate = gate.masked_fill(torch.arange(nb) > own[:, None], float("-inf"))
    gate[..., torch.arange(len(positions)), own] = float("inf")
    chosen = gate.topk(min(MOBA_BLOCKS, nb), dim=-1).indices  # (b, h, q, blocks); a later block reads no key
    idx = (chosen[..., None] * size + torch.arange(size)).flatten(-2)
    return idx.clamp(max=n - 1), idx <= positions[:, None]


def _top_k_keep(q, k, positions, budget):
    """The ``budget`` largest scores among the keys before each query (ties with the ``budget``-th kept)."""
    causal = torch.arange(k.shape[2])[None, :] <= positions[:, None]
    b, h, n_q, d = q.shape
    kv = k.shape[1]  # grouped keys: the query heads of a key head stacked as rows of one product, k never repeated
    scores = (q.reshape(b, kv, h // kv * n_q, d) @ k.transpose(-1, -2)).view(b, h, n_q, -1)
    scores = (scores * scale_of(q)).masked_fill(~causal, float("-inf"))
    threshold = scores.topk(min(budget, k.shape[2]), dim=-1).values[..., -1:]
    return causal & (scores >= threshold)


def generation_attention(
    method: str, q, k, v, budget: int, seed: int = 0, max_length: int | None = None, trace=None
) -> torch.Tensor:
    """Causal attention of ``method`` for the last ``q.shape[2]`` positions of the ``k.shape[2]`` keys.

    A prefill passes every position (as many queries as keys), a decode step the new ones; a row reads the same keys
    in both, so incremental decoding equals the full forward.

    Parameters
    ----------
    method : str
        A name of :data:`GENERATION_METHODS`.
    q : torch.Tensor
        ``(batch, heads, q, d)`` queries of positions ``n - q .. n - 1``.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)`` keys and values of positions ``0 .. n - 1``, ``n >= q``; ``kv_heads`` divides
        ``heads`` (grouped-query attention: query head ``h`` reads key head ``h // (heads / kv_heads)``, the keys
        never repeated).
    budget : int
        Keys per query, at least 1.
    seed : int, default 0
        The seed of SA's permutations (the layer's own).
    max_length : int, optional
        The length SA's permutations are drawn over, at least ``n``; ``None``: ``n`` (a prefill that never decodes).
    trace : callable, optional
        ``trace(positions, keep)`` receives the query positions and a ``(q, n)`` bool of the keys some head of some
        batch row reads.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, q, d_v)``.

    Raises
    ------
    TypeError
        If ``budget``, ``seed`` or ``max_length`` is not an integer.
    ValueError
        If ``method`` is unknown, there are more queries than keys, ``budget < 1``, ``max_length`` is below ``n``, or
        the key heads do not divide the query heads.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx import exact_attention
    >>> q, k, v = torch.randn(3, 1, 2, 8, 4, dtype=torch.float64).unbind(0)
    >>> full = generation_attention("sa", q, k, v, 3, max_length=16)
    >>> last = generation_attention("sa", q[:, :, -1:], k, v, 3, max_length=16)  # one decode step
    >>> torch.allclose(full[:, :, -1:], last)
    True
    >>> torch.allclose(generation_attention("exact", q, k, v, 1), exact_attention(q, k, v, causal=True))
    True

    References
    ----------
    - Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
    - Lu et al. (2025). MoBA. arXiv 2502.13189.
    """
    check_choice("method", method, GENERATION_METHODS)
    budget = check_int("budget", budget, 1)
    seed = check_int("seed", seed, 0)
    _, h, n_q, _ = q.shape
    n = k.shape[2]
    if n_q > n:
        raise ValueError(f"q: {n_q} queries but only {n} keys (queries are the last positions of the keys)")
    if k.shape[1] < 1 or h % k.shape[1] or v.shape[1] != k.shape[1]:
        raise ValueError(
            f"k, v: {k.shape[1]} and {v.shape[1]} key heads; expected one number dividing the {h} query "
            "heads (grouped-query attention)"
        )
    max_length = n if max_length is None else check_int("max_length", max_length, 1)
    if n > max_length:
        raise ValueError(f"max_length: the sequence has {n} tokens, more than max_length = {max_length}")
    positions = torch.arange(n - n_q, n)
    if method == "exact":
        keep = torch.arange(n)[None, :] <= positions[:, None]
        if trace is not None:
            trace(positions, keep)
        if n_q == n:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=_grouped(q, k))
        return _rows_attention(q, k, v, keep)
    if method == "moba":
        idx, valid = moba_keys(q, k, positions, budget)
        if trace is not None:
            trace(positions, _keep_of(idx.flatten(0, 1), valid.flatten(0, 1), n))
        return neighbour_attention(q, k, v, idx.masked_fill(~valid, -1))
    if method == "top-k":
        keep = _top_k_keep(q, k, positions, budget)
        if trace is not None:
            trace(positions, keep.any(0).any(0))
        return _rows_attention(q, k, v, keep)
    if method == "sa+swa":
        half = max(1, budget // 2)
        parts = [position_keys(name, positions, n, half, h, seed, max_length) for name in ("sa", "swa")]
        if trace is not None:
            trace(
                positions,
                _keep_of(torch.cat([parts[0][0], parts[1][0]], -1), torch.cat([parts[0][1], parts[1][1]], -1), n),
            )
        return 0.5 * sum(_indexed(q, k, v, idx, valid) for idx, valid in parts)
    idx, valid = position_keys(method, positions, n, budget, h, seed, max_length)
    if trace is not None:
        trace(positions, _keep_of(idx, valid, n))
    return _indexed(q, k, v, idx, valid)


def _grouped(q, k) -> bool:
    """Whether the keys have fewer heads than the queries (SDPA's ``enable_gqa``)."""
    return k.shape[1] != q.shape[1]


def _keep_of(idx, valid, n):
    """``(heads, q, K)`` key sets as a ``(q, n)`` bool: the keys some head reads."""
    heads, q, width = idx.shape
    flat_idx = idx.permute(1, 0, 2).reshape(q, heads * width)
    flat_valid = valid.permute(1, 0, 2).reshape(q, heads * width).to(torch.int32)
    return torch.zeros(q, n, dtype=torch.int32).scatter_add_(1, flat_idx, flat_valid) > 0


def _indexed(q, k, v, idx, valid):
    """:func:`neighbour_attention` with per-head ``(heads, q, K)`` key sets shared by the batch (one copy when the
    heads share them)."""
    if idx.stride(0) == 0 and valid.stride(0) == 0:
        idx, valid = idx[:1], valid[:1]
    return neighbour_attention(q, k, v, idx.masked_fill(~valid, -1))


def mean_keys_read(method: str, n: int, budget: int, heads: int = 1, seed: int = 0, max_length: int | None = None):
    """The mean number of keys a query of a length-``n`` sequence reads per head, for the position-only methods: the
    attended (query, key) pairs per query and head, a key read by both paths of ``sa+swa`` counted twice.

    The compute side of a generation method. :func:`receptive.patterns.causal_variants.keys_per_query` counts
    something else: the distinct keys of a pattern's layer (the union over its heads) per query.

    Parameters
    ----------
    method : str
        A name of :data:`GENERATION_METHODS` but ``moba`` and ``top-k`` (their keys depend on the data; their
        budget is the keys per query).
    n : int
        Sequence length.
    budget : int
        Budget.
    heads : int, default 1
        Heads.
    seed : int, default 0
        Seed.
    max_length : int, optional
        SA's permutation length; ``None``: ``n``.

    Returns
    -------
    float
        Mean keys per query and head.

    Raises
    ------
    TypeError
        If ``method`` is not a string or an integer argument is not an integer.
    ValueError
        If ``method`` is unknown or data-dependent, ``n``, ``budget`` or ``heads`` is below 1, ``seed`` is negative, or
        ``max_length`` is below ``n``.

    Examples
    --------
    >>> mean_keys_read("swa", 4, 2)  # 1, 2, 2, 2
    1.75
    """
    check_choice("method", method, GENERATION_METHODS)
    n, budget = check_int("n", n, 1), check_int("budget", budget, 1)
    heads, seed = check_int("heads", heads, 1), check_int("seed", seed, 0)
    max_length = n if max_length is None else check_int("max_length", max_length, n)
    positions = torch.arange(n)
    if method == "sa+swa":
        a, b = (position_keys(x, positions, n, max(1, budget // 2), heads, seed, max_length) for x in ("sa", "swa"))
        return float((a[1].sum() + b[1].sum()) / (heads * n))
    _, valid = position_keys(method, positions, n, budget, heads, seed, max_length)
    return float(valid.sum() / (heads * n))
