"""Distinct keys per query of one layer of a pattern, counted in ``O(n)`` memory at any ``n``.

``receptive.patterns.causal_variants.keys_per_query`` is ``nnz(A_l) / n`` of the layer's sparse adjacency
(``Pattern.adjacency``): it enumerates every operator's edges as int64 arrays first, about 1.1 GB at
``n = 2^16`` with 512 window slots per query (SA+SWA, w = 256), hence about 17 GB at ``n = 2^20``. This module
counts the same quantity without materialising the edges: for every query ``i`` it walks the keys of each
operator of the layer and counts the distinct ones with a stamp array (``last[j] == i``: key ``j`` already
counted for ``i``),

    keys(i) = |union over the layer's operators of N_op(i)|,      mean = sum_i keys(i) / n = nnz(A_l) / n,

where ``N_op(i)`` follows the operator's definition (:class:`graphs.ops.WindowOp`: the original indices at the
permuted positions ``p - left .. p + right`` around the query's position ``p``, truncated at the ends of the
(virtual) sequence or wrapped when circular, holes ``-1`` skipped, the ``order`` filter on original indices;
:class:`graphs.ops.NeighbourOp`: its CSR row). Memory: one int64 stamp array plus, per window operator, its
permutation and inverse (``8 n`` bytes each), i.e. ``8 n (1 + 2 W)`` bytes for ``W`` window operators; time
``O(sum of window slots + neighbour entries)``. Layers with other operators (blocks, globals, full) fall back to
the adjacency's row counts.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from graphs.ops import NeighbourOp, WindowOp


def distinct_keys(pattern, layer: int = 1) -> np.ndarray:
    """Distinct keys of every query of layer ``layer`` (self included when the pattern attends to it): the row
    counts of ``pattern.adjacency(layer)``, int64 array of length ``n`` (see the module docstring)."""
    _check(pattern, layer)
    n = int(pattern.n)
    ops = pattern.layer_ops(int(layer))
    if not all(isinstance(op, WindowOp | NeighbourOp) for op in ops):
        return np.diff(pattern.adjacency(int(layer)).indptr).astype(np.int64)
    windows = [op for op in ops if isinstance(op, WindowOp)]
    neighbours = [op for op in ops if isinstance(op, NeighbourOp)]
    perms, invs = [], []
    for op in windows:
        perm = np.arange(n, dtype=np.int64) if op.perm is None else np.asarray(op.perm, dtype=np.int64)
        real = np.flatnonzero(perm >= 0)
        inv = np.full(n, -1, dtype=np.int64)
        if real.size and perm[real].max() >= n:
            raise ValueError(f"pattern: a window permutation holds an index >= n = {n}")
        inv[perm[real]] = real
        if np.count_nonzero(inv >= 0) != real.size:  # an index at two positions: the generic path handles it
            return np.diff(pattern.adjacency(int(layer)).indptr).astype(np.int64)
        perms.append(perm)
        invs.append(inv)
    for op in neighbours:  # the kernel reads without bounds checks
        if op.indptr.shape != (n + 1,) or op.indptr[-1] != op.indices.size:
            raise ValueError(f"pattern: a neighbour list's indptr does not match n = {n} and its indices")
        if op.indices.size and (op.indices.min() < 0 or op.indices.max() >= n):
            raise ValueError(f"pattern: a neighbour list holds a key outside 0..{n - 1}")
    starts = np.zeros(len(windows) + 1, dtype=np.int64)
    np.cumsum([p.size for p in perms], out=starts[1:])
    nb_starts = np.zeros(len(neighbours) + 1, dtype=np.int64)
    np.cumsum([op.indices.size for op in neighbours], out=nb_starts[1:])
    counts = np.zeros(n, dtype=np.int64)
    _count_distinct(
        n,
        _joined(perms),
        starts,
        _joined(invs),
        np.array([op.left for op in windows], dtype=np.int64),
        np.array([op.right for op in windows], dtype=np.int64),
        np.array([op.circular for op in windows], dtype=np.bool_),
        np.array([op.order for op in windows], dtype=np.int64),
        _joined([op.indptr for op in neighbours]),
        _joined([op.indices for op in neighbours]),
        nb_starts,
        counts,
    )
    return counts


def mean_distinct_keys(pattern, layer: int = 1) -> float:
    """Mean distinct keys per query of layer ``layer``: ``sum_i keys(i) / n`` (:func:`distinct_keys`), equal to
    ``keys_per_query(pattern, layer) = nnz(A_l) / n`` at any ``n`` without building ``A_l``."""
    return float(distinct_keys(pattern, layer).sum() / pattern.n)


def memory_bytes(pattern, layer: int = 1) -> int:
    """Scratch bytes :func:`distinct_keys` allocates beyond the pattern: the stamp array and the counts
    (``16 n``), every window operator's inverse (``8 n``) and identity permutation when it has none (``8 n``), and
    the concatenations of several permutations or neighbour lists (one is passed as it is). An upper bound on the
    fast path; layers it does not handle build the adjacency instead (see the module docstring)."""
    _check(pattern, layer)
    ops = pattern.layer_ops(int(layer))
    n = int(pattern.n)
    windows = [op for op in ops if isinstance(op, WindowOp)]
    neighbours = [op for op in ops if isinstance(op, NeighbourOp)]
    total = 16 * n + sum(8 * n * (2 if op.perm is None else 1) for op in windows)
    if len(windows) > 1:
        total += sum(8 * op.length(n) for op in windows)
    if len(neighbours) > 1:
        total += sum(8 * (op.indptr.size + op.indices.size) for op in neighbours)
    return total


def _check(pattern, layer) -> None:
    if not hasattr(pattern, "layer_ops") or not hasattr(pattern, "n"):
        raise ValueError(f"pattern: expected a receptive pattern (layer_ops and n), got {type(pattern).__name__}")
    if isinstance(layer, bool) or not isinstance(layer, int | np.integer) or layer < 1:
        raise ValueError(f"layer: expected an integer >= 1, got {layer!r}")


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    """The int64 concatenation of ``arrays``, without a copy when there is only one (a neighbour list at
    ``n = 2^20`` may hold 10^8 entries)."""
    if len(arrays) == 1:
        return np.ascontiguousarray(arrays[0], dtype=np.int64)
    return np.concatenate(arrays).astype(np.int64, copy=False) if arrays else np.empty(0, dtype=np.int64)


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
