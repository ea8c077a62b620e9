"""The keys each query position reads in the position-only causal patterns of :mod:`gpu.attention.generation_patterns`:
SA's band among the past keys in a permutation over ``max_length``, the window, the sink, their unions and
multi-scale SA's per-head bands. Each row depends on the positions before the query only.

References
----------
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
- Xiao et al. (2024). Efficient streaming language models with attention sinks. arXiv 2309.17453.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
from numba import njit, prange

from gpu.attention.functional import inverse_permutation
from receptive.patterns.multiscale import block_permutation, default_blocks
from receptive.permutations import layer_permutation
from receptive.windows import window_offsets


@lru_cache(maxsize=256)
def _sigma_rank(max_length: int, seed: int, block: int) -> torch.Tensor:
    """``rank[j]``: the permuted position of token ``j`` in the layer's permutation over ``max_length``."""
    return _sigma_tables(max_length, seed, block)[0]


@lru_cache(maxsize=256)
def _sigma_tables(max_length: int, seed: int, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The layer's permutation over ``max_length`` both ways: ``rank[j]`` (token ``j``'s permuted position) and
    ``order[r]`` (the token at permuted position ``r``), drawn once per ``(max_length, seed, block)``."""
    perm = (
        layer_permutation(max_length, seed, 1) if block == max_length else block_permutation(max_length, block, seed, 1)
    )
    order = torch.from_numpy(perm).long()
    return inverse_permutation(order), order


def _sa_band_cached(positions: torch.Tensor, n_keys: int, w: int, max_length: int, seed: int, block: int):
    """:func:`sa_band` with the layer's permutation and its order taken from the cache."""
    rank, order = _sigma_tables(max_length, seed, block)
    return sa_band(positions, n_keys, w, rank, order=order)


def sa_band(
    positions: torch.Tensor, n_keys: int, w: int, sigma_rank: torch.Tensor, *, order: torch.Tensor | None = None
):
    """SA's band in generation form: the ``w`` slots around each query in the permuted order of the keys before it.

    Query ``i`` (an entry of ``positions``) ranks the keys ``0..i`` by ``sigma_rank`` and takes those whose rank lies
    within ``-left..right`` of its own (``receptive.window_offsets(w, False)``), clipped at the ends.

    Parameters
    ----------
    positions : torch.Tensor
        ``(q,)`` int64 query positions, each below ``n_keys``.
    n_keys : int
        Keys present (``0..n_keys-1``).
    w : int
        Band slots, at least 1.
    sigma_rank : torch.Tensor
        ``(>= n_keys,)`` int64, the permuted position of each token (distinct values).
    order : torch.Tensor, optional
        ``argsort(sigma_rank)`` over all of it, where the caller keeps it: a few queries (a decode step) then walk
        that order, skipping the tokens after each query, instead of sorting the ``n_keys`` present (``O(n log n)``
        per call). The keys are the same either way.

    Returns
    -------
    idx, valid : torch.Tensor
        ``(q, w)`` key indices and which slots hold a key; every valid index is at most the query's position.

    Examples
    --------
    >>> import torch
    >>> idx, valid = sa_band(torch.tensor([3]), 4, 3, torch.tensor([3, 0, 2, 1]))  # order 1, 3, 2, 0
    >>> idx[valid].tolist()
    [1, 3, 2]

    References
    ----------
    Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
    """
    left, right = window_offsets(w, False)
    length = len(sigma_rank)
    # a query walks about w length / (its position) slots of the whole order, at most length: cheaper than sorting
    # the present keys when the queries are few
    if order is not None and len(positions) * length <= 16 * n_keys * max(1, n_keys.bit_length()):
        slot_of = sigma_rank if _is_permutation_rank(sigma_rank, order) else inverse_permutation(order)
    else:
        order = torch.argsort(sigma_rank[:n_keys])  # tokens in permuted order
        slot_of = inverse_permutation(order)  # each token's column in that order
    idx = np.zeros((len(positions), w), dtype=np.int64)
    valid = np.zeros((len(positions), w), dtype=np.bool_)
    _band_walk(positions.to(torch.int64).contiguous().numpy(), slot_of.numpy(), order.numpy(), left, right, idx, valid)
    return torch.from_numpy(idx), torch.from_numpy(valid)


def _is_permutation_rank(sigma_rank: torch.Tensor, order: torch.Tensor) -> bool:
    """Whether ``sigma_rank`` (``order`` its argsort) holds ``0..n-1``: its least value 0 and its largest ``n - 1``
    (``n`` distinct integers), so it is its own order's inverse."""
    return (
        len(order) == len(sigma_rank) > 0
        and int(sigma_rank[order[0]]) == 0
        and int(sigma_rank[order[-1]]) == len(order) - 1
    )


@njit(parallel=True, cache=True)
def _band_walk(positions, slot_of, order, left, right, idx, valid):  # pragma: no cover - compiled
    """From each query's column walk left, then right, through the permuted order, keeping the first ``left`` and
    ``right`` keys not after the query: ``O(w n / i)`` steps for query ``i`` on average."""
    for a in prange(positions.shape[0]):
        p = positions[a]
        idx[a, left] = p
        valid[a, left] = True
        found, s = 0, slot_of[p] - 1
        while found < left and s >= 0:
            if order[s] <= p:
                found += 1
                idx[a, left - found] = order[s]
                valid[a, left - found] = True
            s -= 1
        found, s = 0, slot_of[p] + 1
        while found < right and s < order.shape[0]:
            if order[s] <= p:
                found += 1
                idx[a, left + found] = order[s]
                valid[a, left + found] = True
            s += 1


def window(positions: torch.Tensor, w: int):
    """The causal sliding window: keys ``i-w+1..i`` of each query ``i``.

    Parameters
    ----------
    positions : torch.Tensor
        ``(q,)`` int64 query positions.
    w : int
        Window size, at least 1.

    Returns
    -------
    idx, valid : torch.Tensor
        ``(q, w)`` key indices and which hold a key.

    Examples
    --------
    >>> idx, valid = window(torch.tensor([1]), 3)
    >>> idx[valid].tolist()
    [0, 1]

    References
    ----------
    Beltagy, Peters & Cohan (2020). Longformer. arXiv 2004.05150.
    """
    idx = positions[:, None] - w + 1 + torch.arange(w)[None, :]
    return idx.clamp(min=0), idx >= 0


def with_sink(idx: torch.Tensor, valid: torch.Tensor):
    """Key 0 added to each row (the attention sink of StreamingLLM), counted once.

    The rows are key sets (no key listed twice among the valid entries), as the window and SA's band are, so the only
    possible repeat is key 0 itself: it is switched off where the row holds it, without sorting the row.

    Parameters
    ----------
    idx, valid : torch.Tensor
        ``(..., K)`` key indices and which hold a key, each key at most once per row.

    Returns
    -------
    idx, valid : torch.Tensor
        ``(..., K + 1)``, key 0 first.

    Examples
    --------
    >>> idx, valid = with_sink(*window(torch.tensor([0, 5]), 2))
    >>> [i[v].tolist() for i, v in zip(idx, valid)]
    [[0], [0, 4, 5]]

    References
    ----------
    Xiao et al. (2024). Efficient streaming language models with attention sinks. arXiv 2309.17453.
    """
    idx_with_sink = torch.cat([torch.zeros_like(idx[..., :1]), idx], -1)
    return idx_with_sink, torch.cat([torch.ones_like(valid[..., :1]), valid & (idx != 0)], -1)


def union_with_window(band, positions: torch.Tensor, w: int, *, sink: bool = False):
    """The causal window of ``w`` keys (and key 0 with ``sink``) and a key set, each key counted once.

    The window is contiguous, so a band key it holds is found by comparing positions, without sorting the rows: the
    band's entry is switched off.

    Parameters
    ----------
    band : tuple of torch.Tensor
        ``(q, K)`` key indices and which hold a key, each key at most once per row and none after its query.
    positions : torch.Tensor
        ``(q,)`` int64 query positions.
    w : int
        Window size, at least 1.
    sink : bool, default False
        Key 0 joins the window (:func:`with_sink`).

    Returns
    -------
    idx, valid : torch.Tensor
        ``(q, w + K)`` (``w + 1 + K`` with ``sink``): the window's columns, then the band's.

    Examples
    --------
    >>> band = (torch.tensor([[0, 2, 3]]), torch.tensor([[True, True, True]]))
    >>> idx, valid = union_with_window(band, torch.tensor([3]), 2)
    >>> idx[valid].tolist()
    [2, 3, 0]
    """
    idx, valid = band
    local = with_sink(*window(positions, w)) if sink else window(positions, w)
    held = idx > positions[:, None] - w
    if sink:
        held |= idx == 0
    return torch.cat([local[0], idx], -1), torch.cat([local[1], valid & ~held], -1)


def sa_ms_blocks(max_length: int, w: int) -> list[int]:
    """Multi-scale SA's block sizes over ``max_length``: ``w, w^2, ...`` while they divide it, then ``max_length``.

    Parameters
    ----------
    max_length : int
        The longest sequence, at least 2.
    w : int
        Band slots per head.

    Returns
    -------
    list of int
        Increasing block sizes; head ``h`` uses ``blocks[h % len(blocks)]``.

    Examples
    --------
    >>> sa_ms_blocks(8192, 64)
    [64, 4096, 8192]
    """
    return default_blocks(max_length, w) if w >= 2 else [max_length]


def position_keys(
    method: str, positions: torch.Tensor, n_keys: int, budget: int, heads: int, seed: int, max_length: int
):
    """The keys of each query of a position-only method (every one but MoBA and top-k), per head.

    Parameters
    ----------
    method : str
        ``swa``, ``swa+sink``, ``sa``, ``sa+sink``, ``sa+swa-union``, ``swa+sink+sa``, ``sa-ms`` or ``exact``.
    positions : torch.Tensor
        ``(q,)`` int64 query positions, below ``n_keys``.
    n_keys : int
        Keys present.
    budget : int
        Keys per query (the budget), at least 1.
    heads : int
        Attention heads (``sa-ms`` gives each its scale).
    seed : int
        The layer's seed.
    max_length : int
        The length SA's permutations are drawn over, at least ``n_keys``.

    Returns
    -------
    idx, valid : torch.Tensor
        ``(heads, q, K)`` key indices and which hold a key (``K`` depends on the method).

    Raises
    ------
    ValueError
        If ``method`` is data-dependent, or ``sa+swa`` (two softmaxes, not one key set).

    Examples
    --------
    >>> idx, valid = position_keys("swa+sink", torch.tensor([9]), 10, 3, 1, 0, 16)
    >>> idx[valid].tolist()
    [0, 8, 9]
    """
    q = len(positions)
    if method == "exact":
        idx = torch.arange(n_keys).expand(q, n_keys)
        parts = (idx, idx <= positions[:, None])
    elif method == "swa":
        parts = window(positions, budget)
    elif method == "swa+sink":
        parts = with_sink(*window(positions, max(1, budget - 1)))
    elif method == "sa":
        parts = _sa_band_cached(positions, n_keys, budget, max_length, seed, max_length)
    elif method == "sa+sink":
        parts = with_sink(*_sa_band_cached(positions, n_keys, max(1, budget - 1), max_length, seed, max_length))
    elif method == "sa+swa-union":
        half = max(1, budget // 2)
        parts = union_with_window(
            _sa_band_cached(positions, n_keys, half, max_length, seed, max_length), positions, half
        )
    elif method == "swa+sink+sa":
        shortcuts = max(1, budget // 4)
        band = _sa_band_cached(positions, n_keys, shortcuts, max_length, seed, max_length)
        parts = union_with_window(band, positions, max(1, budget - shortcuts - 1), sink=True)
    elif method == "sa-ms":
        blocks = sa_ms_blocks(max_length, budget)
        per_block = [_sa_band_cached(positions, n_keys, budget, max_length, seed, b) for b in blocks]
        idx = torch.stack([per_block[h % len(blocks)][0] for h in range(heads)])
        return idx, torch.stack([per_block[h % len(blocks)][1] for h in range(heads)])
    else:
        raise ValueError(f"method: {method!r} has no position-only key set")
    return parts[0].expand(heads, *parts[0].shape), parts[1].expand(heads, *parts[1].shape)
