"""Exact clustering coefficients and transitivity by triangle counting, in numba.

Every measure is built from one pass over the edges of the *underlying undirected graph* ``U`` (``u - v`` iff
``u -> v`` or ``v -> u``), stored as CSR with sorted rows. For each edge ``{i, j}`` of ``U`` with ``i < j`` the
common neighbourhood is found by a merge of the two sorted rows::

    c_ij = |N(i) ∩ N(j)|,        e_ij = sum_{k in N(i) ∩ N(j)} w_ik w_jk

where ``w_ij = a_ij + a_ji`` in {1, 2} is the number of directed edges between ``i`` and ``j`` (directed graphs
only). Both are symmetric in ``i, j``, so each is computed once per undirected edge, and a second pass sums them
per node (the mirror entry ``(j, i)`` is found by binary search in row ``j``)::

    T_i = 1/2 sum_{j in N(i)} c_ij                      (undirected triangles through i)
    t_i = sum_{j in N(i)} w_ij e_ij = [(A + A^T)^3]_ii   (directed triangles through i, Fagiolo 2007)

Both passes run in parallel over nodes (``prange``). The work is ``O(sum_{i-j} (k_i + k_j))`` merge steps.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .graph import Graph

__all__ = [
    "ClusteringResult",
    "average_clustering",
    "clustering",
    "local_clustering",
    "transitivity",
    "triangles",
]


# --------------------------------------------------------------------------------------------------- kernels


@njit(parallel=True, cache=True)
def _union_sizes(out_ptr, out_idx, in_ptr, in_idx):
    """Per node: ``|succ(i) ∪ pred(i)|`` (the degree in U) and ``|succ(i) ∩ pred(i)|`` (reciprocated edges)."""
    n = out_ptr.shape[0] - 1
    sizes = np.empty(n, dtype=np.int64)
    bidir = np.empty(n, dtype=np.int64)
    for i in prange(n):
        a, a_end = out_ptr[i], out_ptr[i + 1]
        b, b_end = in_ptr[i], in_ptr[i + 1]
        both = 0
        while a < a_end and b < b_end:
            x = out_idx[a]
            y = in_idx[b]
            if x == y:
                both += 1
                a += 1
                b += 1
            elif x < y:
                a += 1
            else:
                b += 1
        bidir[i] = both
        sizes[i] = (out_ptr[i + 1] - out_ptr[i]) + (in_ptr[i + 1] - in_ptr[i]) - both
    return sizes, bidir


@njit(parallel=True, cache=True)
def _union_fill(out_ptr, out_idx, in_ptr, in_idx, indptr):
    """Rows of U (sorted merge of out- and in-row) and weights ``w_ij = a_ij + a_ji`` in {1, 2}."""
    n = out_ptr.shape[0] - 1
    m = indptr[n]
    indices = np.empty(m, dtype=np.int64)
    weights = np.empty(m, dtype=np.int64)
    for i in prange(n):
        a, a_end = out_ptr[i], out_ptr[i + 1]
        b, b_end = in_ptr[i], in_ptr[i + 1]
        p = indptr[i]
        while a < a_end or b < b_end:
            if b == b_end or (a < a_end and out_idx[a] < in_idx[b]):
                indices[p] = out_idx[a]
                weights[p] = 1
                a += 1
            elif a == a_end or in_idx[b] < out_idx[a]:
                indices[p] = in_idx[b]
                weights[p] = 1
                b += 1
            else:
                indices[p] = out_idx[a]
                weights[p] = 2
                a += 1
                b += 1
            p += 1
    return indices, weights


@njit(parallel=True, cache=True)
def _edge_common(indptr, indices, weights, weighted):
    """For every CSR position ``p`` of an edge ``i - j`` with ``i < j``: ``common[p] = c_ij`` and, if
    ``weighted``, ``wcommon[p] = e_ij`` (see the module docstring). Positions with ``j < i`` are left 0."""
    n = indptr.shape[0] - 1
    m = indices.shape[0]
    common = np.zeros(m, dtype=np.int64)
    wcommon = np.zeros(m if weighted else 0, dtype=np.int64)
    for i in prange(n):
        i0, i1 = indptr[i], indptr[i + 1]
        for p in range(i0, i1):
            j = indices[p]
            if j < i:
                continue
            a, b, b_end = i0, indptr[j], indptr[j + 1]
            c = 0
            e = 0
            while a < i1 and b < b_end:
                x = indices[a]
                y = indices[b]
                if x == y:
                    c += 1
                    if weighted:
                        e += weights[a] * weights[b]
                    a += 1
                    b += 1
                elif x < y:
                    a += 1
                else:
                    b += 1
            common[p] = c
            if weighted:
                wcommon[p] = e
    return common, wcommon


@njit(cache=True)
def _position(indices, lo, hi, x):
    """Index of ``x`` in the sorted run ``indices[lo:hi]`` (``x`` must be present)."""
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if indices[mid] <= x:
            lo = mid
        else:
            hi = mid
    return lo


@njit(parallel=True, cache=True)
def _node_sums(indptr, indices, weights, weighted, common, wcommon):
    """``T_i = 1/2 sum_j c_ij`` and, if ``weighted``, ``t_i = sum_j w_ij e_ij``."""
    n = indptr.shape[0] - 1
    tri = np.empty(n, dtype=np.int64)
    dtri = np.zeros(n if weighted else 0, dtype=np.int64)
    for i in prange(n):
        t = 0
        d = 0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            q = p if j > i else _position(indices, indptr[j], indptr[j + 1], i)
            t += common[q]
            if weighted:
                d += weights[p] * wcommon[q]
        tri[i] = t // 2
        if weighted:
            dtri[i] = d
    return tri, dtri


# --------------------------------------------------------------------------------------------------- counts


class _Counts(NamedTuple):
    degree: np.ndarray  # k_i: degree in the underlying undirected graph
    triangles: np.ndarray  # T_i: triangles of the underlying undirected graph through i
    directed: bool
    dtriangles: np.ndarray | None  # t_i: directed triangles (Fagiolo), directed graphs only
    dtotal: np.ndarray | None  # in-degree + out-degree
    dbidir: np.ndarray | None  # reciprocated neighbours |pred(i) ∩ succ(i)|


def _check_graph(graph) -> None:
    if not isinstance(graph, Graph):
        raise ValueError(f"graph: expected a graphs.graph.Graph, got {type(graph).__name__}")


def _counts(graph: Graph, directed_triangles: bool) -> _Counts:
    """Triangle counts of ``graph``; the directed ones (``t_i``) only if asked and the graph is directed."""
    _check_graph(graph)
    if not graph.directed:
        indptr, indices = graph.indptr, graph.indices
        weights = np.empty(0, dtype=np.int64)
        bidir = None
    else:
        rev = graph.reverse()
        sizes, bidir = _union_sizes(graph.indptr, graph.indices, rev.indptr, rev.indices)
        indptr = np.zeros(graph.n + 1, dtype=np.int64)
        np.cumsum(sizes, out=indptr[1:])
        indices, weights = _union_fill(graph.indptr, graph.indices, rev.indptr, rev.indices, indptr)
    weighted = bool(graph.directed and directed_triangles)
    common, wcommon = _edge_common(indptr, indices, weights, weighted)
    tri, dtri = _node_sums(indptr, indices, weights, weighted, common, wcommon)
    degree = np.diff(indptr)
    if not weighted:
        return _Counts(degree, tri, False, None, None, None)
    dtotal = np.diff(graph.indptr) + np.diff(rev.indptr)
    return _Counts(degree, tri, True, dtri, dtotal, bidir)


def _local(counts: _Counts) -> tuple[np.ndarray, np.ndarray]:
    """Local clustering and the mask of nodes with a nonzero denominator."""
    if counts.directed:
        num = counts.dtriangles
        den = 2 * (counts.dtotal * (counts.dtotal - 1) - 2 * counts.dbidir)
    else:
        k = counts.degree
        num = 2 * counts.triangles
        den = k * (k - 1)
    valid = den > 0
    local = np.zeros(num.shape[0], dtype=np.float64)
    np.divide(num, den, out=local, where=valid)
    return local, valid


def _average(local: np.ndarray, valid: np.ndarray, count_zeros: bool) -> float:
    if count_zeros:
        return float(local.mean())
    return float(local[valid].mean()) if valid.any() else 0.0


def _transitivity(counts: _Counts) -> float:
    k = counts.degree
    triads = int((k * (k - 1)).sum())  # 2 x connected triples
    closed = 2 * int(counts.triangles.sum())  # 2 x 3 x triangles
    return closed / triads if triads else 0.0


# --------------------------------------------------------------------------------------------------- public API


def triangles(graph: Graph) -> np.ndarray:
    """``T_i``: number of triangles through each node of the underlying undirected graph (int64, length ``n``).

    ``T_i = 1/2 sum_{j in N(i)} |N(i) ∩ N(j)|``, with ``N`` the neighbourhoods of the undirected graph (edge
    directions are ignored). Equals ``nx.triangles`` on ``graph.to_networkx().to_undirected()``; ``T.sum() // 3``
    is the number of distinct triangles.
    """
    return _counts(graph, directed_triangles=False).triangles


def local_clustering(graph: Graph) -> np.ndarray:
    """Local clustering coefficient of every node (float64, length ``n``), as ``nx.clustering``.

    Undirected (Watts & Strogatz 1998, Nature 393:440)::

        C_i = 2 T_i / (k_i (k_i - 1)),    0 if k_i < 2

    Directed (Fagiolo 2007, Phys. Rev. E 76:026107; the networkx DiGraph definition), with ``A`` the adjacency
    matrix, ``d_i^tot = d_i^in + d_i^out`` and ``d_i^<->`` the number of reciprocated neighbours::

        C_i = [(A + A^T)^3]_ii / (2 (d_i^tot (d_i^tot - 1) - 2 d_i^<->)),    0 if the denominator is 0

    The numerator counts every directed triangle through ``i`` (each of its up to 8 orientations separately),
    the denominator all the triangles ``i`` could form given its degrees.
    """
    local, _ = _local(_counts(graph, directed_triangles=True))
    return local


def average_clustering(graph: Graph, count_zeros: bool = True) -> float:
    """Mean local clustering :func:`local_clustering` (directed definition for directed graphs).

    ``count_zeros=True``: the mean over all ``n`` nodes, nodes with ``k_i < 2`` counting as 0 (networkx
    ``nx.average_clustering``; Watts & Strogatz 1998). ``count_zeros=False``: the mean over the nodes whose
    clustering is defined, i.e. ``k_i >= 2`` (undirected) or a nonzero denominator (directed): igraph's
    ``transitivity_avglocal_undirected(mode="nan")`` convention, and *not* networkx's ``count_zeros=False``
    (which drops every node with ``C_i = 0``). 0.0 when no node is left.
    """
    _check_graph(graph)
    if not isinstance(count_zeros, bool | np.bool_):
        raise ValueError(f"count_zeros: expected a bool, got {count_zeros!r}")
    local, valid = _local(_counts(graph, directed_triangles=True))
    return _average(local, valid, bool(count_zeros))


def transitivity(graph: Graph) -> float:
    """Global transitivity of the underlying undirected graph (Newman 2003, SIAM Rev. 45:167; ``nx.transitivity``)::

        T = 3 x (number of triangles) / (number of connected triples) = sum_i T_i / sum_i k_i (k_i - 1) / 2

    0.0 when there is no connected triple.
    """
    return _transitivity(_counts(graph, directed_triangles=False))


@dataclass(frozen=True)
class ClusteringResult:
    """``average``: mean local clustering, nodes with undefined clustering counted as 0 (networkx);
    ``average_nonzero_degree``: the mean over nodes with defined clustering (igraph); ``transitivity``: global
    transitivity of the underlying undirected graph; ``directed``: whether the averages use the directed
    (Fagiolo 2007) local clustering."""

    average: float
    average_nonzero_degree: float
    transitivity: float
    directed: bool

    def to_dict(self) -> dict:
        return asdict(self)


def clustering(graph: Graph) -> ClusteringResult:
    """All clustering summaries of ``graph`` from one triangle count (see :func:`average_clustering` and
    :func:`transitivity` for the definitions)."""
    counts = _counts(graph, directed_triangles=True)
    local, valid = _local(counts)
    return ClusteringResult(
        average=_average(local, valid, True),
        average_nonzero_degree=_average(local, valid, False),
        transitivity=_transitivity(counts),
        directed=bool(graph.directed),
    )
