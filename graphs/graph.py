"""A static graph in compressed sparse row form: the input of every path, clustering and small-world measure.

The layout is scipy's CSR (and networkx's convention for directed graphs: an edge ``u -> v`` is stored in ``u``'s
row); undirected graphs store each edge in both rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .validation import check_bool, check_int


def _int_array(name: str, value) -> np.ndarray:
    """``value`` as a 1-D int64 array; ``ValueError`` naming ``name`` when it is not one."""
    array = np.asarray(value)
    if array.ndim != 1 or not (array.dtype.kind in "iu" or (array.size == 0 and array.dtype.kind == "f")):
        raise ValueError(f"{name}: expected a 1-D array of integers, got {array.dtype} with shape {array.shape}")
    if array.dtype.kind == "u" and array.size and array.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name}: values beyond the int64 range")
    return np.ascontiguousarray(array, dtype=np.int64)


@dataclass(frozen=True)
class Graph:
    """A static graph on nodes ``0..n-1`` in compressed sparse row (CSR) form.

    The out-neighbours of ``u`` are ``indices[indptr[u]:indptr[u+1]]``: sorted, without duplicates or self-loops.
    An undirected graph (``directed=False``) stores every edge in both directions. Build one with
    :meth:`from_edges`, :meth:`from_scipy` or :meth:`from_networkx`; the constructor checks arrays given directly.

    Parameters
    ----------
    n : int
        Number of nodes, at least 1.
    indptr : array_like of int, shape (n + 1,)
        Row offsets, non-decreasing from 0 to ``len(indices)``.
    indices : array_like of int
        Concatenated neighbour rows, each strictly increasing within ``0..n-1``, no self-loops.
    directed : bool, optional
        Whether edges have a direction (default ``True``).

    Attributes
    ----------
    edges : int
        Number of edges (an undirected edge counts once).
    out_degree : numpy.ndarray
        Out-degree of every node (the degree, when undirected).
    mean_degree : float
        Mean out-degree ``<k>`` (the mean degree, when undirected).

    Raises
    ------
    TypeError
        If ``n`` is not an integer or ``directed`` not a bool.
    ValueError
        Naming the field (``n``, ``indptr`` or ``indices``) whose value breaks the layout above: a row unsorted
        or with a duplicate, a self-loop, an index out of range, or an undirected graph missing a mirror edge.

    References
    ----------
    - A. Hagberg, D. Schult and P. Swart, "Exploring network structure, dynamics, and function using
      NetworkX", Proc. SciPy 2008, 11-15 (the directed/undirected conventions followed here).

    Examples
    --------
    >>> g = Graph(3, [0, 1, 2, 2], [1, 2])
    >>> g.edges, g.out_degree.tolist(), g.directed
    (2, [1, 1, 0], True)
    >>> Graph(2, [0, 1, 1], [0])
    Traceback (most recent call last):
    ...
    ValueError: indices: self-loops are not allowed (from_edges drops them)
    """

    n: int
    indptr: np.ndarray = field(repr=False)
    indices: np.ndarray = field(repr=False)
    directed: bool = True

    def __post_init__(self) -> None:
        """Check the CSR layout every measure relies on (O(m), plus a transpose for undirected graphs)."""
        n = check_int("n", self.n, 1)
        check_bool("directed", self.directed)
        indptr = _int_array("indptr", self.indptr)
        indices = _int_array("indices", self.indices)
        if indptr.size != n + 1:
            raise ValueError(f"indptr: expected n + 1 = {n + 1} entries, got {indptr.size}")
        if indptr[0] != 0 or indptr[-1] != indices.size:
            raise ValueError(f"indptr: expected to run from 0 to len(indices) = {indices.size}")
        degree = np.diff(indptr)
        if degree.size and degree.min() < 0:
            raise ValueError("indptr: expected non-decreasing row offsets")
        if indices.size:
            if indices.min() < 0 or indices.max() >= n:
                raise ValueError(f"indices: node indices must lie in 0..{n - 1}")
            rows = np.repeat(np.arange(n, dtype=np.int64), degree)
            if np.any(indices == rows):
                raise ValueError("indices: self-loops are not allowed (from_edges drops them)")
            same_row = rows[1:] == rows[:-1]
            if np.any(same_row & (indices[1:] <= indices[:-1])):
                raise ValueError("indices: every row must be sorted without duplicates (use Graph.from_edges)")
        object.__setattr__(self, "n", int(n))
        object.__setattr__(self, "indptr", indptr)
        object.__setattr__(self, "indices", indices)
        object.__setattr__(self, "directed", bool(self.directed))
        if not self.directed and indices.size:
            mirror = self.to_scipy().T.tocsr()
            mirror.sort_indices()
            if not (np.array_equal(mirror.indptr, indptr) and np.array_equal(mirror.indices, indices)):
                raise ValueError("indices: an undirected graph must store every edge in both directions")

    @classmethod
    def _trusted(cls, n: int, indptr: np.ndarray, indices: np.ndarray, directed: bool) -> Graph:
        """A graph from arrays already known to be valid (built here): skips the checks of ``__post_init__``."""
        graph = object.__new__(cls)
        for name, value in (("n", int(n)), ("indptr", indptr), ("indices", indices), ("directed", bool(directed))):
            object.__setattr__(graph, name, value)
        return graph

    @classmethod
    def from_edges(cls, n: int, sources, targets, directed: bool = True) -> Graph:
        """Build a graph from the edges ``sources[k] -> targets[k]``.

        Duplicate edges and self-loops are dropped; undirected edges are stored in both directions.

        Parameters
        ----------
        n : int
            Number of nodes, at least 1.
        sources, targets : array_like of int
            End points of the edges, in ``0..n-1``, of equal length.
        directed : bool, optional
            Whether edges have a direction (default ``True``).

        Returns
        -------
        Graph

        Raises
        ------
        TypeError
            If ``n`` is not an integer, ``sources`` or ``targets`` does not hold integers, or ``directed`` is not a
            bool.
        ValueError
            If ``n < 1``, the two arrays differ in length or a node index lies outside ``0..n-1``.

        Examples
        --------
        >>> g = Graph.from_edges(3, [0, 1, 1, 2], [1, 2, 2, 2], directed=False)
        >>> g.edges, g.indices.tolist()
        (2, [1, 0, 2, 1])
        """
        n = check_int("n", n, 1)
        directed = check_bool("directed", directed)
        src, dst = np.asarray(sources), np.asarray(targets)
        for name, arr in (("sources", src), ("targets", dst)):
            if arr.size and not (np.issubdtype(arr.dtype, np.integer) and arr.dtype != bool):
                raise TypeError(f"{name}: expected integer node indices, got a {arr.dtype} array")
        src, dst = src.astype(np.int64).ravel(), dst.astype(np.int64).ravel()
        if src.shape != dst.shape:
            raise ValueError(f"edges: {src.size} sources but {dst.size} targets")
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise ValueError(f"edges: node indices must lie in 0..{n - 1}")
        keep = src != dst
        src, dst = src[keep], dst[keep]
        if not directed:
            src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        mat = sp.csr_array((np.ones(src.size, dtype=bool), (src, dst)), shape=(n, n))
        mat.sum_duplicates()
        mat.sort_indices()
        return cls._trusted(n, mat.indptr.astype(np.int64), mat.indices.astype(np.int64), directed)

    @classmethod
    def from_scipy(cls, matrix, directed: bool = True) -> Graph:
        """Build a graph from a square adjacency matrix: entry ``[u, v] != 0`` is the edge ``u -> v``.

        Parameters
        ----------
        matrix : scipy.sparse array or matrix, or array_like
            Square adjacency matrix (sparse or dense); the diagonal is ignored.
        directed : bool, optional
            Whether edges have a direction (default ``True``); an undirected graph takes ``u - v`` from either
            ``[u, v]`` or ``[v, u]``.

        Returns
        -------
        Graph

        Raises
        ------
        TypeError
            If ``matrix`` is not a sparse or numeric array, or ``directed`` is not a bool.
        ValueError
            If ``matrix`` is not a square 2-d matrix.

        Examples
        --------
        >>> import numpy as np
        >>> Graph.from_scipy(np.array([[0, 1], [0, 0]])).edges
        1
        """
        directed = check_bool("directed", directed)
        if not sp.issparse(matrix):
            dense = np.asarray(matrix)
            if dense.dtype.kind not in "biuf":
                raise TypeError(f"matrix: expected a sparse or numeric adjacency matrix, got {type(matrix).__name__}")
            if dense.ndim != 2:
                raise ValueError(f"matrix: expected a square 2-d adjacency matrix, got shape {dense.shape}")
            matrix = dense
        coo = sp.coo_array(matrix)
        if coo.shape[0] != coo.shape[1]:
            raise ValueError(f"matrix: expected a square adjacency matrix, got shape {coo.shape}")
        nonzero = coo.data != 0
        return cls.from_edges(coo.shape[0], coo.row[nonzero], coo.col[nonzero], directed)

    @classmethod
    def from_networkx(cls, graph) -> Graph:
        """Build a graph from a networkx ``Graph`` or ``DiGraph``.

        Parameters
        ----------
        graph : networkx.Graph or networkx.DiGraph
            Nodes are numbered ``0..n-1`` in ``list(graph.nodes)`` order; self-loops are dropped.

        Returns
        -------
        Graph
            Directed if and only if ``graph.is_directed()``.

        Examples
        --------
        >>> import networkx as nx
        >>> Graph.from_networkx(nx.cycle_graph(4)).edges
        4
        """
        index = {node: i for i, node in enumerate(graph.nodes)}
        edges = np.array([(index[u], index[v]) for u, v in graph.edges], dtype=np.int64).reshape(-1, 2)
        return cls.from_edges(len(index), edges[:, 0], edges[:, 1], graph.is_directed())

    @property
    def edges(self) -> int:
        """Number of edges (an undirected edge counts once)."""
        return int(self.indices.size if self.directed else self.indices.size // 2)

    @property
    def out_degree(self) -> np.ndarray:
        """Out-degree of every node (the degree, when undirected), as int64."""
        return np.diff(self.indptr)

    @property
    def mean_degree(self) -> float:
        """``<k>``: mean out-degree (directed) or mean degree (undirected)."""
        return self.indices.size / self.n

    def to_scipy(self) -> sp.csr_array:
        """Return the boolean adjacency matrix as a ``scipy.sparse.csr_array`` (shares ``indptr``/``indices``).

        Examples
        --------
        >>> Graph.from_edges(2, [0], [1]).to_scipy().toarray().tolist()
        [[False, True], [False, False]]
        """
        return sp.csr_array((np.ones(self.indices.size, dtype=bool), self.indices, self.indptr), shape=(self.n, self.n))

    def reverse(self) -> Graph:
        """Return the graph with every edge reversed (its rows are the in-neighbour lists).

        An undirected graph is returned unchanged.

        Examples
        --------
        >>> Graph.from_edges(3, [0, 0], [1, 2]).reverse().out_degree.tolist()
        [0, 1, 1]
        """
        if not self.directed:
            return self
        mat = self.to_scipy().T.tocsr()
        mat.sort_indices()
        return Graph._trusted(self.n, mat.indptr.astype(np.int64), mat.indices.astype(np.int64), True)

    def undirected(self) -> Graph:
        """Return the underlying undirected graph: ``u - v`` if ``u -> v`` or ``v -> u``.

        Examples
        --------
        >>> Graph.from_edges(2, [0, 1], [1, 0]).undirected().edges
        1
        """
        if not self.directed:
            return self
        rows = np.repeat(np.arange(self.n, dtype=np.int64), self.out_degree)
        return Graph.from_edges(self.n, rows, self.indices, directed=False)

    def subgraph(self, nodes: np.ndarray) -> Graph:
        """Return the subgraph induced by ``nodes``, renumbered ``0..len(nodes)-1`` in the given order.

        Parameters
        ----------
        nodes : array_like of int
            Distinct node indices.

        Returns
        -------
        Graph
            Directed if this graph is.

        Examples
        --------
        >>> Graph.from_edges(4, [0, 1, 2], [1, 2, 3]).subgraph([1, 2]).edges
        1
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        mat = self.to_scipy()[nodes][:, nodes]
        coo = sp.coo_array(mat)
        return Graph.from_edges(nodes.size, coo.row, coo.col, True if self.directed else False)

    def to_networkx(self):
        """Return the graph as a ``networkx.DiGraph`` (directed) or ``networkx.Graph``, nodes ``0..n-1``.

        Examples
        --------
        >>> Graph.from_edges(3, [0, 1], [1, 2], directed=False).to_networkx().number_of_edges()
        2
        """
        import networkx as nx

        g = nx.DiGraph() if self.directed else nx.Graph()
        g.add_nodes_from(range(self.n))
        rows = np.repeat(np.arange(self.n), self.out_degree)
        g.add_edges_from(zip(rows.tolist(), self.indices.tolist(), strict=True))
        return g
