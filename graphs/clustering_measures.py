"""Exact clustering coefficients and transitivity by triangle counting, in numba.

Every measure is built from the triangles of the *underlying undirected graph* ``U`` (``u - v`` iff ``u -> v``
or ``v -> u``), stored as CSR with sorted rows, and, for directed graphs, the weights ``w_ij = a_ij + a_ji`` in
{1, 2} (the number of directed edges between ``i`` and ``j``). Per node::

    T_i = number of triangles of U through i
    t_i = sum_{triangles {i,j,k}} 2 w_ij w_jk w_ki = [(A + A^T)^3]_ii   (directed triangles, Fagiolo 2007)

Triangles are listed once each by the *forward* algorithm (Schank & Wagner 2005, "Finding, counting and listing
all triangles in large graphs", WEA, LNCS 3503:606; Latapy 2008, Theor. Comput. Sci. 407:458): orient every edge
from lower to higher ``(degree, index)``; for each node ``u`` mark its out-neighbours ``N+(u)``, and for each
``v`` in ``N+(u)`` test every ``w`` in ``N+(v)`` against the marks. Each triangle is found exactly once, from its
lowest node, and credited to its three nodes. The work is ``sum_{u -> v} d+(v) = O(m a(U))`` tests, ``a`` the
arboricity (Chiba & Nishizeki 1985, SIAM J. Comput. 14:210), ``O(m^1.5)`` at worst; in parallel over balanced
chunks of nodes with private counters (``prange``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from types import FunctionType
from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange

from .graph import Graph
from .validation import check_bool, check_instance

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
def _forward_degrees(indptr, indices, rank, order):
    """``d+(r)``: neighbours of the node of rank ``r`` (``order[r]``) that have a higher rank."""
    n = indptr.shape[0] - 1
    odeg = np.empty(n, dtype=np.int64)
    for r in prange(n):
        u = order[r]
        c = 0
        for p in range(indptr[u], indptr[u + 1]):
            if rank[indices[p]] > r:
                c += 1
        odeg[r] = c
    return odeg


@njit(parallel=True, cache=True)
def _forward_fill(indptr, indices, weights, weighted, rank, order, optr, oidx, ow):
    """The forward graph in rank numbering: ``oidx[optr[r]:optr[r+1]]`` are the higher-ranked neighbours of rank
    ``r`` (``ow``: their weights). Returns per rank the work ``d+(r) + sum_{s in N+(r)} d+(s)``."""
    n = indptr.shape[0] - 1
    for r in prange(n):
        u = order[r]
        q = optr[r]
        for p in range(indptr[u], indptr[u + 1]):
            s = rank[indices[p]]
            if s > r:
                oidx[q] = s
                if weighted:
                    ow[q] = weights[p]
                q += 1
    work = np.empty(n, dtype=np.int64)
    for r in prange(n):
        total = optr[r + 1] - optr[r]
        for p in range(optr[r], optr[r + 1]):
            s = oidx[p]
            total += optr[s + 1] - optr[s]
        work[r] = total
    return work


@njit(parallel=True, cache=True)
def _forward(optr, oidx, ow, weighted, bounds, mark):
    """Every triangle ``u < v < w`` (in rank order) once, from its first node ``u``: mark ``N+(u)`` with the CSR
    position of ``u -> w`` (+1), then test every ``w`` in ``N+(v)`` for each ``v`` in ``N+(u)``. Adds 1 to ``T``
    and ``2 w_uv w_vw w_uw`` to ``t`` of all three nodes. Chunk ``c`` handles ranks ``bounds[c]:bounds[c+1]``
    with its own counters and marks ``mark[c]`` (zeros; no races); the chunks are summed at the end."""
    n = optr.shape[0] - 1
    chunks = bounds.shape[0] - 1
    tri = np.zeros((chunks, n), dtype=np.int64)
    dtri = np.zeros((chunks if weighted else 0, n), dtype=np.int64)
    for c in prange(chunks):
        t = tri[c]
        mk = mark[c]
        for u in range(bounds[c], bounds[c + 1]):
            u0, u1 = optr[u], optr[u + 1]
            if u1 - u0 < 2:
                continue
            for p in range(u0, u1):
                mk[oidx[p]] = p + 1  # marks left by earlier nodes point before u0
            cu = 0
            for p in range(u0, u1):
                v = oidx[p]
                cv = 0
                for q in range(optr[v], optr[v + 1]):
                    w = oidx[q]
                    r = mk[w] - 1
                    if r >= u0:
                        cv += 1
                        t[w] += 1
                        if weighted:
                            prod = 2 * ow[p] * ow[q] * ow[r]
                            dtri[c, u] += prod
                            dtri[c, v] += prod
                            dtri[c, w] += prod
                t[v] += cv
                cu += cv
            t[u] += cu
    total = np.zeros(n, dtype=np.int64)
    dtotal = np.zeros(n if weighted else 0, dtype=np.int64)
    for i in prange(n):
        s = 0
        for c in range(chunks):
            s += tri[c, i]
        total[i] = s
        if weighted:
            d = 0
            for c in range(chunks):
                d += dtri[c, i]
            dtotal[i] = d
    return total, dtotal


#: bytes the per-chunk counters and marks of :func:`_forward` may take (fewer chunks, down to 1, above it)
_CHUNK_BUDGET = 1 << 30


def _triangle_counts(indptr, indices, weights, weighted) -> tuple[np.ndarray, np.ndarray]:
    """``T`` and (if ``weighted``) ``t`` per node of the undirected CSR graph, by forward triangle counting with
    the nodes renumbered by ``(degree, index)`` (the orientation order; it also packs the marks of low-degree
    nodes, which are most of the work, together)."""
    n = indptr.shape[0] - 1
    order = np.argsort(np.diff(indptr), kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    optr = np.zeros(n + 1, dtype=np.int64)
    m = indices.shape[0]
    np.cumsum(_kernel(_forward_degrees, m)(indptr, indices, rank, order), out=optr[1:])
    small = n < 2**31 and optr[-1] < 2**31 - 1
    oidx = np.empty(optr[-1], dtype=np.int32 if small else np.int64)
    ow = np.empty(optr[-1] if weighted else 0, dtype=np.int64)
    work = _kernel(_forward_fill, m)(indptr, indices, weights, weighted, rank, order, optr, oidx, ow)
    per_chunk = n * (8 * (2 if weighted else 1) + oidx.itemsize)
    threads = numba.get_num_threads() if m >= _PARALLEL_MIN_EDGES else 1
    chunks = int(max(1, min(threads, _CHUNK_BUDGET // max(per_chunk, 1), n)))
    cum = np.cumsum(work)
    cuts = np.searchsorted(cum, np.linspace(0, cum[-1], chunks + 1)[1:-1], side="right") if n else []
    bounds = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    mark = np.zeros((chunks, n), dtype=oidx.dtype)
    tri, dtri = _kernel(_forward, m)(optr, oidx, ow, weighted, bounds, mark)
    return tri[rank], (dtri[rank] if weighted else dtri)


# --------------------------------------------------------------------------------------------------- counts

#: graphs with fewer stored edges run the serial twins of the kernels: a parallel region costs a thread wake-up
#: that dwarfs the work on small graphs and stalls for a whole time slice on a busy machine
_PARALLEL_MIN_EDGES = 1 << 16


def _serial_twin(kernel):
    """The same kernel compiled without ``parallel=True`` (``prange`` runs as ``range``), cached under its own name."""
    fn = kernel.py_func
    twin = FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial", fn.__defaults__, fn.__closure__)
    twin.__qualname__ = fn.__qualname__ + "_serial"
    twin.__doc__ = fn.__doc__
    return njit(cache=True)(twin)


_SERIAL = {k: _serial_twin(k) for k in (_union_sizes, _union_fill, _forward_degrees, _forward_fill, _forward)}


def _kernel(kernel, edges: int):
    return kernel if edges >= _PARALLEL_MIN_EDGES else _SERIAL[kernel]


class _Counts(NamedTuple):
    degree: np.ndarray  # k_i: degree in the underlying undirected graph
    triangles: np.ndarray  # T_i: triangles of the underlying undirected graph through i
    directed: bool
    dtriangles: np.ndarray | None  # t_i: directed triangles (Fagiolo), directed graphs only
    dtotal: np.ndarray | None  # in-degree + out-degree
    dbidir: np.ndarray | None  # reciprocated neighbours |pred(i) ∩ succ(i)|


def _counts(graph: Graph, directed_triangles: bool) -> _Counts:
    """Triangle counts of ``graph``; the directed ones (``t_i``) only if asked and the graph is directed."""
    check_instance("graph", graph, Graph, "graphs.Graph")
    if not graph.directed:
        indptr, indices = graph.indptr, graph.indices
        weights = np.empty(0, dtype=np.int64)
        bidir = None
    else:
        rev = graph.reverse()
        m = graph.indices.shape[0]
        sizes, bidir = _kernel(_union_sizes, m)(graph.indptr, graph.indices, rev.indptr, rev.indices)
        indptr = np.zeros(graph.n + 1, dtype=np.int64)
        np.cumsum(sizes, out=indptr[1:])
        indices, weights = _kernel(_union_fill, m)(graph.indptr, graph.indices, rev.indptr, rev.indices, indptr)
    weighted = bool(graph.directed and directed_triangles)
    tri, dtri = _triangle_counts(indptr, indices, weights, weighted)
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
    """Mean of ``local`` over every node (``count_zeros``) or over the ``valid`` ones."""
    if count_zeros:
        return float(local.mean())
    return float(local[valid].mean()) if valid.any() else 0.0


def _transitivity(counts: _Counts) -> float:
    """Closed over connected triples of the undirected triangle counts."""
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

    Parameters
    ----------
    graph : Graph

    Returns
    -------
    numpy.ndarray
        ``T_i`` for every node, int64.

    Raises
    ------
    TypeError
        If ``graph`` is not a :class:`graphs.Graph`.

    References
    ----------
    - T. Schank and D. Wagner, "Finding, counting and listing all triangles in large graphs, an experimental
      study", WEA 2005, LNCS 3503, 606-609.

    Examples
    --------
    >>> from graphs import Graph
    >>> triangles(Graph.from_edges(4, [0, 1, 2, 2], [1, 2, 0, 3], directed=False)).tolist()
    [1, 1, 1, 0]
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

    Parameters
    ----------
    graph : Graph

    Returns
    -------
    numpy.ndarray
        ``C_i`` for every node, float64.

    Raises
    ------
    TypeError
        If ``graph`` is not a :class:`graphs.Graph`.

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).
    - G. Fagiolo, "Clustering in complex directed networks", Phys. Rev. E 76, 026107 (2007).

    Examples
    --------
    >>> from graphs import Graph
    >>> local_clustering(Graph.from_edges(4, [0, 1, 2, 2], [1, 2, 0, 3], directed=False)).round(3).tolist()
    [1.0, 1.0, 0.333, 0.0]
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

    Parameters
    ----------
    graph : Graph
    count_zeros : bool, optional
        Average over all nodes (``True``, the default) or only over those with defined clustering.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``graph`` is not a :class:`graphs.Graph` or ``count_zeros`` not a bool.

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).
    - G. Fagiolo, "Clustering in complex directed networks", Phys. Rev. E 76, 026107 (2007).

    Examples
    --------
    >>> from graphs.generators import ring_lattice
    >>> average_clustering(ring_lattice(20, 4))  # 3 (k - 2) / (4 (k - 1)) = 0.5
    0.5
    """
    check_instance("graph", graph, Graph, "graphs.Graph")
    count_zeros = check_bool("count_zeros", count_zeros)
    local, valid = _local(_counts(graph, directed_triangles=True))
    return _average(local, valid, bool(count_zeros))


def transitivity(graph: Graph) -> float:
    """Global transitivity of the underlying undirected graph (Newman 2003, SIAM Rev. 45:167; ``nx.transitivity``)::

        T = 3 x (number of triangles) / (number of connected triples) = sum_i T_i / sum_i k_i (k_i - 1) / 2

    0.0 when there is no connected triple.

    Parameters
    ----------
    graph : Graph

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``graph`` is not a :class:`graphs.Graph`.

    References
    ----------
    - M. E. J. Newman, "The structure and function of complex networks", SIAM Rev. 45, 167-256 (2003).

    Examples
    --------
    >>> from graphs import Graph
    >>> transitivity(Graph.from_edges(4, [0, 1, 2, 2], [1, 2, 0, 3], directed=False))
    0.6
    """
    return _transitivity(_counts(graph, directed_triangles=False))


@dataclass(frozen=True)
class ClusteringResult:
    """Clustering summaries of a graph, as returned by :func:`clustering`.

    Attributes
    ----------
    average : float
        Mean local clustering, nodes with undefined clustering counted as 0 (networkx's convention).
    average_nonzero_degree : float
        Mean over the nodes with defined clustering (igraph's convention).
    transitivity : float
        Global transitivity of the underlying undirected graph.
    directed : bool
        Whether the averages use the directed (Fagiolo 2007) local clustering.

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).

    Examples
    --------
    >>> from graphs import Graph, clustering
    >>> result = clustering(Graph.from_edges(4, [0, 1, 2, 2], [1, 2, 0, 3], directed=False))
    >>> round(result.average, 4), round(result.transitivity, 4), result.directed
    (0.5833, 0.6, False)
    """

    average: float
    average_nonzero_degree: float
    transitivity: float
    directed: bool

    def to_dict(self) -> dict:
        """Return the summaries as a JSON-ready ``dict``."""
        return asdict(self)


def clustering(graph: Graph) -> ClusteringResult:
    """Compute every clustering summary of ``graph`` from one triangle count.

    See :func:`average_clustering` and :func:`transitivity` for the definitions.

    Parameters
    ----------
    graph : Graph

    Returns
    -------
    ClusteringResult

    Raises
    ------
    TypeError
        If ``graph`` is not a :class:`graphs.Graph`.

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).

    Examples
    --------
    >>> from graphs import Graph
    >>> clustering(Graph.from_edges(3, [0, 1], [1, 2], directed=False)).to_dict()
    {'average': 0.0, 'average_nonzero_degree': 0.0, 'transitivity': 0.0, 'directed': False}
    """
    counts = _counts(graph, directed_triangles=True)
    local, valid = _local(counts)
    return ClusteringResult(
        average=_average(local, valid, True),
        average_nonzero_degree=_average(local, valid, False),
        transitivity=_transitivity(counts),
        directed=bool(graph.directed),
    )
