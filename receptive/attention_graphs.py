"""Attention patterns as static graphs, for the path-length, clustering and small-world measures of :mod:`graphs`.

A layer of a pattern is the graph with an edge ``j -> i`` (key to query) when query ``i`` attends to key ``j``:
the direction information flows in. Self-loops (a query attending to itself, which also stands for the residual
path) are dropped, as the measures of :mod:`graphs` expect. ``directed=False`` gives the underlying undirected
graph (``i - j`` when either attends to the other), the object classical small-world measures are defined on.

Why the union matters: a non-causal SA layer with permutation ``perm`` (``perm[p]`` = original position at permuted
position ``p``) is the bidirectional SWA lattice with node ``x`` renamed ``perm[x]`` (query ``perm[p]`` attends to
key ``perm[x]`` exactly when SWA's query ``p`` attends to key ``x``). A relabelling is a graph isomorphism, so one
SA layer has exactly the clustering, path lengths and degree sequence of the SWA lattice: high clustering and
paths of length ``~ n / w``, no small world. (For causal SA with odd ``w`` the same holds for the underlying
undirected graph, since the causal mask keeps exactly one direction of every pair in the symmetric band.) The short
paths of the small-world regime appear only when different orders meet: in the union of SA with SWA (SA+SWA,
whose lattice is the SWA layer and whose shortcuts are the SA edges, as in Watts & Strogatz 1998),
in the union of SA layers with different permutations (:func:`union_graph`), or through depth (paths across layers,
measured by the receptive-field engine instead).

References
----------
.. [1] D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442 (1998).
.. [2] L. Jin and Y. Sui, arXiv:2604.00754 (2026) (the stochastic-attention pattern ``sa``).
"""

from __future__ import annotations

import numpy as np

from graphs.graph import Graph
from graphs.memory import check_memory

from .patterns import make_pattern
from .validation import check_bool, check_int


def _pattern(name, n, w, causal, circular, seed):
    """The checked pattern ``name`` of :func:`receptive.make_pattern`."""
    if not isinstance(name, str):
        raise TypeError(f"name: expected a pattern name (a string), got {name!r} ({type(name).__name__})")
    seed = check_int("seed", seed, 0)
    return make_pattern(name, n, w, causal=causal, circular=circular, seed=seed)


def _key_query(pattern, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(key, query) arrays of layer ``layer``: the edges ``key -> query`` (self-loops included)."""
    adj = pattern.adjacency(layer).tocoo()
    return adj.col.astype(np.int64), adj.row.astype(np.int64)


def attention_graph(
    name: str,
    n: int,
    w: int,
    *,
    layer: int = 1,
    causal: bool = False,
    circular: bool = False,
    seed: int = 0,
    directed: bool = True,
) -> Graph:
    """Return one layer of an attention pattern as a static graph.

    The edge ``j -> i`` is present when query ``i`` attends to key ``j`` in layer ``layer``; self-loops are removed.
    Bidirectional SWA gives every query ``w - 1`` keys besides itself (fewer within ``w/2`` of a truncated edge), so
    ``<k> ~ w - 1``; a non-causal SA layer is that lattice relabelled by ``layer_permutation(n, seed, layer)`` (see
    the module docstring).

    Parameters
    ----------
    name : str
        A pattern name set by a window (:func:`receptive.make_pattern`: ``"swa"``, ``"sa"``, ``"sa+swa"``, ``"full"``,
        ...).
    n : int
        Sequence length (nodes).
    w : int
        Window size.
    layer : int, optional
        1-based layer (SWA's layers are all alike).
    causal, circular : bool, optional
        Mask conventions of :func:`receptive.make_pattern`.
    seed : int, optional
        Seed of the pattern's permutations, ``>= 0``.
    directed : bool, optional
        ``False``: the underlying undirected graph.

    Returns
    -------
    graphs.Graph

    Raises
    ------
    TypeError
        If ``name`` is not a string, ``layer`` or ``seed`` not an integer, or a flag not a bool.
    ValueError
        If ``name`` is not a pattern, ``layer < 1``, ``seed < 0``, or ``n`` and ``w`` do not make a pattern.

    References
    ----------
    .. [1] D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
       (1998).

    Examples
    --------
    >>> g = attention_graph("swa", 16, 5, directed=False)
    >>> g.edges, g.out_degree.tolist()[:4]
    (29, [2, 3, 4, 4])
    """
    directed = check_bool("directed", directed)
    pattern = _pattern(name, n, w, causal, circular, seed)
    layer = check_int("layer", layer, 1)
    key, query = _key_query(pattern, layer)
    return Graph.from_edges(pattern.n, key, query, directed=directed)


def check_union_memory(name: str, n: int, w: int, layers: int) -> None:
    """Refuse, before any edge is drawn, a union of ``layers`` distinct layers whose edges would not fit
    :data:`graphs.memory.DEFAULT_MAX_MEMORY`: the key and query arrays of every layer and their concatenation, four
    int64 arrays of all the layers' edges at the peak.

    Parameters
    ----------
    name : str
        The pattern (``"sa+swa"`` has two edge sets a layer, ``"full"`` ``n`` keys a query).
    n, w, layers : int
        Positions, keys per query, distinct layers joined.

    Raises
    ------
    MemoryError
        Naming ``layers`` (``n`` for one layer), with the estimate and the limit.

    Examples
    --------
    >>> check_union_memory("sa", 4096, 16, 8)
    >>> check_union_memory("sa", 4096, 16, 10**7)
    Traceback (most recent call last):
    ...
    MemoryError: layers: 10000000 layers x 65536 edges of sa need about 19.07 TiB, more than the limit of 3.00 GiB
    """
    per_layer = n * (n if name == "full" else min(w, n) * (2 if name == "sa+swa" else 1))
    name_at_fault = "layers" if layers > 1 else "n"  # one layer: only a smaller n helps
    check_memory(name_at_fault, layers * per_layer * 32, f"{layers} layers x {per_layer} edges of {name}")


def union_graph(
    name: str,
    n: int,
    w: int,
    layers: int,
    *,
    causal: bool = False,
    circular: bool = False,
    seed: int = 0,
    directed: bool = True,
) -> Graph:
    """Return the union of the edge sets of layers ``1..layers`` of an attention pattern.

    The edge ``j -> i`` is present when query ``i`` attends to key ``j`` in some layer ``l <= layers`` (self-loops
    removed). For SA this superposes ``layers`` relabelled lattices, for SA+SWA it adds ``layers`` SA shortcut sets
    to one SWA lattice, the construction of a Watts-Strogatz small world; SWA's union is its single layer.

    Parameters
    ----------
    name : str
        A pattern name set by a window (:func:`receptive.make_pattern`).
    n : int
        Sequence length (nodes).
    w : int
        Window size.
    layers : int
        Number of layers whose edges are joined, ``>= 1``.
    causal, circular : bool, optional
        Mask conventions of :func:`receptive.make_pattern`.
    seed : int, optional
        Seed of the pattern's permutations, ``>= 0``.
    directed : bool, optional
        ``False``: the underlying undirected graph.

    Returns
    -------
    graphs.Graph

    Raises
    ------
    TypeError
        If ``name`` is not a string, ``layers`` or ``seed`` not an integer, or a flag not a bool.
    ValueError
        If ``name`` is not a pattern, ``layers < 1``, ``seed < 0``, or ``n`` and ``w`` do not make a pattern.
    MemoryError
        If the edges of ``layers`` layers would not fit :data:`graphs.memory.DEFAULT_MAX_MEMORY` (before any is
        drawn).

    References
    ----------
    .. [1] D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
       (1998).

    Examples
    --------
    >>> swa = union_graph("swa", 64, 5, 3, directed=False)
    >>> mixed = union_graph("sa+swa", 64, 5, 3, directed=False)
    >>> swa.edges, mixed.edges > swa.edges
    (125, True)
    """
    directed = check_bool("directed", directed)
    pattern = _pattern(name, n, w, causal, circular, seed)
    layers = check_int("layers", layers, 1)
    distinct = 1 if name in ("swa", "full") else layers  # layers of SWA and full attention are all alike
    check_union_memory(name, pattern.n, w, distinct)
    edges = [_key_query(pattern, layer) for layer in range(1, distinct + 1)]
    key = np.concatenate([k for k, _ in edges])
    query = np.concatenate([q for _, q in edges])
    return Graph.from_edges(pattern.n, key, query, directed=directed)
