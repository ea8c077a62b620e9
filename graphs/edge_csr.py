"""From the rows of an edge list to CSR (the second half of :func:`graphs.io.load_edge_list`, after the columns are
read by :mod:`graphs.edgelist`).

Integer node ids are numbered by first appearance with a numba hash table (:func:`factorize_pairs`; text ids by
``pandas.factorize``, or ``numpy.unique`` without pandas: :func:`factorize`), and the rows are aggregated into CSR
by numba passes (:func:`aggregate`): a stable counting sort by source, then per row a merge that sums the weights of
repeated targets in file order (found by their position in the row), drops self-loops and pairs below the threshold
and sorts the kept targets. That is ``O(m + n)`` plus ``O(d log d)`` per row for the kept targets, instead of the two
sorts of all ``m`` rows a ``numpy.unique`` on pairs followed by ``scipy.sparse`` would take.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from .csv_reader import PARALLEL_ROWS, _twin, idle_cores
from .edgelist import available

_U = np.uint64


# --------------------------------------------------------------------------------------------------- numbering


@njit(cache=True)
def _factorize_pairs(src, dst):
    """Codes of ``src[0], dst[0], src[1], dst[1], ...`` by first appearance: open addressing (linear probing,
    Fibonacci hashing, load <= 1/2, int32 slots; unsigned indices compile to plain loads). Returns ``u, v`` (int32
    codes) and the distinct values."""
    m = src.shape[0]
    bits = 16
    cap = 1 << bits
    mask = _U(cap - 1)
    slots = np.full(cap, -1, dtype=np.int32)
    uniques = np.empty(max(2 * m, 1), dtype=np.int64)
    u = np.empty(m, dtype=np.int32)
    v = np.empty(m, dtype=np.int32)
    count = 0
    mult = _U(0x9E3779B97F4A7C15)
    for k in range(2 * m):
        row = _U(k >> 1)
        x = src[row] if (k & 1) == 0 else dst[row]
        i = (_U(x) * mult) >> _U(64 - bits)
        while True:
            c = slots[i]
            if c == -1:
                c = count
                slots[i] = c
                uniques[_U(c)] = x
                count += 1
                break
            if uniques[_U(c)] == x:
                break
            i = (i + _U(1)) & mask
        if (k & 1) == 0:
            u[row] = c
        else:
            v[row] = c
        if 2 * count > cap:  # grow and rehash
            bits += 1
            cap = 1 << bits
            mask = _U(cap - 1)
            slots = np.full(cap, -1, dtype=np.int32)
            for c in range(count):
                j = (_U(uniques[c]) * mult) >> _U(64 - bits)
                while slots[j] != -1:
                    j = (j + _U(1)) & mask
                slots[j] = c
    return u, v, uniques[:count].copy()


def factorize_pairs(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Number the end points of edges by first appearance: ``u, v, uniques`` with ``uniques[u] == src``.

    Also ``uniques[v] == dst``; uniques are in order of first appearance row by row, source before target.
    Integers are numbered by a numba hash table (open addressing with linear probing and Fibonacci hashing [1]_),
    strings by :func:`factorize`.

    Parameters
    ----------
    src, dst : numpy.ndarray
        The sources and targets of the rows, integers or strings, of one length.

    Returns
    -------
    u, v : numpy.ndarray
        The codes of ``src`` and ``dst`` (int32 for integer ids, int64 for strings).
    uniques : numpy.ndarray
        The distinct values in order of first appearance.

    References
    ----------
    .. [1] D. E. Knuth, *The Art of Computer Programming, Vol. 3: Sorting and Searching*, 2nd ed., Addison-Wesley,
       1998, section 6.4 (multiplicative hashing, linear probing).

    Examples
    --------
    >>> import numpy as np
    >>> u, v, uniques = factorize_pairs(np.array([10, 30, 10]), np.array([30, 20, 20]))
    >>> u.tolist(), v.tolist(), uniques.tolist()
    ([0, 1, 0], [1, 2, 2], [10, 30, 20])
    """
    if src.dtype.kind in "iu" and dst.dtype.kind in "iu" and src.size < 2**30:
        return _factorize_pairs(src.astype(np.int64, copy=False), dst.astype(np.int64, copy=False))
    both = np.empty(2 * src.size, dtype=np.result_type(src.dtype, dst.dtype))
    both[0::2], both[1::2] = src, dst
    codes, uniques = factorize(both)
    return codes[0::2].copy(), codes[1::2].copy(), uniques


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of ``values`` by first appearance: ``codes, uniques`` with ``uniques[codes] == values``.

    By ``pandas.factorize`` (``numpy.unique`` without pandas).

    Parameters
    ----------
    values : numpy.ndarray
        One-dimensional values (integers or strings).

    Returns
    -------
    codes : numpy.ndarray
        int64 codes, one per value.
    uniques : numpy.ndarray
        The distinct values in order of first appearance.

    References
    ----------
    - pandas documentation, ``pandas.factorize``,
      https://pandas.pydata.org/docs/reference/api/pandas.factorize.html

    Examples
    --------
    >>> import numpy as np
    >>> codes, uniques = factorize(np.array(["b", "a", "b", "c"]))
    >>> codes.tolist(), uniques.tolist()
    ([0, 1, 0, 2], ['b', 'a', 'c'])
    """
    if available("pandas"):
        import pandas as pd

        codes, uniques = pd.factorize(values)
        return codes.astype(np.int64, copy=False), np.asarray(uniques)
    uniques, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    rank = np.empty(uniques.size, dtype=np.int64)
    order = np.argsort(first, kind="stable")
    rank[order] = np.arange(uniques.size)
    return rank[inverse.ravel()], uniques[order]


def as_ids(uniques: np.ndarray) -> np.ndarray:
    """Distinct ids as int64 when every one is an integer literal (and distinct as an integer), else strings.

    Parameters
    ----------
    uniques : numpy.ndarray
        Distinct ids, integers or strings.

    Returns
    -------
    numpy.ndarray
        int64 ids, or the ids as strings when one is not an integer literal or two equal the same integer.

    Examples
    --------
    >>> import numpy as np
    >>> as_ids(np.array(["12", "3"])).tolist()
    [12, 3]
    >>> as_ids(np.array(["7", "07"])).tolist()
    ['7', '07']
    >>> as_ids(np.array(["a", "1"])).tolist()
    ['a', '1']
    """
    if uniques.dtype.kind in "iu":
        return uniques.astype(np.int64, copy=False)
    text = uniques.astype(str)
    try:
        ints = text.astype(np.int64)
    except (ValueError, OverflowError):
        return text
    return ints if np.unique(ints).size == ints.size else text  # "7" and "07" stay distinct


# --------------------------------------------------------------------------------------------------- aggregation


@njit(cache=True)
def _bucket(n, u, v, w, weighted):
    """Counting sort of the rows by source (stable: each row keeps the file's order): ``start`` (CSR offsets),
    targets and weights in source order. Unsigned indices compile to plain loads."""
    m = u.shape[0]
    start = np.zeros(n + 1, dtype=np.int64)
    for k in range(m):
        start[_U(u[_U(k)] + 1)] += 1
    for i in range(n):
        start[i + 1] += start[i]
    fill = start[:-1].copy()
    cols = np.empty_like(v)
    ws = np.empty(m if weighted else 0, dtype=np.float64)
    for k in range(m):
        at = _U(k)
        row = _U(u[at])
        p = _U(fill[row])
        cols[p] = v[at]
        if weighted:
            ws[p] = w[at]
        fill[row] = p + _U(1)
    return start, cols, ws


def _merge_rows_py(start, cols, ws, weighted, threshold, thresholded, blocks):
    """Per row, in place: sum the weights of repeated targets (in row order: the file's order), keep targets that
    are not the row itself and whose sum is ``>= threshold``, sorted; kept targets move to the start of the row,
    ``kept[r]`` counts them. Repeats are found by ``seen[c]``, the position of target ``c`` in the row being
    merged (positions in earlier rows are below its start), so only the kept targets are sorted. ``blocks`` runs
    of rows in parallel, each with its own ``seen``."""
    n = start.shape[0] - 1
    kept = np.zeros(n, dtype=np.int64)
    for block in prange(blocks):
        seen = np.full(n, -1, dtype=np.int64)
        for r in range(n * block // blocks, n * (block + 1) // blocks):
            a, b = start[r], start[r + 1]
            out = a
            for i in range(a, b):
                c = cols[i]
                p = seen[c]
                if p >= a:
                    if weighted:
                        ws[p] += ws[i]
                else:
                    seen[c] = out
                    cols[out] = c
                    if weighted:
                        ws[out] = ws[i]
                    out += 1
            end = a
            for i in range(a, out):
                c = cols[i]
                if c != r and (not thresholded or ws[i] >= threshold):
                    cols[end] = c
                    end += 1
            if end - a > 32:
                cols[a:end] = np.sort(cols[a:end])
            else:
                for i in range(a + 1, end):  # insertion sort of short rows
                    c = cols[i]
                    j = i - 1
                    while j >= a and cols[j] > c:
                        cols[j + 1] = cols[j]
                        j -= 1
                    cols[j + 1] = c
            kept[r] = end - a
    return kept


#: per row in parallel (worth its start-up only for many rows: on shared cores a parallel region waits for every
#: thread to be scheduled) and its serial twin
_merge_rows = njit(parallel=True, cache=True)(_merge_rows_py)
_merge_rows_serial = njit(cache=True)(_twin(_merge_rows_py, "_serial"))


@njit(cache=True)
def _compact(start, cols, kept, used, new):
    """CSR of the kept pairs over the used nodes only, renumbered by ``new`` (monotone, so rows stay sorted)."""
    rows = np.flatnonzero(used)
    indptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    for i in range(rows.shape[0]):
        indptr[i + 1] = indptr[i] + kept[rows[i]]
    indices = np.empty(indptr[-1], dtype=np.int64)
    for i in range(rows.shape[0]):
        r = rows[i]
        p = indptr[i]
        for q in range(start[r], start[r] + kept[r]):
            indices[p] = new[cols[q]]
            p += 1
    return indptr, indices


def aggregate(n: int, u: np.ndarray, v: np.ndarray, w: np.ndarray | None, threshold: float | None):
    """Rows ``u[k] -> v[k]`` (weights ``w``) over nodes ``0..n-1`` as CSR of the distinct pairs kept.

    A pair is kept when it is not a self-loop and its summed weight is ``>= threshold``; the CSR is over the nodes
    those pairs touch, renumbered in their original order, and each row's targets are sorted. The rows are
    bucketed by a stable counting sort by source, then merged per row (``O(m + n)`` plus ``O(d log d)`` per row).

    Parameters
    ----------
    n : int
        The number of nodes (codes ``0..n-1``).
    u, v : numpy.ndarray
        The codes of the sources and targets, one per row.
    w : numpy.ndarray or None
        The weights, one per row, summed per ordered pair; ``None``: unweighted.
    threshold : float or None
        Keep the pairs whose summed weight is ``>= threshold``; ``None``: keep every pair.

    Returns
    -------
    indptr, indices : numpy.ndarray
        The CSR (int64) of the kept pairs over the kept nodes.
    used : numpy.ndarray
        Boolean mask over ``0..n-1`` of the nodes kept.

    References
    ----------
    - T. H. Cormen, C. E. Leiserson, R. L. Rivest, C. Stein, *Introduction to Algorithms*, 3rd ed., MIT Press,
      2009, section 8.2 (counting sort).

    Examples
    --------
    >>> import numpy as np
    >>> u = np.array([0, 0, 1, 2, 0], dtype=np.int32)
    >>> v = np.array([1, 1, 1, 0, 3], dtype=np.int32)
    >>> w = np.array([2.0, 3.0, 9.0, 1.0, 6.0])
    >>> indptr, indices, used = aggregate(4, u, v, w, threshold=5.0)
    >>> indptr.tolist(), indices.tolist(), used.tolist()
    ([0, 2, 2, 2], [1, 2], [True, True, False, True])
    """
    weighted = w is not None
    weights = np.asarray(w, dtype=np.float64) if weighted else np.empty(0, dtype=np.float64)
    start, cols, ws = _bucket(n, u, v, weights, weighted)
    thresholded = threshold is not None
    level = float(threshold) if thresholded else 0.0
    if u.shape[0] >= PARALLEL_ROWS and idle_cores():
        kept = _merge_rows(start, cols, ws, weighted, level, thresholded, numba.get_num_threads())
    else:
        kept = _merge_rows_serial(start, cols, ws, weighted, level, thresholded, 1)
    used = kept > 0
    used[_kept_targets(start, cols, kept)] = True
    new = np.cumsum(used) - 1
    indptr, indices = _compact(start, cols, kept, used, new)
    return indptr, indices, used


@njit(cache=True)
def _kept_targets(start, cols, kept):
    n = start.shape[0] - 1
    total = 0
    for r in range(n):
        total += kept[r]
    out = np.empty(total, dtype=np.int64)
    p = 0
    for r in range(n):
        for q in range(start[r], start[r] + kept[r]):
            out[p] = cols[q]
            p += 1
    return out
