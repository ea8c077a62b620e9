"""A static graph in compressed sparse row form: the input of every path, clustering and small-world measure."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp


def _int_array(name: str, value) -> np.ndarray:
    """``value`` as a 1-D int64 array; ``ValueError`` naming ``name`` when it is not a 1-D array of integers."""
    array = np.asarray(value)
    if array.ndim != 1 or not (array.dtype.kind in "iu" or (array.size == 0 and array.dtype.kind == "f")):
        raise ValueError(f"{name}: expected a 1-D array of integers, got {array.dtype} with shape {array.shape}")
    if array.dtype.kind == "u" and array.size and array.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name}: values beyond the int64 range")
    return np.ascontiguousarray(array, dtype=np.int64)


@dataclass(frozen=True)
class Graph:
    """``n`` nodes; out-neighbours of ``u`` are ``indices[indptr[u]:indptr[u+1]]`` (sorted, no duplicates, no
    self-loops). ``directed=False`` graphs store every edge in both directions."""

    n: int
    indptr: np.ndarray = field(repr=False)
    indices: np.ndarray = field(repr=False)
    directed: bool = True

    def __post_init__(self) -> None:
        """Check what every measure relies on (``from_edges`` guarantees it): ``ValueError`` naming the field.

        ``n >= 1``; ``indptr`` holds ``n + 1`` non-decreasing integers from 0 to ``len(indices)``; every row of
        ``indices`` is strictly increasing (sorted, no duplicates) within ``0..n-1`` and holds no self-loop; an
        undirected graph stores every edge in both directions. The arrays are stored as int64. O(m) work, plus a
        transpose (O(m + n)) for undirected graphs."""
        n = self.n
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"n: expected an integer >= 1, got {n!r}")
        if not isinstance(self.directed, bool | np.bool_):
            raise ValueError(f"directed: expected a bool, got {self.directed!r}")
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
        """Edges ``sources[k] -> targets[k]``; duplicates and self-loops are dropped, undirected edges mirrored."""
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"n: expected an integer >= 1, got {n!r}")
        src = np.asarray(sources, dtype=np.int64).ravel()
        dst = np.asarray(targets, dtype=np.int64).ravel()
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
        """From a square sparse (or dense) adjacency matrix: entry ``[u, v] != 0`` is the edge ``u -> v``."""
        coo = sp.coo_array(matrix)
        if coo.shape[0] != coo.shape[1]:
            raise ValueError(f"matrix: expected a square adjacency matrix, got shape {coo.shape}")
        nonzero = coo.data != 0
        return cls.from_edges(coo.shape[0], coo.row[nonzero], coo.col[nonzero], directed)

    @classmethod
    def from_networkx(cls, graph) -> Graph:
        """From a networkx (Di)Graph; nodes are numbered in ``list(graph.nodes)`` order."""
        index = {node: i for i, node in enumerate(graph.nodes)}
        edges = np.array([(index[u], index[v]) for u, v in graph.edges], dtype=np.int64).reshape(-1, 2)
        return cls.from_edges(len(index), edges[:, 0], edges[:, 1], graph.is_directed())

    @property
    def edges(self) -> int:
        """Number of edges (an undirected edge counts once)."""
        return int(self.indices.size if self.directed else self.indices.size // 2)

    @property
    def out_degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    @property
    def mean_degree(self) -> float:
        """``<k>``: mean out-degree (directed) or mean degree (undirected)."""
        return self.indices.size / self.n

    def to_scipy(self) -> sp.csr_array:
        return sp.csr_array((np.ones(self.indices.size, dtype=bool), self.indices, self.indptr), shape=(self.n, self.n))

    def reverse(self) -> Graph:
        """Every edge reversed (in-neighbour lists as CSR)."""
        if not self.directed:
            return self
        mat = self.to_scipy().T.tocsr()
        mat.sort_indices()
        return Graph._trusted(self.n, mat.indptr.astype(np.int64), mat.indices.astype(np.int64), True)

    def undirected(self) -> Graph:
        """The underlying undirected graph (``u - v`` if ``u -> v`` or ``v -> u``)."""
        if not self.directed:
            return self
        rows = np.repeat(np.arange(self.n, dtype=np.int64), self.out_degree)
        return Graph.from_edges(self.n, rows, self.indices, directed=False)

    def subgraph(self, nodes: np.ndarray) -> Graph:
        """The graph induced by ``nodes`` (renumbered ``0..len(nodes)-1`` in the given order)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        mat = self.to_scipy()[nodes][:, nodes]
        coo = sp.coo_array(mat)
        return Graph.from_edges(nodes.size, coo.row, coo.col, True if self.directed else False)

    def to_networkx(self):
        import networkx as nx

        g = nx.DiGraph() if self.directed else nx.Graph()
        g.add_nodes_from(range(self.n))
        rows = np.repeat(np.arange(self.n), self.out_degree)
        g.add_edges_from(zip(rows.tolist(), self.indices.tolist(), strict=True))
        return g
