"""Numba kernels for block-sparse layers and global tokens (slabs as in :mod:`graphs.kernels`).

A block-sparse layer splits the (possibly permuted) order into contiguous blocks; a query attends whole key blocks
listed for its block plus, inside its own block, every key (``diag = FULL``), the keys at or before it in that order
(``PREFIX``, the causal diagonal) or at or after it (``SUFFIX``, its transpose). One pass ORs each block's rows, one
ORs the listed blocks per query block, one writes every query: ``O(n W + nnz_blocks W)`` word operations, however
large the blocks (chunked attention, BigBird, LongNet's dilated segments, the Sparse Transformer's strided heads).

Global tokens: ``G`` positions that every query attends (keys) or that attend every key (queries); with an order
filter (causal ``+1``, its transpose ``-1``) a running OR over the sorted positions replaces the total:
``O(n W + G W)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

NONE, FULL, PREFIX, SUFFIX = 0, 1, 2, 3


@njit(parallel=True, cache=True)
def block_or(bits, out, perm, starts, indptr, indices, diag, accumulate):
    """``out[perm[p]] (|)= OR`` of the key blocks ``indices[indptr[b]:indptr[b+1]]`` of ``p``'s block ``b``, plus
    its own block per ``diag``. Block ``b`` holds permuted positions ``starts[b] .. starts[b+1]-1``; an empty
    ``perm`` is the identity. Rows are handled as 1-d views (vectorised loops).

    Parameters
    ----------
    bits : numpy.ndarray
        ``(n, W)`` uint64 slab, C-contiguous.
    out : numpy.ndarray
        Slab of the same shape, distinct from ``bits``, that receives the result.
    perm : numpy.ndarray
        int64 original index at each permuted position (empty: identity).
    starts : numpy.ndarray
        Block boundaries (``n_blocks + 1`` entries).
    indptr, indices : numpy.ndarray
        CSR lists of the key blocks of each query block.
    diag : int
        ``FULL``, ``PREFIX``, ``SUFFIX`` or ``NONE``: the keys of the own block.
    accumulate : bool
        OR into ``out`` instead of overwriting it.

    References
    ----------
    - M. Zaheer et al., "Big Bird: transformers for longer sequences", NeurIPS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> bits = np.array([[1], [2], [4], [8]], dtype=np.uint64); out = np.empty_like(bits)
    >>> empty = np.empty(0, dtype=np.int64)
    >>> block_or(bits, out, empty, np.array([0, 2, 4]), np.zeros(3, dtype=np.int64), empty, FULL, False)
    >>> out[:, 0].tolist()
    [3, 3, 12, 12]
    """
    n_words = bits.shape[1]
    n_blocks = starts.shape[0] - 1
    has_perm = perm.shape[0] > 0
    totals = np.zeros((n_blocks, n_words), dtype=np.uint64)
    for b in prange(n_blocks):
        total = totals[b]
        for p in range(starts[b], starts[b + 1]):
            row = bits[perm[p] if has_perm else p]
            for k in range(n_words):
                total[k] |= row[k]
    for b in prange(n_blocks):
        acc = np.zeros(n_words, dtype=np.uint64)
        for e in range(indptr[b], indptr[b + 1]):
            total = totals[indices[e]]
            for k in range(n_words):
                acc[k] |= total[k]
        if diag == FULL:
            total = totals[b]
            for k in range(n_words):
                acc[k] |= total[k]
        lo, hi = starts[b], starts[b + 1]
        step = -1 if diag == SUFFIX else 1
        first, last = (hi - 1, lo - 1) if diag == SUFFIX else (lo, hi)
        running = diag == PREFIX or diag == SUFFIX
        for p in range(first, last, step):
            idx = perm[p] if has_perm else p
            if running:
                row = bits[idx]
                for k in range(n_words):
                    acc[k] |= row[k]
            dst = out[idx]
            if accumulate:
                for k in range(n_words):
                    dst[k] |= acc[k]
            else:
                for k in range(n_words):
                    dst[k] = acc[k]


@njit(parallel=True, cache=True)
def _running_or_at(bits, sources, marks, order, tile):
    """Row ``j`` of the result: OR of ``bits[s]`` over the sources ``s <= marks[j]`` (``order > 0``) or
    ``s >= marks[j]`` (``order < 0``); ``sources`` and ``marks`` sorted ascending. One sweep per word tile."""
    n_words = bits.shape[1]
    g = marks.shape[0]
    res = np.empty((g, n_words), dtype=np.uint64)
    n_tiles = (n_words + tile - 1) // tile
    for t in prange(n_tiles):
        w0 = t * tile
        w1 = min(n_words, w0 + tile)
        run = np.zeros(w1 - w0, dtype=np.uint64)
        si = 0
        for step in range(g):
            j = step if order > 0 else g - 1 - step
            while si < sources.shape[0]:
                s = sources[si] if order > 0 else sources[sources.shape[0] - 1 - si]
                if (order > 0 and s > marks[j]) or (order < 0 and s < marks[j]):
                    break
                for k in range(w0, w1):
                    run[k - w0] |= bits[s, k]
                si += 1
            for k in range(w0, w1):
                res[j, k] = run[k - w0]
    return res


@njit(parallel=True, cache=True)
def _or_prefix_rows(out, run, positions, order):
    """``out[i] |= run[j]`` with ``j`` the last (``order > 0``: largest ``positions[j] <= i``) or first
    (``positions[j] >= i``) admissible global; nothing when none is."""
    n, n_words = out.shape
    g = positions.shape[0]
    for i in prange(n):
        j = np.searchsorted(positions, i, side="right") - 1 if order > 0 else np.searchsorted(positions, i, side="left")
        if 0 <= j < g:
            for k in range(n_words):
                out[i, k] |= run[j, k]


@njit(parallel=True, cache=True)
def _or_all_rows(out, row):
    n, n_words = out.shape
    for i in prange(n):
        for k in range(n_words):
            out[i, k] |= row[k]


def global_keys_or(bits: np.ndarray, out: np.ndarray, tokens: np.ndarray, order: int) -> None:
    """``out[i] |= OR bits[g]`` over the global tokens ``g`` (sorted), all of them (``order = 0``), those ``<= i``
    (``+1``, causal) or ``>= i`` (``-1``).

    Parameters
    ----------
    bits : numpy.ndarray
        ``(n, W)`` uint64 slab, C-contiguous.
    out : numpy.ndarray
        Slab of the same shape, distinct from ``bits``, that receives the result.
    tokens : numpy.ndarray
        Sorted int64 positions of the global tokens.
    order : {0, 1, -1}
        Causal filter.

    References
    ----------
    - I. Beltagy, M. E. Peters and A. Cohan, "Longformer: the long-document transformer", arXiv:2004.05150 (2020).

    Examples
    --------
    >>> import numpy as np
    >>> bits = np.array([[1], [2], [4]], dtype=np.uint64); out = np.zeros_like(bits)
    >>> global_keys_or(bits, out, np.array([0]), 0)
    >>> out[:, 0].tolist()
    [1, 1, 1]
    """
    if tokens.size == 0:
        return
    if order == 0:
        _or_all_rows(out, np.bitwise_or.reduce(bits[tokens], axis=0))
    else:
        _or_prefix_rows(out, _running_or_at(bits, tokens, tokens, order, _tile(bits)), tokens, order)


def global_queries_or(bits: np.ndarray, out: np.ndarray, tokens: np.ndarray, order: int) -> None:
    """``out[g] |= OR bits[j]`` over every key ``j`` (``order = 0``), ``j <= g`` (``+1``) or ``j >= g`` (``-1``).

    Parameters
    ----------
    bits : numpy.ndarray
        ``(n, W)`` uint64 slab, C-contiguous.
    out : numpy.ndarray
        Slab of the same shape, distinct from ``bits``, that receives the result.
    tokens : numpy.ndarray
        Sorted int64 positions of the global tokens.
    order : {0, 1, -1}
        Causal filter.

    References
    ----------
    - I. Beltagy, M. E. Peters and A. Cohan, "Longformer: the long-document transformer", arXiv:2004.05150
      (2020) (global tokens).

    Examples
    --------
    >>> import numpy as np
    >>> bits = np.array([[1], [2], [4]], dtype=np.uint64); out = np.zeros_like(bits)
    >>> global_queries_or(bits, out, np.array([1]), 1)
    >>> out[:, 0].tolist()
    [0, 3, 0]
    """
    if tokens.size == 0:
        return
    if order == 0:
        out[tokens] |= np.bitwise_or.reduce(bits, axis=0)
        return
    every = np.arange(bits.shape[0], dtype=np.int64)
    out[tokens] |= _running_or_at(bits, every, tokens, order, _tile(bits))


def _tile(bits: np.ndarray) -> int:
    return max(1, -(-bits.shape[1] // 8))


@njit(parallel=True, cache=True)
def full_or(bits, out, order, accumulate, tile):
    """Full attention: ``out[i] (|)= OR`` of every row (``order = 0``), of rows ``j <= i`` (``+1``, causal) or
    ``j >= i`` (``-1``). Word tiles run in parallel, each sweeping the rows in order: ``O(n W)``, row-contiguous.

    Parameters
    ----------
    bits : numpy.ndarray
        ``(n, W)`` uint64 slab, C-contiguous.
    out : numpy.ndarray
        Slab of the same shape, distinct from ``bits``, that receives the result.
    order : {0, 1, -1}
        Causal filter.
    accumulate : bool
        OR into ``out`` instead of overwriting it.
    tile : int
        Words per parallel task.

    References
    ----------
    - A. Vaswani et al., "Attention Is All You Need", NeurIPS 2017, arXiv:1706.03762.

    Examples
    --------
    >>> import numpy as np
    >>> bits = np.array([[1], [2], [4]], dtype=np.uint64); out = np.empty_like(bits)
    >>> full_or(bits, out, 1, False, 1)
    >>> out[:, 0].tolist()
    [1, 3, 7]
    """
    n, n_words = bits.shape
    n_tiles = (n_words + tile - 1) // tile
    for t in prange(n_tiles):
        w0 = t * tile
        m = min(n_words, w0 + tile) - w0
        run = np.zeros(m, dtype=np.uint64)
        if order == 0:
            for i in range(n):
                row = bits[i, w0 : w0 + m]
                for k in range(m):
                    run[k] |= row[k]
        for step in range(n):
            i = step if order >= 0 else n - 1 - step
            row = bits[i, w0 : w0 + m]
            dst = out[i, w0 : w0 + m]
            if order != 0:
                for k in range(m):
                    run[k] |= row[k]
            if accumulate:
                for k in range(m):
                    dst[k] |= run[k]
            else:
                for k in range(m):
                    dst[k] = run[k]
