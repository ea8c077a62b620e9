"""Numba kernels of the bit-parallel reachability engine.

A *slab* is a matrix ``bits`` of shape ``(n, W)`` and dtype uint64: row ``i`` is a bitset of ``64 * W`` seeds.
One layer of attention maps it to ``out[i] = OR_{j in N(i)} bits[j]``, where ``N(i)`` are the keys query ``i``
attends to (forward, from sources) or the queries that attend to ``i`` (backward, from targets).

Window kernels never build an ``n x w`` neighbour list: the plain (permuted) window is the streaming van Herk /
Gil-Werman OR of :mod:`graphs.streaming_window` (:func:`window_or`, re-exported here with its tiling), the causal
one (:func:`window_or_ordered`) a direct loop or a Fenwick sweep. Each works on tasks of (chunk of consecutive
window positions, tile of words): every task gathers its rows plus the window's halo into a small buffer that
stays in cache, then writes its outputs once.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .streaming_window import WINDOW_OR_STREAM_BYTES as WINDOW_OR_STREAM_BYTES
from .streaming_window import WINDOW_OR_TASK_WORDS as WINDOW_OR_TASK_WORDS
from .streaming_window import _resolve
from .streaming_window import window_or as window_or
from .streaming_window import window_or_tiling as window_or_tiling

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@njit(inline="always")
def popcount64(x):
    """Number of set bits of a uint64 (SWAR; LLVM lowers it to ``popcnt`` where available).

    Parameters
    ----------
    x : numpy.uint64

    Returns
    -------
    numpy.uint64

    References
    ----------
    - H. S. Warren, *Hacker's Delight*, 2nd ed., Addison-Wesley, 2012, section 5-1 (counting 1-bits,
      the SWAR popcount).

    Examples
    --------
    >>> import numpy as np
    >>> int(popcount64(np.uint64(0b1011)))
    3
    """
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return (x * _H01) >> np.uint64(56)


#: windows at least this long use the Fenwick sweep in :func:`window_or_ordered`, shorter ones the direct loop
FENWICK_MIN_WINDOW = 24


@njit(cache=True)
def _fenwick_or_insert(tree, i, row):
    i += 1
    while i < tree.shape[0]:
        for b in range(row.shape[0]):
            tree[i, b] |= row[b]
        i += i & -i


@njit(cache=True)
def _fenwick_or_query(tree, i, acc):
    """``acc |=`` OR of the rows inserted at positions ``0..i``."""
    i += 1
    while i > 0:
        for b in range(acc.shape[0]):
            acc[b] |= tree[i, b]
        i -= i & -i


@njit(cache=True)
def _ordered_windows_fenwick(rows, origin, dsts, m, direction, res):
    """``res[t] |= OR rows[k]`` over ``k in [t, t+m-1]`` with ``origin[k] >= 0`` and ``origin[k] <= dsts[t]``
    (``direction > 0``; ``>=`` otherwise), by blocks of ``m``: each window is a suffix of one block and a prefix
    of the next, and within a block the two-sided condition (position and origin) is a dominance query answered
    offline: elements inserted in origin order into Fenwick trees over positions, queries taken in the same order.
    ``O(log m)`` row operations per output instead of ``m``."""
    buf_len, t_words = rows.shape
    n_out = dsts.shape[0]
    forward = np.zeros((m + 1, t_words), dtype=np.uint64)
    reverse = np.zeros((m + 1, t_words), dtype=np.uint64)
    q_t = np.empty(2 * m, dtype=np.int64)
    q_kind = np.empty(2 * m, dtype=np.int64)
    q_v = np.empty(2 * m, dtype=np.int64)
    for s in range(0, buf_len, m):
        e = min(s + m, buf_len)
        forward[:] = 0
        reverse[:] = 0
        n_q = 0
        for t in range(s, min(e, n_out)):  # suffix of this block from t
            q_t[n_q], q_kind[n_q], q_v[n_q] = t, 0, dsts[t]
            n_q += 1
        for t in range(max(0, s - m + 1), min(s, n_out)):  # prefix of this block up to t + m - 1
            q_t[n_q], q_kind[n_q], q_v[n_q] = t, 1, dsts[t]
            n_q += 1
        if n_q == 0:
            continue
        keys = origin[s:e] if direction > 0 else -origin[s:e]
        elements = np.argsort(keys)
        q_order = np.argsort(q_v[:n_q] if direction > 0 else -q_v[:n_q])
        j = 0
        acc = np.empty(t_words, dtype=np.uint64)
        for qi in q_order:
            v = q_v[qi]
            while j < e - s:
                k = s + elements[j]
                o = origin[k]
                if o >= 0:
                    if (direction > 0 and o > v) or (direction < 0 and o < v):
                        break
                    _fenwick_or_insert(forward, k - s, rows[k])
                    _fenwick_or_insert(reverse, e - 1 - k, rows[k])
                j += 1
            t = q_t[qi]
            acc[:] = 0
            if q_kind[qi] == 0:
                _fenwick_or_query(reverse, e - 1 - t, acc)
            else:
                _fenwick_or_query(forward, t + m - 1 - s, acc)
            for b in range(t_words):
                res[t, b] |= acc[b]


@njit(parallel=True, cache=True)
def window_or_ordered(bits, out, perm, left, right, circular, direction, accumulate, chunk_len, tile):
    """Window OR restricted by original position: the causal mask of Stochastic Attention.

    As :func:`window_or`, but key ``perm[x]`` contributes to ``perm[p]`` only if ``perm[x] <= perm[p]``
    (``direction = +1``: forward, keys never come from the future) or ``perm[x] >= perm[p]``
    (``direction = -1``: the transposed graph, used when propagating backward from targets).
    The filter breaks the OR semigroup's sliding structure: short windows loop over their ``m`` keys, long ones
    (``m >= FENWICK_MIN_WINDOW``) use a Fenwick-tree sweep with ``O(log m)`` word operations per output word.
    Holes (``perm`` entries ``-1``) as in :func:`window_or`.

    Parameters
    ----------
    bits : numpy.ndarray
        ``(n, W)`` uint64 slab, C-contiguous.
    out : numpy.ndarray
        Slab of the same shape, distinct from ``bits``, that receives the result.
    perm : numpy.ndarray
        int64 original index at each permuted position (``-1`` holes; empty: identity).
    left, right : int
        Keys before and after the query's position.
    circular : bool
        Windows wrap around.
    direction : {1, -1}
        Keep keys ``<=`` (``+1``) or ``>=`` (``-1``) the query in original positions.
    accumulate : bool
        OR into ``out`` instead of overwriting it.
    chunk_len, tile : int
        Positions and words per parallel task.

    References
    ----------
    - P. M. Fenwick, "A new data structure for cumulative frequency tables", Softw. Pract. Exper. 24, 327-336
      (1994).

    Examples
    --------
    >>> import numpy as np
    >>> bits = np.zeros((4, 1), dtype=np.uint64); bits[:, 0] = [1, 2, 4, 8]
    >>> out = np.empty_like(bits)
    >>> window_or_ordered(bits, out, np.array([3, 2, 1, 0]), 1, 1, False, 1, False, 4, 1)
    >>> out[:, 0].tolist()  # reversed order, causal: each query keeps its earlier neighbour only
    [1, 3, 6, 12]
    """
    n_words = bits.shape[1]
    m = left + right + 1
    has_perm = perm.shape[0] > 0
    n = perm.shape[0] if has_perm else bits.shape[0]
    n_chunks = (n + chunk_len - 1) // chunk_len
    n_tiles = (n_words + tile - 1) // tile
    for task in prange(n_chunks * n_tiles):
        c = task // n_tiles
        w0 = (task % n_tiles) * tile
        w1 = min(n_words, w0 + tile)
        t_words = w1 - w0
        q0 = c * chunk_len
        q1 = min(n, q0 + chunk_len)
        buf_len = (q1 - q0) + m - 1
        rows = np.zeros((buf_len, t_words), dtype=np.uint64)
        origin = np.empty(buf_len, dtype=np.int64)
        for k in range(buf_len):
            x = _resolve(q0 - left + k, n, circular)
            if x < 0:
                origin[k] = -1
            else:
                src = perm[x] if has_perm else x
                origin[k] = src
                if src >= 0:
                    for b in range(t_words):
                        rows[k, b] = bits[src, w0 + b]
        dsts = np.empty(q1 - q0, dtype=np.int64)
        for t in range(q1 - q0):
            dsts[t] = perm[q0 + t] if has_perm else q0 + t
        res = np.zeros((q1 - q0, t_words), dtype=np.uint64)
        if m >= FENWICK_MIN_WINDOW:
            _ordered_windows_fenwick(rows, origin, dsts, m, direction, res)
        else:
            for t in range(q1 - q0):
                dst = dsts[t]
                for k in range(t, t + m):
                    o = origin[k]
                    if o < 0 or (direction > 0 and o > dst) or (direction < 0 and o < dst):
                        continue
                    for b in range(t_words):
                        res[t, b] |= rows[k, b]
        for t in range(q1 - q0):
            dst = dsts[t]
            if dst < 0:
                continue
            if accumulate:
                for b in range(t_words):
                    out[dst, w0 + b] |= res[t, b]
            else:
                for b in range(t_words):
                    out[dst, w0 + b] = res[t, b]


@njit(parallel=True, cache=True)
def neighbour_or(bits, out, indptr, indices, accumulate):
    """``out[i] (|)= OR_{j in indices[indptr[i]:indptr[i+1]]} bits[j]`` for an explicit (CSR) neighbour list.

    Parameters
    ----------
    bits : numpy.ndarray
        ``(n, W)`` uint64 slab, C-contiguous.
    out : numpy.ndarray
        Slab of the same shape, distinct from ``bits``, that receives the result.
    indptr, indices : numpy.ndarray
        int64 CSR lists of the keys of each query.
    accumulate : bool
        OR into ``out`` instead of overwriting it.

    Examples
    --------
    >>> import numpy as np
    >>> bits = np.array([[1], [2], [4]], dtype=np.uint64); out = np.empty_like(bits)
    >>> neighbour_or(bits, out, np.array([0, 2, 2, 3]), np.array([1, 2, 0]), False)
    >>> out[:, 0].tolist()
    [6, 0, 1]
    """
    n, n_words = bits.shape
    for i in prange(n):
        if not accumulate:
            for b in range(n_words):
                out[i, b] = 0
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            for b in range(n_words):
                out[i, b] |= bits[j, b]


@njit(parallel=True, cache=True)
def row_popcounts(bits):
    """``counts[i]`` = number of set bits in row ``i``.

    Parameters
    ----------
    bits : numpy.ndarray
        ``(n, W)`` uint64 slab.

    Returns
    -------
    numpy.ndarray
        int64, length ``n``.

    References
    ----------
    - H. S. Warren, *Hacker's Delight*, 2nd ed., Addison-Wesley, 2012, section 5-1 (counting 1-bits).

    Examples
    --------
    >>> import numpy as np
    >>> row_popcounts(np.array([[3, 1], [0, 0]], dtype=np.uint64)).tolist()
    [3, 0]
    """
    n, n_words = bits.shape
    counts = np.empty(n, dtype=np.int64)
    for i in prange(n):
        s = np.uint64(0)
        for b in range(n_words):
            s += popcount64(bits[i, b])
        counts[i] = np.int64(s)
    return counts


def _byte_spread_table():
    table = np.zeros(256, dtype=np.uint64)
    for v in range(256):
        for k in range(8):
            if v >> k & 1:
                table[v] |= np.uint64(1) << np.uint64(8 * k)
    return table


_SPREAD = _byte_spread_table()


@njit(parallel=True, cache=True)
def _column_popcounts(bits, spread, row_chunk):
    n, n_words = bits.shape
    n_chunks = (n + row_chunk - 1) // row_chunk
    partial = np.zeros((n_chunks, n_words * 64), dtype=np.int64)
    for task in prange(n_chunks * n_words):
        c = task // n_words
        b = task % n_words
        lanes = np.zeros(8, dtype=np.uint64)  # 8 counters of 8 bits per lane: bit 8*k + j of the word -> lane j
        since_flush = 0
        for i in range(c * row_chunk, min(n, (c + 1) * row_chunk)):
            x = bits[i, b]
            if x != 0:
                for j in range(8):
                    lanes[j] += spread[(x >> np.uint64(8 * j)) & np.uint64(255)]
            since_flush += 1
            if since_flush == 255:
                for j in range(8):
                    for k in range(8):
                        partial[c, b * 64 + 8 * j + k] += (lanes[j] >> np.uint64(8 * k)) & np.uint64(255)
                    lanes[j] = 0
                since_flush = 0
        for j in range(8):
            for k in range(8):
                partial[c, b * 64 + 8 * j + k] += (lanes[j] >> np.uint64(8 * k)) & np.uint64(255)
    return partial


def column_popcounts(bits: np.ndarray) -> np.ndarray:
    """``counts[s]`` = number of rows whose bit ``s`` is set (a positional popcount over all rows).

    Bytes are spread into 8-bit lane counters with a 256-entry table and flushed every 255 rows, so the cost is
    ``8`` table look-ups per nonzero word instead of 64 bit tests.

    Parameters
    ----------
    bits : numpy.ndarray
        ``(n, W)`` uint64 slab.

    Returns
    -------
    numpy.ndarray
        int64, length ``64 W``.

    References
    ----------
    - H. S. Warren, *Hacker's Delight*, 2nd ed., Addison-Wesley, 2012, section 5-1 (counting 1-bits).

    Examples
    --------
    >>> import numpy as np
    >>> column_popcounts(np.array([[3], [1]], dtype=np.uint64))[:3].tolist()
    [2, 1, 0]
    """
    n = bits.shape[0]
    row_chunk = max(1024, -(-n // 16))
    return _column_popcounts(bits, _SPREAD, row_chunk).sum(axis=0)
