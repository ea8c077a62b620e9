"""Degree-preserving randomisation by edge switching (Maslov & Sneppen 2002, Science 296:910).

Each step picks two edges ``a -> b`` and ``c -> d`` and rewires them to ``a -> d`` and ``c -> b`` (undirected:
``a - d, c - b`` or ``a - c, b - d`` at random), rejecting switches that would create a self-loop or a duplicate
edge. In- and out-degrees (undirected: degrees) are preserved exactly; after about ``10 m`` accepted switches the
graph is a uniform sample of the graphs with that degree sequence for practical purposes, the random reference of
the small-world coefficients.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .graph import Graph
from .validation import check_instance, check_int, check_real


@njit(inline="always")
def _find(nbr, indptr, u, v):
    """Position of ``v`` in ``u``'s neighbour row, or -1 (rows are short: a scan beats hashing)."""
    for p in range(indptr[u], indptr[u + 1]):
        if nbr[p] == v:
            return p
    return -1


@njit(cache=True)
def _switch(src, dst, indptr, nbr, attempts, undirected, seed):
    """Switch edges in place: ``src/dst`` the edge list, ``indptr/nbr`` the neighbour rows (out-rows when
    directed, both directions when not). Degrees never change, so the rows keep their lengths."""
    np.random.seed(seed)  # noqa: NPY002 - numba's seeded generator, the one njit code can use
    m = src.size
    accepted = 0
    for _ in range(attempts):
        e1 = np.random.randint(m)  # noqa: NPY002
        e2 = np.random.randint(m)  # noqa: NPY002
        if e1 == e2:
            continue
        a, b, c, d = src[e1], dst[e1], src[e2], dst[e2]
        if undirected and np.random.random() < 0.5:  # noqa: NPY002 - the other pairing: a - c, b - d
            c, d = d, c
        if a == d or c == b or _find(nbr, indptr, a, d) >= 0 or _find(nbr, indptr, c, b) >= 0:
            continue
        nbr[_find(nbr, indptr, a, b)] = d
        nbr[_find(nbr, indptr, c, d)] = b
        if undirected:
            nbr[_find(nbr, indptr, b, a)] = c
            nbr[_find(nbr, indptr, d, c)] = a
        dst[e1] = d
        src[e2] = c
        dst[e2] = b
        accepted += 1
    return accepted


def degree_preserving_random(graph: Graph, switches_per_edge: float = 10.0, seed: int = 0) -> Graph:
    """Return a random graph with the same degree sequence, by ``switches_per_edge * m`` switch attempts.

    Parameters
    ----------
    graph : Graph
        The graph to randomise (directed: in- and out-degrees are kept; undirected: degrees).
    switches_per_edge : float, optional
        Switch attempts per edge (default 10), a positive number.
    seed : int, optional
        Seed of numba's generator, ``>= 0``.

    Returns
    -------
    Graph
        Same ``n``, degree sequence and directedness.

    Raises
    ------
    TypeError
        If ``graph`` is not a :class:`graphs.Graph` or an argument has the wrong type.
    ValueError
        If ``switches_per_edge <= 0`` or ``seed < 0``.

    References
    ----------
    - S. Maslov and K. Sneppen, "Specificity and stability in topology of protein networks", Science 296,
      910-913 (2002).

    Examples
    --------
    >>> from graphs.generators import ring_lattice
    >>> g = ring_lattice(20, 4)
    >>> r = degree_preserving_random(g, seed=1)
    >>> r.edges == g.edges and bool((r.out_degree == g.out_degree).all())
    True
    """
    check_instance("graph", graph, Graph, "graphs.Graph")
    switches_per_edge = check_real("switches_per_edge", switches_per_edge, 0.0, low_open=True)
    seed = check_int("seed", seed, 0)
    rows = np.repeat(np.arange(graph.n, dtype=np.int64), graph.out_degree)
    src, dst = rows.copy(), graph.indices.copy()
    if not graph.directed:
        keep = src < dst
        src, dst = src[keep], dst[keep]
    if src.size >= 2:
        attempts = int(switches_per_edge * src.size)
        _switch(src, dst, graph.indptr.copy(), graph.indices.copy(), attempts, not graph.directed, seed % 2**32)
    return Graph.from_edges(graph.n, src, dst, graph.directed)
