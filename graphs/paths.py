"""Shortest-path lengths by bit-parallel multi-source BFS: exact over all sources, or from sampled sources.

Breadth-first search from a slab of ``64 W`` sources at once is the reachability engine on a static graph: one
round ORs each node's in-neighbours' bitsets into its own (self included), so after round ``d`` bit ``s`` of row
``v`` says ``dist(s, v) <= d``, and the pairs that appear in round ``d`` are at distance exactly ``d``. A round
costs ``(m + n) W`` word operations for ``m`` edges, so all-pairs distances cost ``O(diameter (m + n) n / 64)``.

Disconnected graphs: the average is taken inside the largest strongly connected component (directed; shortest
paths between two of its nodes never leave it) or connected component (undirected), and the fraction of ordered
pairs of the whole graph that cannot reach each other is reported next to it, never an infinite mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from tqdm.auto import tqdm

from . import kernels
from .graph import Graph
from .memory import DEFAULT_MAX_MEMORY, parse_bytes, words_per_slab
from .ops import NeighbourOp
from .reachability import _quiet, _seed
from .validation import check_bool, check_instance, check_int


@dataclass(frozen=True)
class PathLengths:
    """Shortest-path statistics of a graph, as returned by :func:`path_lengths`.

    Attributes
    ----------
    mean : float
        Characteristic path length ``L``: the mean of ``dist(s, v)`` over ordered pairs ``s != v`` of the component.
    pairs : numpy.ndarray
        ``pairs[d]``: ordered pairs of the component at distance ``d``, ``d = 0..diameter`` (``pairs[0] = 0``);
        from the sampled sources only when ``method == "sampled"``.
    diameter : int
        Largest distance seen.
    method : str
        ``"exact"`` or ``"sampled"``.
    sources : int
        Number of BFS sources in the component.
    component : str
        Which component the statistics cover.
    component_size : int
        Its number of nodes.
    unreachable_fraction : float
        Share of the ordered pairs of the whole graph with no path between them.
    directed : bool
        Whether the graph is directed.
    ci : tuple of float or None
        95% confidence interval of ``mean`` (sampled runs with at least two sources).

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).

    Examples
    --------
    >>> from graphs import Graph, path_lengths
    >>> result = path_lengths(Graph.from_edges(4, [0, 1, 2], [1, 2, 3], directed=False))  # a path of 4 nodes
    >>> round(result.mean, 4), result.diameter, result.pairs.tolist()
    (1.6667, 3, [0, 6, 4, 2])
    """

    mean: float
    pairs: np.ndarray = field(repr=False)
    diameter: int
    method: str
    sources: int
    component: str
    component_size: int
    unreachable_fraction: float
    directed: bool
    ci: tuple[float, float] | None = None

    @property
    def distribution(self) -> np.ndarray:
        """Share of the component's ordered pairs at each distance ``d = 0..diameter``."""
        total = self.pairs.sum()
        return self.pairs / total if total else self.pairs.astype(float)

    def to_dict(self) -> dict:
        """Return the statistics as a JSON-ready ``dict`` (``distribution`` in place of ``pairs``)."""
        d = {
            "mean": self.mean,
            "method": self.method,
            "sources": self.sources,
            "diameter": self.diameter,
            "distribution": [float(x) for x in self.distribution],
            "component": self.component,
            "component_size": self.component_size,
            "unreachable_fraction": self.unreachable_fraction,
            "directed": self.directed,
        }
        if self.ci is not None:
            d["ci"] = list(self.ci)
        return d


def giant_component(graph: Graph) -> np.ndarray:
    """Return the nodes of the largest strongly connected (directed) or connected (undirected) component.

    Parameters
    ----------
    graph : Graph

    Returns
    -------
    numpy.ndarray
        Sorted node indices (int64); ties go to the component scipy labels first.

    Raises
    ------
    TypeError
        If ``graph`` is not a :class:`graphs.Graph`.

    References
    ----------
    - M. E. J. Newman, *Networks*, 2nd ed., Oxford University Press, 2018, section 6.12 (components).
    - D. J. Pearce, "An improved algorithm for finding the strongly connected components of a directed graph",
      Technical report, Victoria University of Wellington (2005) (the algorithm of
      ``scipy.sparse.csgraph.connected_components``).

    Examples
    --------
    >>> from graphs import Graph
    >>> giant_component(Graph.from_edges(5, [0, 1, 3], [1, 2, 4], directed=False)).tolist()
    [0, 1, 2]
    """
    check_instance("graph", graph, Graph, "graphs.Graph")
    _, labels = connected_components(graph.to_scipy(), directed=graph.directed, connection="strong")
    sizes = np.bincount(labels)
    return np.flatnonzero(labels == np.argmax(sizes))


def _bfs_operator(graph: Graph, order: np.ndarray) -> NeighbourOp:
    """In-neighbours plus self of every node, in the relabelled order ``order`` (new index k = old node order[k])."""
    rank = np.empty(graph.n, dtype=np.int64)
    rank[order] = np.arange(graph.n, dtype=np.int64)
    rows = np.repeat(np.arange(graph.n, dtype=np.int64), graph.out_degree)
    src, dst = rank[rows], rank[graph.indices]
    mat = sp.csr_array((np.ones(src.size, dtype=bool), (dst, src)), shape=(graph.n, graph.n))
    mat = (mat + sp.eye_array(graph.n, dtype=bool, format="csr")).tocsr()
    mat.sort_indices()
    return NeighbourOp(mat.indptr.astype(np.int64), mat.indices.astype(np.int64))


def path_lengths(
    graph: Graph,
    *,
    sources: int | None = None,
    seed: int = 0,
    max_memory: int | str = DEFAULT_MAX_MEMORY,
    progress: bool | None = None,
) -> PathLengths:
    """Average shortest-path length and distance distribution in the giant component of ``graph``.

    Breadth-first search runs from 64 sources per machine word at once. ``sources=None``: exact, BFS from every
    node. ``sources=K``: BFS from ``K`` nodes drawn uniformly (seeded) from the giant component; every source there
    reaches the same ``g - 1`` nodes, so ``L`` is the mean of the per-source means and its 95% confidence interval
    is ``mean +- 1.96 sd / sqrt(K)`` (finite-population corrected). The unreachable fraction is exact in exact mode
    and estimated from ``K`` uniform sources otherwise.

    Parameters
    ----------
    graph : Graph
        Directed (the giant strongly connected component is used) or undirected (the giant component).
    sources : int or None, optional
        ``None`` for the exact mean, else the number of sampled sources, ``1 <= sources <= n``.
    seed : int, optional
        Seed of the sampled sources.
    max_memory : int or str, optional
        Bound on the bitset memory (bytes, or a size such as ``"2GiB"``).
    progress : bool or None, optional
        Show a progress bar (``None``: only on a terminal).

    Returns
    -------
    PathLengths

    Raises
    ------
    TypeError
        If ``graph`` is not a :class:`graphs.Graph`, ``sources`` is neither ``None`` nor an integer, ``seed`` is not
        an integer, ``max_memory`` is not a size or ``progress`` is neither a bool nor ``None``.
    ValueError
        If ``sources`` lies outside ``[1, n]``, ``seed < 0`` or ``max_memory`` is not a size.
    MemoryError
        If the sampled sources do not fit into ``max_memory``.

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).

    Examples
    --------
    >>> from graphs.generators import ring_lattice
    >>> result = path_lengths(ring_lattice(12, 4))
    >>> round(result.mean, 4), result.diameter, result.unreachable_fraction
    (1.9091, 3, 0.0)
    """
    check_instance("graph", graph, Graph, "graphs.Graph")
    n = graph.n
    if sources is not None:
        sources = check_int("sources", sources, 1, n)
    seed = check_int("seed", seed, 0)
    max_memory = parse_bytes(max_memory)
    check_bool("progress", progress, none=True)
    giant = giant_component(graph)
    g = giant.size
    order = np.concatenate([giant, np.setdiff1d(np.arange(n), giant, assume_unique=True)])
    op = _bfs_operator(graph, order)
    kind = "giant strongly connected component" if graph.directed else "giant connected component"
    if sources is None:
        return _exact(graph, op, g, kind, max_memory, progress)
    return _sampled(graph, op, g, kind, sources, seed, max_memory, progress)


def _rounds(op: NeighbourOp, bits: np.ndarray, limit: int):
    """Yield ``bits`` after each BFS round until a round adds nothing."""
    nxt = np.empty_like(bits)
    for _ in range(limit):
        op.apply(bits, nxt, accumulate=False)
        bits, nxt = nxt, bits
        yield bits


def _exact(graph, op, g, kind, max_memory, progress) -> PathLengths:
    n = graph.n
    n_words = words_per_slab(n, n, max_memory)
    per_slab = 64 * n_words
    bits = np.empty((n, n_words), dtype=np.uint64)
    giant_pairs: list[int] = [0]  # giant_pairs[d]: ordered giant pairs (s, v) at distance d
    reachable = 0
    starts = list(range(0, n, per_slab))
    for s0 in tqdm(starts, unit="slab", desc="path lengths", disable=_quiet(progress), leave=False):
        s1 = min(n, s0 + per_slab)
        _seed(bits, np.arange(s0, s1, dtype=np.int64))
        in_giant = max(0, min(s1, g) - s0)  # the slab's sources inside the giant component come first
        before_all, before_giant = s1 - s0, in_giant
        for d, state in enumerate(_rounds(op, bits, n), start=1):
            counts = kernels.row_popcounts(state)
            now_all = int(counts.sum())
            now_giant = int(_giant_sources_popcount(state[:g], in_giant)) if in_giant else 0
            while len(giant_pairs) <= d:
                giant_pairs.append(0)
            giant_pairs[d] += now_giant - before_giant
            if now_all == before_all:
                break
            before_all, before_giant = now_all, now_giant
        reachable += before_all - (s1 - s0)
    pairs = np.array(giant_pairs, dtype=np.int64)
    last = int(np.flatnonzero(pairs)[-1]) if pairs.any() else 0
    pairs = pairs[: last + 1]
    total = pairs.sum()
    mean = float(np.arange(pairs.size) @ pairs / total) if total else 0.0
    unreachable = 1.0 - reachable / (n * (n - 1)) if n > 1 else 0.0
    return PathLengths(mean, pairs, last, "exact", n, kind, g, unreachable, graph.directed)


def _giant_sources_popcount(rows: np.ndarray, in_giant: int) -> int:
    """Set bits among the first ``in_giant`` seeds of the slab, over the given rows."""
    full, rest = divmod(in_giant, 64)
    total = int(kernels.row_popcounts(np.ascontiguousarray(rows[:, :full])).sum()) if full else 0
    if rest:
        mask = np.uint64((1 << rest) - 1)
        total += int(kernels.row_popcounts(np.ascontiguousarray(rows[:, full : full + 1] & mask)).sum())
    return total


def _sampled(graph, op, g, kind, k, seed, max_memory, progress) -> PathLengths:
    n = graph.n
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2,)))
    uniform = np.sort(rng.choice(n, size=k, replace=False))  # new labels: 0..g-1 are the giant component
    in_giant = uniform[uniform < g]
    extra = max(0, min(k, g) - in_giant.size)  # top up so that K sources lie in the giant component
    if extra:
        pool = np.setdiff1d(np.arange(g), in_giant, assume_unique=True)
        in_giant = np.sort(np.concatenate([in_giant, rng.choice(pool, size=extra, replace=False)]))
    seeds = np.concatenate([in_giant, uniform])
    n_words = min(words_per_slab(n, seeds.size, max_memory), -(-seeds.size // 64))
    if 64 * n_words < seeds.size:
        raise MemoryError(f"max_memory: {seeds.size} sampled sources do not fit one slab; use fewer sources")
    bits = np.empty((n, n_words), dtype=np.uint64)
    _seed(bits, seeds)
    m = in_giant.size
    reached_giant = [np.ones(m, dtype=np.int64)]
    reached_all = np.ones(uniform.size, dtype=np.int64)
    bar = tqdm(unit="round", desc="path lengths (sampled)", disable=_quiet(progress), leave=False)
    for state in _rounds(op, bits, n):
        per_source = kernels.column_popcounts(np.ascontiguousarray(state[:g]))[:m]
        all_rows = kernels.column_popcounts(state)[m : m + uniform.size]
        done = np.array_equal(per_source, reached_giant[-1]) and np.array_equal(all_rows, reached_all)
        reached_giant.append(per_source)
        reached_all = all_rows
        bar.update(1)
        if done:
            break
    bar.close()
    reach = np.vstack(reached_giant)
    new = np.diff(reach, axis=0)  # new[d - 1, s]: giant nodes at distance d from source s
    d = np.arange(1, new.shape[0] + 1)
    per_source_mean = (d @ new) / np.maximum(new.sum(axis=0), 1)
    pairs = np.concatenate([[0], new.sum(axis=1)])
    last = int(np.flatnonzero(pairs)[-1]) if pairs.any() else 0
    mean = float(per_source_mean.mean()) if m else 0.0
    ci = None
    if m >= 2:
        se = per_source_mean.std(ddof=1) / math.sqrt(m) * math.sqrt(max(0.0, (g - m) / max(g - 1, 1)))
        ci = (mean - 1.96 * se, mean + 1.96 * se)
    unreachable = 1.0 - float((reached_all - 1).sum()) / (uniform.size * (n - 1)) if n > 1 else 0.0
    return PathLengths(mean, pairs[: last + 1], last, "sampled", m, kind, g, unreachable, graph.directed, ci)
