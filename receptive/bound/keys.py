"""Distinct keys per query of one layer of a pattern, counted in ``O(n)`` memory at any ``n``.

``receptive.patterns.causal_variants.keys_per_query`` is ``nnz(A_l) / n`` of the layer's sparse adjacency
(``Pattern.adjacency``): it enumerates every operator's edges as int64 arrays first, about 1.1 GB at
``n = 2^16`` with 512 window slots per query (SA+SWA, w = 256), hence about 17 GB at ``n = 2^20``. This module
counts the same quantity without materialising the edges: for every query ``i`` it walks the keys of each
operator of the layer and counts the distinct ones with a stamp array (``last[j] == i``: key ``j`` already
counted for ``i``)::

    keys(i) = |union over the layer's operators of N_op(i)|,      mean = sum_i keys(i) / n = nnz(A_l) / n,

where ``N_op(i)`` follows the operator's definition (:class:`graphs.ops.WindowOp`: the original indices at the
permuted positions ``p - left .. p + right`` around the query's position ``p``, truncated at the ends of the
(virtual) sequence or wrapped when circular, holes ``-1`` skipped, the ``order`` filter on original indices;
:class:`graphs.ops.NeighbourOp`: its CSR row). Memory: the int64 stamp array and counts plus, per window
operator, its inverse (``8 n`` bytes each), i.e. ``8 n (2 + W)`` bytes for ``W`` window operators, plus one int64
copy of the permutations (of the neighbour lists) when there are several or one is not int64 (:func:`memory_bytes`
gives the peak); time ``O(sum of window slots + neighbour entries)``. Layers with other operators (blocks,
globals, full) fall back to the adjacency's row counts.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from graphs.ops import NeighbourOp, WindowOp

from ..validation import check_int


def distinct_keys(pattern, layer: int = 1) -> np.ndarray:
    """Distinct keys of every query of layer ``layer`` (self included when the pattern attends to it).

    The row counts of ``pattern.adjacency(layer)``, without building it on the fast path (see the module docstring).

    Parameters
    ----------
    pattern : receptive.patterns.Pattern
        Any object with ``n`` and ``layer_ops`` (a receptive pattern).
    layer : int, optional
        The layer, ``>= 1``.

    Returns
    -------
    numpy.ndarray
        int64 array of length ``n``: the distinct keys of each query.

    Raises
    ------
    TypeError
        If ``pattern`` is not a pattern or ``layer`` is not an integer.
    ValueError
        If ``layer < 1``, or an operator holds an index out of range.

    Examples
    --------
    >>> from receptive import make_pattern
    >>> from receptive.bound.keys import distinct_keys
    >>> distinct_keys(make_pattern("swa", 16, 3, causal=True)).tolist()
    [1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    _check(pattern, layer)
    n = int(pattern.n)
    ops = pattern.layer_ops(int(layer))
    if not all(isinstance(op, WindowOp | NeighbourOp) for op in ops):
        return np.diff(pattern.adjacency(int(layer)).indptr).astype(np.int64)
    windows = [op for op in ops if isinstance(op, WindowOp)]
    neighbours = [op for op in ops if isinstance(op, NeighbourOp)]
    for op in neighbours:  # the kernel reads without bounds checks
        if op.indptr.shape != (n + 1,) or op.indptr[-1] != op.indices.size:
            raise ValueError(f"pattern: a neighbour list's indptr does not match n = {n} and its indices")
        if op.indices.size and (op.indices.min() < 0 or op.indices.max() >= n):
            raise ValueError(f"pattern: a neighbour list holds a key outside 0..{n - 1}")
    starts = np.zeros(len(windows) + 1, dtype=np.int64)
    np.cumsum([op.length(n) for op in windows], out=starts[1:])
    perms = _joined([op.perm for op in windows], starts, identity=True)
    invs = np.empty(len(windows) * n, dtype=np.int64)  # filled in place: no temporaries outlive the check
    status = _inverses(n, perms, starts, invs)
    if status > 0:
        raise ValueError(f"pattern: a window permutation holds an index >= n = {n}")
    if status < 0:  # an index at two positions: the generic path handles it
        del perms, invs
        return np.diff(pattern.adjacency(int(layer)).indptr).astype(np.int64)
    nb_starts = np.zeros(len(neighbours) + 1, dtype=np.int64)
    np.cumsum([op.indices.size for op in neighbours], out=nb_starts[1:])
    counts = np.zeros(n, dtype=np.int64)
    _count_distinct(
        n,
        perms,
        starts,
        invs,
        np.array([op.left for op in windows], dtype=np.int64),
        np.array([op.right for op in windows], dtype=np.int64),
        np.array([op.circular for op in windows], dtype=np.bool_),
        np.array([op.order for op in windows], dtype=np.int64),
        _joined([op.indptr for op in neighbours], np.arange(len(neighbours) + 1, dtype=np.int64) * (n + 1)),
        _joined([op.indices for op in neighbours], nb_starts),
        nb_starts,
        counts,
    )
    return counts


def mean_distinct_keys(pattern, layer: int = 1) -> float:
    """Mean distinct keys per query of layer ``layer``: ``sum_i keys(i) / n`` (:func:`distinct_keys`).

    Equal to ``keys_per_query(pattern, layer) = nnz(A_l) / n`` at any ``n`` without building ``A_l``.

    Parameters
    ----------
    pattern : receptive.patterns.Pattern
        Any object with ``n`` and ``layer_ops`` (a receptive pattern).
    layer : int, optional
        The layer, ``>= 1``.

    Returns
    -------
    float
        The mean.

    Raises
    ------
    TypeError
        If ``pattern`` is not a pattern or ``layer`` is not an integer.
    ValueError
        If ``layer < 1``, or an operator holds an index out of range.

    Examples
    --------
    >>> from receptive import make_pattern
    >>> from receptive.bound.keys import mean_distinct_keys
    >>> from receptive.patterns.causal_variants import keys_per_query
    >>> pattern = make_pattern("sa+swa", 64, 4, seed=0)
    >>> mean_distinct_keys(pattern, 2) == keys_per_query(pattern, 2)
    True

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    return float(distinct_keys(pattern, layer).sum() / pattern.n)


#: Bytes :func:`memory_bytes` allows for the small objects of one call (per-operator parameter arrays, offsets,
#: Python objects): a constant plus this much per operator.
SMALL_BYTES, SMALL_BYTES_PER_OP = 4096, 512


def memory_bytes(pattern, layer: int = 1) -> int:
    """Peak scratch bytes :func:`distinct_keys` holds beyond the pattern on its fast path.

    The fast path is window and neighbour operators only; all of it is alive while the kernel runs::

        8 n (stamp array) + 8 n (counts) + 8 n W (the W window operators' inverses, one array)
        + the window permutations as one int64 array: none for one int64 permutation (passed as it is), 8 n for
          one identity, 8 len(perm) for one of another dtype, 8 sum_op length(op) for several
        + the neighbour lists likewise: none for one int64 list, 8 (n + 1 + nnz) summed over several
        + SMALL_BYTES + SMALL_BYTES_PER_OP * (number of operators).

    Nothing else is allocated before the kernel (the inverses are filled in place by a compiled loop). An upper
    bound on the fast path, checked against ``tracemalloc``'s peak in ``tests/receptive/test_bound_keys.py``; layers
    with other operators, or a permutation holding an index twice, build the adjacency instead (not bounded
    here).

    Parameters
    ----------
    pattern : receptive.patterns.Pattern
        Any object with ``n`` and ``layer_ops`` (a receptive pattern).
    layer : int, optional
        The layer, ``>= 1``.

    Returns
    -------
    int
        The bound in bytes.

    Raises
    ------
    TypeError
        If ``pattern`` is not a pattern or ``layer`` is not an integer.
    ValueError
        If ``layer < 1``.

    Examples
    --------
    >>> from receptive import make_pattern
    >>> from receptive.bound.keys import memory_bytes
    >>> memory_bytes(make_pattern("swa", 16, 3, causal=True))  # 16 n + 8 n + 8 n + 4096 + 512
    5120
    """
    _check(pattern, layer)
    ops = pattern.layer_ops(int(layer))
    n = int(pattern.n)
    windows = [op for op in ops if isinstance(op, WindowOp)]
    neighbours = [op for op in ops if isinstance(op, NeighbourOp)]
    total = 16 * n + 8 * n * len(windows) + SMALL_BYTES + SMALL_BYTES_PER_OP * len(ops)
    if len(windows) == 1:
        perm = windows[0].perm
        total += 8 * n if perm is None else _copy_bytes([perm])
    elif windows:
        total += sum(8 * op.length(n) for op in windows)
    total += _copy_bytes([op.indptr for op in neighbours]) + _copy_bytes([op.indices for op in neighbours])
    return total


def _check(pattern, layer) -> None:
    if not hasattr(pattern, "layer_ops") or not hasattr(pattern, "n"):
        raise TypeError(f"pattern: expected a receptive pattern (layer_ops and n), got {type(pattern).__name__}")
    check_int("layer", layer, 1)


def _as_is(array) -> bool:
    """Whether :func:`_joined` passes ``array`` to the kernel without a copy (one contiguous int64 array)."""
    return isinstance(array, np.ndarray) and array.dtype == np.int64 and array.flags.c_contiguous


def _copy_bytes(arrays: list) -> int:
    """Bytes :func:`_joined` allocates for ``arrays``: none for one that it passes as it is, else 8 per entry."""
    if len(arrays) == 1 and _as_is(arrays[0]):
        return 0
    return sum(8 * np.shape(a)[0] for a in arrays)


def _joined(arrays: list, starts: np.ndarray, identity: bool = False) -> np.ndarray:
    """The int64 concatenation of ``arrays`` (``arrays[k]`` at ``starts[k]:starts[k + 1]``; ``None``: the identity
    ``0 .. len - 1`` when ``identity``), without a copy for one int64 array (a neighbour list at ``n = 2^20`` may
    hold 10^8 entries), else written into one new array without temporaries."""
    if len(arrays) == 1 and _as_is(arrays[0]):
        return arrays[0]
    out = np.empty(int(starts[-1]), dtype=np.int64)
    for k, a in enumerate(arrays):
        part = out[starts[k] : starts[k + 1]]
        if a is None and identity:
            _fill_identity(part)
        else:
            part[...] = a  # numpy casts in small buffered chunks
    return out


@njit(cache=True)
def _fill_identity(out):
    for i in range(out.size):
        out[i] = i


@njit(cache=True)
def _inverses(n, perms, starts, invs):
    """Fill ``invs[o n + q]`` with the position of original index ``q`` in window ``o``'s permutation (-1: absent;
    negative entries are holes). Returns 1 when a permutation holds an index ``>= n`` (checked first, per operator),
    -1 when it holds one at two positions, else 0."""
    invs[:] = -1
    for o in range(starts.size - 1):
        for x in range(starts[o], starts[o + 1]):
            if perms[x] >= n:
                return 1
        for x in range(starts[o], starts[o + 1]):
            k = perms[x]
            if k < 0:
                continue
            if invs[o * n + k] >= 0:
                return -1
            invs[o * n + k] = x - starts[o]
    return 0


@njit(cache=True)
def _count_distinct(n, perms, starts, invs, lefts, rights, circular, orders, nb_indptr, nb_indices, nb_starts, counts):
    last = np.full(n, -1, dtype=np.int64)
    n_windows = lefts.size
    n_neighbours = nb_starts.size - 1
    for q in range(n):
        c = 0
        for o in range(n_windows):
            p = invs[o * n + q]
            if p < 0:
                continue
            base = starts[o]
            length = starts[o + 1] - base
            for t in range(-lefts[o], rights[o] + 1):
                x = p + t
                if circular[o]:
                    x = x % length
                elif x < 0 or x >= length:
                    continue
                k = perms[base + x]
                if k < 0:
                    continue
                if orders[o] > 0 and k > q:
                    continue
                if orders[o] < 0 and k < q:
                    continue
                if last[k] != q:
                    last[k] = q
                    c += 1
        for o in range(n_neighbours):
            ptr = o * (n + 1)
            for e in range(nb_indptr[ptr + q], nb_indptr[ptr + q + 1]):
                k = nb_indices[nb_starts[o] + e]
                if last[k] != q:
                    last[k] = q
                    c += 1
        counts[q] = c
    return counts
