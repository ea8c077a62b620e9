"""Reference random graphs for small-world comparisons: Erdos-Renyi ``G(n, p)``, ring lattices and Watts-Strogatz.

Every generator is vectorised (no Python loop over nodes or edges), seeded with ``numpy.random.default_rng(seed)``
and returns a :class:`graphs.graph.Graph`. They scale to ``n = 128k`` nodes with ``<k> ~ 20`` in seconds.
"""

from __future__ import annotations

import math

import numpy as np

from .graph import Graph
from .validation import check_bool, check_int, check_real


def _first_distinct(rng: np.random.Generator, m: int, space: int, draw) -> np.ndarray:
    """``m`` distinct keys out of ``space`` equally likely ones: the first ``m`` distinct values of an i.i.d.
    stream ``draw(rng, size)`` (a uniformly random ``m``-subset by symmetry). Collisions are rejected and the
    stream topped up; the expected number of draws is at most ``m / (1 - m / space)``."""
    stream = np.empty(0, dtype=np.int64)
    first = np.empty(0, dtype=np.int64)
    have = 0
    while have < m:
        need = m - have
        size = math.ceil(1.1 * need / max(1e-9, 1.0 - have / space)) + 16
        stream = np.concatenate([stream, draw(rng, size)])
        _, first = np.unique(stream, return_index=True)
        have = first.size
    first.sort()
    return stream[first[:m]]


def erdos_renyi(n: int, mean_degree: float, directed: bool = False, seed: int = 0) -> Graph:
    """The Erdos-Renyi random graph ``G(n, p)`` with ``p = <k> / (n - 1)``.

    Undirected: each of the ``N = n(n-1)/2`` pairs is an edge independently with probability ``p``; directed: each
    of the ``N = n(n-1)`` ordered pairs. So the number of edges is ``M ~ Binomial(N, p)`` with ``E[M] = pN``, the
    mean (out-)degree ``<k> = 2M/n`` (directed ``M/n``) has expectation ``p(n-1)`` = ``mean_degree``, and a node's
    degree is ``Binomial(n-1, p)`` (variance ``(n-1)p(1-p)``). Given ``M``, the edge set is a uniformly random
    ``M``-subset of the pairs, so ``M`` is drawn from the binomial and then ``M`` distinct pairs are drawn by
    rejection (``O(M)`` memory, never an ``n x n`` matrix); above ``N/2`` edges the non-edges are drawn instead.

    Parameters
    ----------
    n : int
        Number of nodes, at least 1.
    mean_degree : float
        Expected mean (out-)degree ``<k>``, in ``[0, n - 1]`` (``0`` for ``n = 1``).
    directed : bool, optional
        Draw ordered pairs (default ``False``: unordered).
    seed : int, optional
        Seed of ``numpy.random.default_rng``, ``>= 0``.

    Returns
    -------
    Graph

    Raises
    ------
    TypeError
        If an argument has the wrong type (``n`` or ``seed`` not an integer, ``mean_degree`` not a real number,
        ``directed`` not a bool).
    ValueError
        If ``n < 1``, ``mean_degree`` lies outside ``[0, n - 1]`` or ``seed < 0``.

    References
    ----------
    - P. Erdos and A. Renyi, "On random graphs I", Publ. Math. Debrecen 6, 290-297 (1959).
    - E. N. Gilbert, "Random graphs", Ann. Math. Statist. 30, 1141-1144 (1959).

    Examples
    --------
    >>> g = erdos_renyi(1000, 8.0, seed=1)
    >>> g.n, bool(7.5 < g.mean_degree < 8.5)
    (1000, True)
    """
    n = check_int("n", n, 1)
    mean_degree = check_real("mean_degree", mean_degree, 0.0, float(n - 1))
    directed = check_bool("directed", directed)
    seed = check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    if n == 1 or mean_degree == 0:
        return Graph.from_edges(n, [], [], bool(directed))
    p = mean_degree / (n - 1)
    ordered = n * (n - 1)
    space = ordered if directed else ordered // 2
    m = int(rng.binomial(space, p))

    def decode(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ordered pair number ``index`` in ``0..n(n-1)-1`` -> ``(u, v)`` with ``u != v``."""
        u, r = np.divmod(index, n - 1)
        return u, r + (r >= u)

    def draw(rng: np.random.Generator, size: int) -> np.ndarray:
        """Pair keys ``u*n + v`` (undirected: ``u < v``, each unordered pair from its two ordered ones)."""
        u, v = decode(rng.integers(0, ordered, size=size, dtype=np.int64))
        if not directed:
            u, v = np.minimum(u, v), np.maximum(u, v)
        return u * n + v

    if m <= space // 2:
        keys = _first_distinct(rng, m, space, draw)
    else:  # dense: draw the space - m non-edges and take the complement
        if directed:
            every = decode(np.arange(ordered, dtype=np.int64))
        else:
            every = np.triu_indices(n, 1)
        every = every[0].astype(np.int64) * n + every[1]
        keys = np.setdiff1d(every, _first_distinct(rng, space - m, space, draw), assume_unique=True)
    return Graph.from_edges(n, keys // n, keys % n, bool(directed))


def _check_lattice(n: int, k: int) -> tuple[int, int]:
    """``n >= 3`` and ``k`` even in ``[2, n - 1]``."""
    n = check_int("n", n, 3)
    k = check_int("k", k, 2, n - 1)
    if k % 2:
        raise ValueError(f"k: expected an even integer in [2, {n - 1}] (k/2 neighbours on each side), got {k}")
    return n, k


def _lattice_keys(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``u`` and ``(u + j) mod n`` for ``j = 1..k/2`` (round-major: all ``j = 1`` edges first)."""
    u = np.tile(np.arange(n, dtype=np.int64), k // 2)
    j = np.repeat(np.arange(1, k // 2 + 1, dtype=np.int64), n)
    return u, (u + j) % n


def ring_lattice(n: int, k: int) -> Graph:
    """The undirected ring lattice ``C(n, k)``: node ``u`` is linked to its ``k`` nearest neighbours on a ring,
    ``u +- 1 .. u +- k/2 (mod n)``; ``nk/2`` edges, every degree ``k``. Its clustering is ``3(k-2) / (4(k-1))`` and its
    mean path length about ``n / (2k)``.

    Parameters
    ----------
    n : int
        Number of nodes, at least 3.
    k : int
        Degree, even, ``2 <= k < n``.

    Returns
    -------
    Graph
        Undirected.

    Raises
    ------
    TypeError
        If ``n`` or ``k`` is not an integer.
    ValueError
        If ``n < 3`` or ``k`` is odd or outside ``[2, n - 1]``.

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).

    Examples
    --------
    >>> g = ring_lattice(10, 4)
    >>> g.edges, g.indices[:4].tolist()
    (20, [1, 2, 8, 9])
    """
    n, k = _check_lattice(n, k)
    u, v = _lattice_keys(n, k)
    return Graph.from_edges(n, u, v, directed=False)


def watts_strogatz(n: int, k: int, beta: float, seed: int = 0) -> Graph:
    """The Watts-Strogatz small-world graph, as
    ``networkx.watts_strogatz_graph``: start from :func:`ring_lattice` ``(n, k)``; for ``j = 1 .. k/2``, each edge
    ``(u, u + j mod n)`` is rewired with probability ``beta`` to ``(u, x)`` with ``x`` uniform among the nodes
    that are neither ``u`` nor already linked to ``u`` (the rewiring is skipped if ``u`` is linked to every other
    node). The edge count stays ``nk/2`` and the mean degree ``k``; ``beta = 0`` is the lattice, ``beta = 1`` close
    to a random graph (every node keeps at least ``k/2`` edges).

    Vectorised per round ``j`` (``k/2`` rounds): the round's rewirings are decided together against the edge set at
    the start of the round plus the new edges already accepted in it, collisions redrawn in bulk. networkx decides
    them one node at a time, so an edge removed earlier in the same round can be chosen again there, not here; the
    model is the same and the difference is ``O(beta k / n)`` per choice.

    Parameters
    ----------
    n : int
        Number of nodes, at least 3.
    k : int
        Degree of the starting lattice, even, ``2 <= k < n``.
    beta : float
        Rewiring probability in ``[0, 1]``.
    seed : int, optional
        Seed of ``numpy.random.default_rng``, ``>= 0``.

    Returns
    -------
    Graph
        Undirected, ``n k / 2`` edges.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``n < 3``, ``k`` is odd or outside ``[2, n - 1]``, ``beta`` outside ``[0, 1]`` or ``seed < 0``.

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).
    - A. Hagberg, D. Schult and P. Swart, "Exploring network structure, dynamics, and function using
      NetworkX", Proc. SciPy 2008, 11-15 (``networkx.watts_strogatz_graph``).

    Examples
    --------
    >>> g = watts_strogatz(100, 6, 0.1, seed=2)
    >>> g.edges, g.mean_degree
    (300, 6.0)
    """
    n, k = _check_lattice(n, k)
    beta = check_real("beta", beta, 0.0, 1.0)
    seed = check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    u_all, v_all = _lattice_keys(n, k)
    keys = np.sort(np.minimum(u_all, v_all) * n + np.maximum(u_all, v_all))  # current edge set, canonical u < v
    nodes = np.arange(n, dtype=np.int64)
    for j in range(1, k // 2 + 1):
        rewire = nodes[rng.random(n) < beta]
        if rewire.size == 0:
            continue
        pending, new_u, new_x = rewire, [], []
        accepted = np.empty(0, dtype=np.int64)
        while pending.size:
            x = rng.integers(0, n, size=pending.size, dtype=np.int64)
            cand = np.minimum(pending, x) * n + np.maximum(pending, x)
            bad = (x == pending) | _member(cand, keys) | np.isin(cand, accepted)
            _, first = np.unique(cand, return_index=True)  # two nodes choosing each other: the first one wins
            dup = np.ones(cand.size, dtype=bool)
            dup[first] = False
            bad |= dup
            new_u.append(pending[~bad])
            new_x.append(x[~bad])
            accepted = np.concatenate([accepted, cand[~bad]])
            pending = pending[bad]
            if pending.size:  # give up on nodes already linked to every other node
                ends = np.concatenate([keys // n, keys % n, accepted // n, accepted % n])
                pending = pending[np.bincount(ends, minlength=n)[pending] < n - 1]
        done_u = np.concatenate(new_u)
        done_v = (done_u + j) % n
        old = np.sort(np.minimum(done_u, done_v) * n + np.maximum(done_u, done_v))
        keys = np.sort(np.concatenate([keys[~_member(keys, old)], accepted]))
    return Graph.from_edges(n, keys // n, keys % n, directed=False)


def _member(values: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """``values[i] in sorted_keys`` for every ``i`` (``sorted_keys`` sorted ascending)."""
    if sorted_keys.size == 0:
        return np.zeros(values.size, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, values), sorted_keys.size - 1)
    return sorted_keys[pos] == values
